package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// ReplayStats says what Replay read and cut.
type ReplayStats struct {
	Segments  int
	Records   int
	Bytes     int64
	TornBytes int64 // bytes of a torn record (and what followed it) cut from the last segment
	// ZeroBytes are the zero bytes after the last record of a segment
	// (preallocated space a crashed writer left), trimmed in any segment.
	ZeroBytes int64
}

// Replay calls fn for every record of every segment in dir, in order, with
// the segment index. The payload slice aliases the segment's bytes, read
// afresh for each segment and never reused: fn may keep it (the store's
// replay hands records to another goroutine).
//
// A torn tail of the last segment is truncated away (the file is shortened
// and synced) before Replay returns. A run of zero bytes to the end of any
// segment is no records, not damage: space preallocated ahead of a writer
// that crashed (a writer cuts it when it closes or leaves a segment); it is
// trimmed the same way. A damaged record anywhere else, including non-zero
// bytes after zeros, returns a *CorruptionError and stops; records before
// it were delivered. An error from fn stops the replay and is returned as
// is.
func Replay(dir string, fn func(segment int, payload []byte) error) (ReplayStats, error) {
	return replay(dir, func(path string) ([]byte, error) { return os.ReadFile(path) }, fn)
}

// ReplayMapped is Replay reading each segment through a read-only memory
// mapping (Linux; a copy elsewhere) instead of a copy into the heap: no
// page of heap to fault in per page of log. The payloads fn gets stay
// valid until release is called, which the caller does once it holds none
// of them (nothing may alias them after: on Linux the pages are unmapped).
// release is never nil.
func ReplayMapped(dir string, fn func(segment int, payload []byte) error) (st ReplayStats, release func(), err error) {
	var unmaps []func() error
	release = func() {
		for _, u := range unmaps {
			u()
		}
		unmaps = nil
	}
	st, err = replay(dir, func(path string) ([]byte, error) {
		data, unmap, err := mapFile(path)
		if err == nil {
			unmaps = append(unmaps, unmap)
		}
		return data, err
	}, fn)
	return st, release, err
}

func replay(dir string, read func(path string) ([]byte, error), fn func(segment int, payload []byte) error) (ReplayStats, error) {
	var st ReplayStats
	segs, err := Segments(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return st, nil
		}
		return st, err
	}
	for i, s := range segs {
		last := i == len(segs)-1
		path := filepath.Join(dir, SegmentName(s))
		data, err := read(path)
		if err != nil {
			return st, fmt.Errorf("wal: read segment %08d: %w", s, err)
		}
		st.Segments++
		off, recErr := scanSegment(data, func(p []byte) error {
			st.Records++
			return fn(s, p)
		})
		st.Bytes += off
		if recErr == nil {
			continue
		}
		var re *recordError
		if !errors.As(recErr, &re) {
			return st, recErr // from fn
		}
		if re.zeroTail(data) {
			st.ZeroBytes += int64(len(data)) - off
			if err := truncateFile(path, off); err != nil {
				return st, err
			}
			continue
		}
		if last && re.tornTail(data) {
			st.TornBytes = int64(len(data)) - off
			if err := truncateFile(path, off); err != nil {
				return st, err
			}
			continue
		}
		return st, &CorruptionError{Dir: dir, Segment: s, Offset: off, Err: re.err}
	}
	return st, nil
}

// recordError is a framing failure at offset off of a segment's data.
type recordError struct {
	off int64
	end int64 // where the bad record would end, if its length was sane
	err error
}

func (e *recordError) Error() string { return e.err.Error() }

// zeroTail reports whether the segment ends at e with nothing but zero
// bytes: no record starts there (a zero length is never written).
func (e *recordError) zeroTail(data []byte) bool {
	return allZero(data[e.off:])
}

// tornTail reports whether the damage at e can be an interrupted final
// append: the record runs past the end of the data, or nothing but zero
// bytes follows its start, or it is the last record and fails its checksum
// (nothing but zeros, preallocated space, follows its declared end). A
// complete record with valid-looking data after it is not torn, it is
// corruption.
func (e *recordError) tornTail(data []byte) bool {
	if errors.Is(e.err, errShort) {
		return true
	}
	if allZero(data[e.off:]) {
		return true
	}
	// A complete final record that fails its checksum: its bytes reached the
	// file only in part. A bad length with data after it is not treated so:
	// the writer never leaves a half-written header followed by more bytes.
	if errors.Is(e.err, errChecksum) && allZero(data[e.end:]) {
		return true
	}
	return e.lostPage(data)
}

