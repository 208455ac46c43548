// Package wal is a segmented write-ahead log of opaque records. It knows
// nothing about what a record holds: callers encode and decode payloads.
//
// A log is a directory of segment files named by an 8-digit decimal index
// (00000000, 00000001, ...). Each segment is a sequence of framed records
// (the layout is drawn in docs/format/wal.md and frozen):
//
//	┌───────────────┬───────────────┬──────────────────────┐
//	│ length uint32 │ crc32c uint32 │ payload (length B)   │
//	└───────────────┴───────────────┴──────────────────────┘
//
// Both integers are little endian. The CRC-32C (Castagnoli) covers the four
// length bytes followed by the payload, so a damaged length is caught too.
// A zero length is never written: a run of zero bytes to the end of a
// segment is no records (space preallocated ahead of the writer, see
// prealloc.go, or never-written pages after a crash), and Replay trims it.
//
// Writers append whole batches of records with one write(2) and make them
// durable with Sync, which commits groups: while one caller fsyncs, later
// callers queue, and the next fsync covers all of them. With
// Options.Preallocate the space ahead of the writer is kept zero-filled and
// synced, so that fsync (fdatasync on Linux) writes data and no file system
// metadata (prealloc.go).
//
// Reading tells two failures apart. In the last segment, a record that is
// cut short, fails its checksum with nothing valid after it, or has a lost
// page of zeros in it (what a power loss leaves of unsynced appends) is a
// torn tail: the write that produced it was never acknowledged, so Replay
// cuts it off with everything after it. Anywhere else, a bad record is
// corruption of acknowledged data and is reported as a *CorruptionError
// naming segment and offset; Replay does not guess past it.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/acta-remote/acta-remote/durable"
)

// Wire constants. Frozen: changing them makes existing logs unreadable.
const (
	headerSize = 8 // length uint32 + crc32c uint32
	// MaxRecordSize bounds one record's payload so a damaged length cannot
	// make a reader allocate gigabytes.
	MaxRecordSize = 64 << 20
)

