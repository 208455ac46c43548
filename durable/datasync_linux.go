//go:build linux

package durable

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Fdatasync makes f's data durable with fdatasync(2): like fsync, but it
// skips metadata not needed to read the data back (mtime). It still
// flushes a size change and block allocation, so it is cheaper than fsync
// only where the file's size and blocks are already durable, e.g. writes
// into zero-filled, synced space (package wal's preallocation).
//
// The call runs under the descriptor's reference (SyscallConn), as f.Sync
// does, so a concurrent Close waits instead of freeing the number for
// another file to reuse; on a closed file it returns os.ErrClosed.
func Fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fdatasync(int(fd)) }); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), serr)
	}
	return nil
}
