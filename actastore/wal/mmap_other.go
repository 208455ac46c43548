//go:build !linux

package wal

import "os"

// mapFile reads the file at path whole (mmap is used on Linux only).
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
