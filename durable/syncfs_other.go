//go:build !linux

package durable

// SyncFS is unavailable here: it returns false, and callers fsync each
// dirty file and directory instead.
func SyncFS(string) (bool, error) { return false, nil }