// pageSize is the unit in which the kernel writes a file's pages back.
const pageSize = 4096

// minLostChunk: a record's part of a lost page shorter than this is not
// taken for one (a record's own bytes may hold a few zeros).
const minLostChunk = 64

// lostPage reports whether the damaged record at e has a page's worth of
// zeros in it: what a power loss leaves of an append that was never
// synced. The segment's space is zero-filled ahead of the writer
// (prealloc.go), and the kernel writes dirty pages back one by one in no
// order, so such an append can come back with some of its pages still
// zero and later appends' pages written. Every acknowledged record had
// every byte before it synced, so a record with a lost page, and all that
// follows it, was never acknowledged: a torn tail. Damage without such a
// page (a flipped bit in an acknowledged record) stays corruption.
func (e *recordError) lostPage(data []byte) bool {
	n := int64(len(data))
	if errors.Is(e.err, errLength) {
		// A zero length: the header's page was lost (no length of zero is
		// written). Other bad lengths are not what a lost page leaves.
		if n-e.off < 4 || binary.LittleEndian.Uint32(data[e.off:]) != 0 {
			return false
		}
		end := min(n, max(e.off+headerSize, roundUp(e.off+1)))
		return allZero(data[e.off:end])
	}
	if !errors.Is(e.err, errChecksum) {
		return false
	}
	// The pages the record is on, to the end of the one it ends in (a lost
	// page holds the record's end and the next record's start).
	limit := min(n, roundUp(e.end))
	for q := e.off &^ (pageSize - 1); q < limit; q += pageSize {
		c := data[max(q, e.off):min(q+pageSize, limit)]
		if len(c) >= minLostChunk && allZero(c) {
			return true
		}
	}
	return false
}

// roundUp rounds off up to a page boundary.
func roundUp(off int64) int64 { return (off + pageSize - 1) &^ (pageSize - 1) }

func allZero(b []byte) bool {
	return len(bytes.TrimLeft(b, "\x00")) == 0
}

// scanSegment calls fn for each record in data and returns the offset after
// the last good record, with a *recordError when the data does not end
// cleanly on a record boundary.
func scanSegment(data []byte, fn func([]byte) error) (int64, error) {
	var off int64
	n := int64(len(data))
	for off < n {
		if n-off < headerSize {
			return off, &recordError{off: off, end: n, err: errShort}
		}
		h := data[off : off+headerSize]
		length := int64(binary.LittleEndian.Uint32(h[0:4]))
		if length == 0 || length > MaxRecordSize {
			return off, &recordError{off: off, end: n, err: fmt.Errorf("%w: %d", errLength, length)}
		}
		end := off + headerSize + length
		if end > n {
			return off, &recordError{off: off, end: end, err: errShort}
		}
		payload := data[off+headerSize : end]
		crc := crc32.Update(0, castagnoli, h[0:4])
		crc = crc32.Update(crc, castagnoli, payload)
		if crc != binary.LittleEndian.Uint32(h[4:8]) {
			return off, &recordError{off: off, end: end, err: errChecksum}
		}
		if err := fn(payload); err != nil {
			return off, err
		}
		off = end
	}
	return off, nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: cut torn tail of %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("wal: cut torn tail of %s at %d: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: sync %s after cutting its tail: %w", path, err)
	}
	return nil
}

// ReadFile calls fn for each record of a framed file written whole (with a
// temporary name, synced and renamed), where any damage is an error: such a
// file is never torn.
func ReadFile(path string, fn func(payload []byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	off, err := scanSegment(data, fn)
	var re *recordError
	if errors.As(err, &re) {
		// (No zero tail is accepted: the file was written whole.)
		return &CorruptionError{Dir: filepath.Dir(path), Segment: -1, Offset: off, Err: re.err}
	}
	return err
}
