//go:build !linux

package actastore

// syncFS is unavailable: callers fsync each dirty file and directory.
func syncFS(string) (bool, error) { return false, nil }