// castagnoli is built once: crc32 picks its hardware path by comparing table
// pointers.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptionError reports a damaged record before the tail of a log.
type CorruptionError struct {
	Dir     string
	Segment int
	Offset  int64
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in %s segment %08d at offset %d: %v", e.Dir, e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// IsCorruption reports whether err is or wraps a *CorruptionError.
func IsCorruption(err error) bool {
	var ce *CorruptionError
	return errors.As(err, &ce)
}

// ErrClosed is returned by a closed Log.
var ErrClosed = errors.New("wal: log closed")

var (
	errShort    = errors.New("record cut short")
	errChecksum = errors.New("record checksum mismatch")
	errLength   = errors.New("record length out of range")
)

// SegmentName is the file name of segment i.
func SegmentName(i int) string { return fmt.Sprintf("%08d", i) }

// Segments lists the segment indexes present in dir, ascending. Files whose
// names are not 8 decimal digits are ignored.
func Segments(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []int
	for _, e := range ents {
		n := e.Name()
		if len(n) != 8 || e.IsDir() {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 {
			continue
		}
		segs = append(segs, i)
	}
	sort.Ints(segs)
	return segs, nil
}

// AppendRecord appends one framed record to dst.
func AppendRecord(dst, payload []byte) []byte {
	if len(payload) == 0 || len(payload) > MaxRecordSize {
		panic(fmt.Sprintf("BUG: wal record of %d bytes (must be 1..%d)", len(payload), MaxRecordSize))
	}
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	crc := crc32.Update(0, castagnoli, h[0:4])
	crc = crc32.Update(crc, castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:8], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// Pos is a position in the log: the end of some appended records. Positions
// order the way records were appended.
type Pos struct {
	Segment int
	Offset  int64
}

// Less reports whether p comes before q.
func (p Pos) Less(q Pos) bool {
	return p.Segment < q.Segment || (p.Segment == q.Segment && p.Offset < q.Offset)
}

// Options configure a Log.
type Options struct {
	// SegmentSize starts a new segment once the current one holds at least
	// this many bytes. Default 64 MiB. With Preallocate, zero-filled space
	// is prepared ahead of the writer up to this size.
	SegmentSize int64
	// Preallocate keeps zero-filled, synced space ahead of the writer
	// (prealloc.go): each Sync then writes data only (p50 about half the
	// latency of an fsync that grows the file, on ext4 here), at the cost
	// of writing every WAL byte twice. Off, appends grow the file.
	Preallocate bool
}

// Log appends records to the newest segment of a directory.
type Log struct {
	dir      string
	segSize  int64
	prealloc bool // Options.Preallocate

	mu     sync.Mutex // guards the fields below and the write offset
	f      *os.File
	seg    int
	off    int64
	closed bool
	// failed is sticky: a torn record could not be cut, so appending
	// after it would bury it mid-segment. Every later Append returns it.
	failed  error
	sizeAll int64 // bytes of records in all live segments (not zero tails)
	buf     []byte

	// Preallocation of the current segment (prealloc.go): [0, zeroEnd)
	// is written (records or zeros) and synced; while prep is non-nil a
	// goroutine zero-fills from prepFrom on, and is closed when it ends.
	zeroEnd  int64
	prep     chan struct{}
	prepFrom int64
	noPrep   bool  // a zero fill failed: none for the rest of the segment
	prepErr  error // why (tests)

	syncMu sync.Mutex // one fsync at a time; held while syncing
	synced Pos        // everything before synced is durable (guarded by mu)
}

// Open starts a new segment after the last one present in dir (creating
// dir when needed). Existing segments are left for Replay and are never
// appended to, so a torn tail from a previous run is never extended.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = 64 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, segSize: opts.SegmentSize, prealloc: opts.Preallocate}
	next := 0
	for _, s := range segs {
		if fi, err := os.Stat(filepath.Join(dir, SegmentName(s))); err == nil {
			l.sizeAll += fi.Size()
		}
		next = s + 1
	}
	if err := l.openSegment(next); err != nil {
		return nil, err
	}
	return l, nil
}

// openSegment creates segment i and makes its directory entry durable, so
// a record synced into it cannot vanish with its file name. Called with mu
// held (or before the Log is shared).
func (l *Log) openSegment(i int) error {
	path := filepath.Join(l.dir, SegmentName(i))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("wal: create segment: %w", err)
	}
	if err := durable.SyncDir(l.dir); err != nil {
		// Remove it so a retry can create it again (O_EXCL).
		f.Close()
		os.Remove(path)
		return err
	}
	l.f, l.seg, l.off = f, i, 0
	l.zeroEnd, l.noPrep, l.prepErr = 0, false, nil
	l.maybePrepLocked()
	return nil
}

// Append writes the records with one write call and returns the position
// just after them. They are in the OS but not durable until Sync(pos).
func (l *Log) Append(payloads ...[]byte) (Pos, error) {
	size := int64(0)
	for _, p := range payloads {
		size += headerSize + int64(len(p))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.closed {
			return Pos{}, ErrClosed
		}
		if l.failed != nil {
			return Pos{}, l.failed
		}
		// Never write where zeros are being written, nor rotate away
		// under a zero fill (prealloc.go).
		if l.prep != nil && (l.off >= l.segSize || l.off+size > l.prepFrom) {
			l.waitPrepLocked()
			continue
		}
		if l.off >= l.segSize {
			// The new segment's first zero fill starts: check again.
			if err := l.rotateLocked(); err != nil {
				return Pos{}, err
			}
			continue
		}
		break
	}
	l.buf = l.buf[:0]
	for _, p := range payloads {
		l.buf = AppendRecord(l.buf, p)
	}
	n, err := l.f.Write(l.buf)
	l.off += int64(n)
	l.sizeAll += int64(n)
	if err != nil {
		// A partial write (ENOSPC half way) leaves a torn record that later
		// records would follow, making it mid-segment corruption at replay.
		// Cut it, and move the file offset back too: the descriptor's offset
		// stays past the cut, and the next write would leave a hole of
		// zeros (read back as a zero-length record) before itself.
		l.off -= int64(n)
		l.sizeAll -= int64(n)
		// No zero fill starts after this: the disk is failing writes. One
		// running now writes at or beyond prepFrom, past this write, so
		// the cut cannot meet it (mu is not released before the cut:
		// another append would write after the torn bytes).
		l.noPrep, l.prepErr = true, err
		l.zeroEnd = min(l.zeroEnd, l.off)
		if terr := l.cutLocked(); terr != nil {
			l.failed = fmt.Errorf("wal: segment %08d has a torn record at offset %d that cannot be cut: %w", l.seg, l.off, terr)
			return Pos{}, errors.Join(fmt.Errorf("wal: append to segment %08d: %w", l.seg, err), l.failed)
		}
		return Pos{}, fmt.Errorf("wal: append to segment %08d: %w", l.seg, err)
	}
	if cap(l.buf) > 4<<20 {
		l.buf = nil // don't pin one huge batch's buffer
	}
	l.maybePrepLocked()
	return Pos{Segment: l.seg, Offset: l.off}, nil
}

// rotateLocked syncs and closes the current segment and opens the next. The
// old segment is synced first so "synced up to a later segment" implies every
// earlier segment is durable. It is cut to its records first (dropping the
// preallocated zeros), in the same fsync, so a segment that is not the last
// has no zero tail unless a crash left one. No zero fill may be running
// (callers wait for it).
//
// The next segment is created before the current one is closed: if the
// create fails (a full disk), the log keeps appending to the current one
// and can rotate again later, instead of holding a closed file.
func (l *Log) rotateLocked() error {
	if l.prealloc {
		if err := l.f.Truncate(l.off); err != nil {
			return fmt.Errorf("wal: cut segment %08d to its records at %d: %w", l.seg, l.off, err)
		}
		l.zeroEnd = min(l.zeroEnd, l.off)
	}
	if err := l.f.Sync(); err != nil {
		// Sticky for the reason Sync gives.
		l.failed = fmt.Errorf("wal: sync segment %08d: %w (appends refused since: a failed fsync may have lost unsynced records)", l.seg, err)
		return l.failed
	}
	old, seg, off := l.f, l.seg, l.off
	if err := l.openSegment(seg + 1); err != nil {
		return err
	}
	l.synced = Pos{Segment: seg, Offset: off}
	if err := old.Close(); err != nil {
		return fmt.Errorf("wal: close segment %08d: %w", seg, err)
	}
	return nil
}

// cutLocked shortens the current segment to l.off and moves the write
// offset there.
func (l *Log) cutLocked() error {
	if err := l.f.Truncate(l.off); err != nil {
		return err
	}
	_, err := l.f.Seek(l.off, io.SeekStart)
	return err
}

// Sync makes every record up to pos durable. Concurrent callers share
// fsyncs: a caller whose records were covered by another's fsync returns
// without one of its own.
func (l *Log) Sync(pos Pos) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if !l.synced.Less(pos) {
		l.mu.Unlock()
		return nil
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	f, end := l.f, Pos{Segment: l.seg, Offset: l.off}
	l.mu.Unlock()
	// fsync outside mu so appenders keep writing the next group meanwhile.
	// fdatasync is enough: the records' size and blocks are either durable
	// already (zero-filled space, prealloc.go) or flushed by it, and mtime
	// is not needed to read them back.
	// A rotation cannot close f under us: rotation syncs and closes only with
	// mu held, and it records synced itself, so if f was rotated away the
	// Sync error below is for a file whose data is already durable.
	if err := durable.Fdatasync(f); err != nil {
		l.mu.Lock()
		covered := !l.synced.Less(pos)
		l.mu.Unlock()
		if covered {
			return nil
		}
		// After a failed fsync the kernel may have dropped the dirty pages
		// and marked them clean, so a later fsync would succeed over a hole
		// in the log and acknowledge records that follow lost ones. Refuse
		// every later append instead (until a restart replays what is
		// really on disk).
		serr := fmt.Errorf("wal: sync segment %08d: %w", end.Segment, err)
		l.mu.Lock()
		if l.failed == nil {
			l.failed = fmt.Errorf("%w (appends refused since: a failed fsync may have lost unsynced records)", serr)
		}
		l.mu.Unlock()
		return serr
	}
	l.mu.Lock()
	if l.synced.Less(end) {
		l.synced = end
	}
	l.mu.Unlock()
	return nil
}

// Synced is the position up to which every record is durable.
func (l *Log) Synced() Pos {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced
}

// End is the position after the last appended record.
func (l *Log) End() Pos {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Pos{Segment: l.seg, Offset: l.off}
}

// Cut ends the current segment (synced) and starts a new one, so everything
// appended so far sits in segments below the returned index.
func (l *Log) Cut() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitPrepLocked()
	if l.closed {
		return 0, ErrClosed
	}
	if l.off == 0 {
		return l.seg, nil
	}
	if err := l.rotateLocked(); err != nil {
		return 0, err
	}
	return l.seg, nil
}

