package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Follower reads a segment directory that another process owns, and never
// writes to it: that process may be appending to the last segment, starting
// a new one, or deleting old ones while we read. Each Read delivers only the
// records completed since the previous one, so a tool can poll cheaply.
//
// Unlike Replay, a damaged end of the last segment is not cut: it is most
// likely a record being written right now, and it is read again next time.
// Nor is a zero tail (the writer's preallocated space): the records that
// will overwrite it are read next time.
type Follower struct {
	dir  string
	offs map[int]int64 // per segment: end of the complete records delivered
}

// NewFollower follows the segments in dir. Nothing is read until Read.
func NewFollower(dir string) *Follower {
	return &Follower{dir: dir, offs: make(map[int]int64)}
}

// Read calls fn for every record completed since the last Read, in order.
// A missing directory holds no records. A segment deleted meanwhile is
// skipped: its owner deletes a segment only once what it held is kept
// elsewhere (series files, the catalog), which callers read afterwards.
// Damage before the end of the last segment is a *CorruptionError.
func (f *Follower) Read(fn func(segment int, payload []byte) error) error {
	segs, err := Segments(f.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	listed := make(map[int]bool, len(segs))
	for i, s := range segs {
		listed[s] = true
		off := f.offs[s]
		data, from, err := readFrom(filepath.Join(f.dir, SegmentName(s)), off)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wal: read segment %08d: %w", s, err)
		}
		n, recErr := scanSegment(data, func(p []byte) error { return fn(s, p) })
		f.offs[s] = from + n
		if recErr == nil {
			continue
		}
		var re *recordError
		if !errors.As(recErr, &re) {
			return recErr // from fn
		}
		// Zeros to the end are space preallocated ahead of the writer
		// (or left by one that crashed): no records yet, in any segment.
		if re.zeroTail(data) || i == len(segs)-1 && re.tornTail(data) {
			continue
		}
		return &CorruptionError{Dir: f.dir, Segment: s, Offset: from + n, Err: re.err}
	}
	for s := range f.offs {
		if !listed[s] {
			delete(f.offs, s)
		}
	}
	return nil
}

// readFrom returns the bytes of path from off on, and the offset they start
// at: 0 instead of off if the file is now shorter than off (it was replaced
// by one with the same name, so it is read again whole).
func readFrom(path string, off int64) ([]byte, int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, 0, err
	}
	if fi.Size() < off {
		off = 0
	}
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return nil, 0, err
	}
	data, err := io.ReadAll(file)
	return data, off, err
}
