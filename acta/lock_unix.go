//go:build unix

package acta

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes the cooperative exclusive writer lock (flock) without
// waiting. The lock is a convention among acta writers (spec §14 defers
// locking), not a format rule; readers never take it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s", ErrWriterLocked, f.Name())
	}
	if err != nil {
		return fmt.Errorf("acta: lock %s: %w", f.Name(), err)
	}
	return nil
}

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
