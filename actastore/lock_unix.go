//go:build unix

package actastore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive advisory lock on dir's lock file, so a second
// process opening the same store fails at once instead of interleaving its
// WAL and series files with ours. The lock goes with the process.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("store %s is in use by another process (lock %s): %w", path, path, err)
	}
	return f, nil
}
