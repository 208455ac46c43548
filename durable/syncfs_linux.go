//go:build linux

package durable

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes every written byte and directory entry of the file system
// holding dir durable with one syncfs(2). Before WAL truncation this
// replaces one fsync per series file flushed since the last truncation
// (thousands) with a single call; since Linux 5.8 syncfs reports writeback
// errors, so a failure is seen.
func SyncFS(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return false, fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return true, nil
}
