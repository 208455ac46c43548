//go:build !linux

package durable

import "os"

// Fdatasync is fsync where fdatasync(2) is not available.
func Fdatasync(f *os.File) error { return f.Sync() }