// Current is the index of the segment being appended to.
func (l *Log) Current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seg
}

// Size is the number of bytes of records in all live segments: zero-filled
// space ahead of the writer does not count.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sizeAll
}

// TruncateBefore deletes every segment below seg (never the current one).
// The caller guarantees their records are no longer needed.
func (l *Log) TruncateBefore(seg int) error {
	l.mu.Lock()
	if seg > l.seg {
		seg = l.seg
	}
	l.mu.Unlock()
	segs, err := Segments(l.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, s := range segs {
		if s >= seg {
			break
		}
		path := filepath.Join(l.dir, SegmentName(s))
		fi, _ := os.Stat(path)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("wal: remove segment %08d: %w", s, err)
		}
		removed = true
		if fi != nil {
			l.mu.Lock()
			l.sizeAll -= fi.Size()
			l.mu.Unlock()
		}
	}
	if removed {
		return durable.SyncDir(l.dir)
	}
	return nil
}

// Close cuts the current segment to its records (dropping preallocated
// zeros), syncs and closes it.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.waitPrepLocked()
	var err error
	if l.prealloc {
		err = l.f.Truncate(l.off)
	}
	if serr := l.f.Sync(); err == nil {
		err = serr
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: close segment %08d: %w", l.seg, err)
	}
	return nil
}
