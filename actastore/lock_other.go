//go:build !unix

package actastore

import "os"

// lockDir opens the lock file; without flock the store relies on being the
// only process using its directory.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
