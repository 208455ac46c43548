package wal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acta-remote/acta-remote/durable"
)

// A record file is a whole file of records framed as in a segment,
// written once and made visible by rename after an fsync (the store's
// head checkpoint); ReadFile reads it back, where any framing failure is
// corruption: such a file is never torn.

// FileWriter writes one record file durably: into path+".tmp", made
// visible at path by Commit (fsync, rename, directory fsync). A crash
// leaves either no file at path or the whole one, and maybe the .tmp,
// which the owner of the directory removes.
type FileWriter struct {
	f         *os.File
	w         *bufio.Writer
	path, tmp string
	hdr       []byte
	size      int64
}

// CreateFile starts the record file at path.
func CreateFile(path string) (*FileWriter, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", tmp, err)
	}
	return &FileWriter{f: f, w: bufio.NewWriterSize(f, 256<<10), path: path, tmp: tmp}, nil
}

// Append adds one record (1 byte to MaxRecordSize).
func (w *FileWriter) Append(payload []byte) error {
	w.hdr = AppendRecord(w.hdr[:0], payload)
	if _, err := w.w.Write(w.hdr); err != nil {
		return fmt.Errorf("wal: write %s: %w", w.tmp, err)
	}
	w.size += int64(len(w.hdr))
	return nil
}

// Size is the bytes appended so far, framing included.
func (w *FileWriter) Size() int64 { return w.size }

// Commit makes the file durable at path and returns its size in bytes.
// On error neither the temporary file nor path is left.
func (w *FileWriter) Commit() (int64, error) {
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, w.path)
	}
	if err != nil {
		os.Remove(w.tmp)
		return 0, fmt.Errorf("wal: write %s: %w", w.path, err)
	}
	if err := durable.SyncDir(filepath.Dir(w.path)); err != nil {
		// Whether the rename is durable is unknown: the file must not
		// outlive an error its writer acts on.
		os.Remove(w.path)
		return 0, err
	}
	return w.size, nil
}

// Abort removes the unfinished file.
func (w *FileWriter) Abort() {
	w.f.Close()
	os.Remove(w.tmp)
}

// Mapping is a record file's bytes mapped read-only (mmap on Linux, read
// whole elsewhere): no copy into the heap, its pages those of the page
// cache. The bytes, and every payload Records gives, stay valid until
// Unmap.
type Mapping struct {
	path  string
	data  []byte
	unmap func() error
}

// Map maps the record file at path.
func Map(path string) (*Mapping, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("wal: map %s: %w", path, err)
	}
	return &Mapping{path: path, data: data, unmap: unmap}, nil
}

// Size is the file's size in bytes.
func (m *Mapping) Size() int64 { return int64(len(m.data)) }

// Records calls fn for every record, in order, as ReadFile does: a
// damaged or cut record is a *CorruptionError.
func (m *Mapping) Records(fn func(payload []byte) error) error {
	off, err := scanSegment(m.data, fn)
	var re *recordError
	if errors.As(err, &re) {
		return &CorruptionError{Dir: m.path, Segment: -1, Offset: off, Err: re.err}
	}
	return err
}

// Unmap releases the bytes; nothing may use them after.
func (m *Mapping) Unmap() error {
	m.data = nil
	return m.unmap()
}
