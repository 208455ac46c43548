// Package durable is the handful of file-system calls that make data
// survive a crash: fsync of a directory (so a create, rename or remove in it
// is durable), of a file by name, of a whole file system (syncfs), and the
// atomic replacement of a small file (temp name, fsync, rename, fsync of the
// directory). Every package of the project uses these, never its own copy.
package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir fsyncs a directory, making creates, renames and removals in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}

// SyncPath fsyncs a file or directory by name; fsync through a new
// descriptor flushes the inode's dirty data written through any other. A
// path that no longer exists has nothing to make durable (nil).
func SyncPath(p string) error {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot sync %s: %w", p, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", p, err)
	}
	return nil
}

// WriteFile replaces path with data atomically and durably: data goes to
// path+".tmp" (fsynced), which is renamed over path, and the directory is
// fsynced. A crash leaves the old file or the new one, and at worst a
// stray .tmp for the caller to sweep.
func WriteFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}
