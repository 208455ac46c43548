package wal

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/durable"
)

// Preallocation (Options.Preallocate). An fdatasync of an append that grows a file commits a file
// system journal transaction (the new size, the new blocks); one that only
// overwrites space whose size and blocks are already durable flushes data
// alone. So a background goroutine keeps the space ahead of the write
// offset of the current segment zero-filled and synced, a chunk at a time,
// and Sync uses fdatasync. Zeros are written rather than fallocate(2)'d:
// fallocated blocks are "unwritten" extents, and the first write into one
// converts it, again a journal commit (measured on ext4: ~140 µs per 40 KiB
// append+fdatasync into zero-filled space, ~250 µs fallocated, ~310 µs
// plain appends with fsync).
//
// How far ahead grows with what the segment holds (at least prepMin, at
// most prepMax), and a zero fill starts once less than half of that is
// left, so a rarely written log (the catalog) holds a zero tail of
// prepMin and a busy one stays megabytes ahead of its appends. A segment is cut back to its written length when
// it is rotated away from or closed, so only the last segment of a crashed
// process has a zero tail; Replay accepts and trims one in any segment
// (replay.go).
//
// The goroutine writes with pwrite at offsets at or beyond prepFrom, and
// appenders never write past prepFrom while it runs (Append waits), so the
// zeros can never land on a record. A failed zero write (ENOSPC) gives its
// bytes back and turns preallocation off for the rest of the segment.
const (
	prepMin = 256 << 10
	prepMax = 4 << 20
)

// maybePrepLocked starts zero-filling more of the current segment when
// less than half the wanted space is prepared ahead of the write offset.
// Called with mu held.
func (l *Log) maybePrepLocked() {
	if !l.prealloc || l.prep != nil || l.noPrep || l.closed || l.failed != nil {
		return
	}
	ahead := min(max(l.off, prepMin), prepMax)
	if l.zeroEnd-l.off >= ahead/2 {
		return
	}
	from := max(l.zeroEnd, l.off)
	to := min(l.off+ahead, l.segSize)
	if to <= from {
		return // the segment is prepared to its size
	}
	done := make(chan struct{})
	l.prep, l.prepFrom = done, from
	go l.zeroFill(l.f, l.seg, from, to, done)
}

// zeroFill writes zeros to [from, to) of segment seg, fdatasyncing each
// piece (zeroChunk) as it goes: an appender's fdatasync flushes every dirty
// page of the file, so it waits for at most one piece of zeros, not for the
// whole fill (p99 of BenchmarkAppendSync ~0.8 ms instead of 2-3 ms with one
// fdatasync after 2 MiB).
func (l *Log) zeroFill(f *os.File, seg int, from, to int64, done chan struct{}) {
	var werr, serr error
	for off := from; off < to && werr == nil && serr == nil; off += int64(len(zeroChunk)) {
		end := min(off+int64(len(zeroChunk)), to)
		if werr = writeZeros(f, off, end); werr == nil {
			serr = durable.Fdatasync(f)
		}
	}
	if werr != nil {
		if terr := f.Truncate(from); terr != nil {
			// The zeros written stay: a zero tail is read as the end of
			// the records and cut at rotation or Close, so this costs
			// space only.
			werr = fmt.Errorf("%w (and cannot give back the zeros written: %v)", werr, terr)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prep = nil
	close(done)
	switch {
	case serr != nil:
		// As in Sync: after a failed fsync the kernel may have dropped
		// dirty record pages of this file, so nothing appended since the
		// last good sync can be acknowledged any more.
		if l.failed == nil {
			l.failed = fmt.Errorf("wal: sync segment %08d: %w (appends refused since: a failed fsync may have lost unsynced records)", seg, serr)
		}
	case werr != nil:
		if seg == l.seg {
			l.noPrep = true
			l.prepErr = werr
		}
	case seg == l.seg && !l.noPrep:
		l.zeroEnd = to
	}
}

var zeroChunk [256 << 10]byte

func writeZeros(f *os.File, from, to int64) error {
	for off := from; off < to; {
		n := min(int64(len(zeroChunk)), to-off)
		if _, err := f.WriteAt(zeroChunk[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// waitPrepLocked waits, with mu released meanwhile, until no zero fill
// runs. The caller must check the Log's state again after it.
func (l *Log) waitPrepLocked() {
	for l.prep != nil {
		ch := l.prep
		l.mu.Unlock()
		<-ch
		l.mu.Lock()
	}
}
