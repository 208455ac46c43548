package acta

import (
	"bytes"
	"fmt"
	"os"
)

// Live reading (spec §13.1 step 7): a Reader's snapshot grows only through
// Refresh, which resumes discovery from the snapshot's committed end.

// RefreshReport says what a Refresh found.
type RefreshReport struct {
	BlocksAdded    int
	IncompleteTail bool  // an incomplete final frame follows the committed data
	CommittedSize  int64 // the snapshot's committed end after the refresh
}

// Refresh extends the snapshot with exactly the frames committed since it
// was taken, validated as Open validates them. On any error the snapshot is
// unchanged. A path that now names another file, or whose last committed
// trailer, prologue or schema changed, is ErrFileReplaced; a file shorter
// than the committed end is ErrFileTruncated.
func (r *Reader) Refresh() (RefreshReport, error) {
	rep := RefreshReport{CommittedSize: r.ch.off, IncompleteTail: r.tail.Incomplete}
	if r.f == nil {
		return rep, fmt.Errorf("acta: refresh %s: %w", r.path, errNotAFile)
	}
	fi, err := os.Stat(r.path)
	if err != nil {
		return rep, fmt.Errorf("acta: refresh %s: %w", r.path, err)
	}
	if !os.SameFile(fi, r.fi) {
		return rep, fmt.Errorf("%w: %s now names a different file", ErrFileReplaced, r.path)
	}
	own, err := r.f.Stat()
	if err != nil {
		return rep, fmt.Errorf("acta: refresh %s: %w", r.path, err)
	}
	size := own.Size()
	if size < r.ch.off {
		return rep, fmt.Errorf("%w: %s is %d bytes, committed data ends at %d", ErrFileTruncated, r.path, size, r.ch.off)
	}
	// An in-place rewrite keeps the file identity; the last committed
	// trailer (length, sequence, body CRC, its own CRC) pins that frame.
	var tr [trailerSize]byte
	if _, err := r.f.ReadAt(tr[:], r.ch.trailerOff); err != nil {
		return rep, fmt.Errorf("acta: refresh %s: %w", r.path, err)
	}
	if tr != r.ch.trailer {
		return rep, fmt.Errorf("%w: %s: the trailer of frame %d at offset %d changed", ErrFileReplaced, r.path, r.ch.seq-1, r.ch.trailerOff)
	}
	if size == r.ch.off {
		r.tail = tailState{Offset: r.ch.off}
		rep.IncompleteTail = false
		return rep, nil
	}
	head := make([]byte, len(r.fh.raw))
	if _, err := r.f.ReadAt(head, 0); err != nil {
		return rep, fmt.Errorf("acta: refresh %s: %w", r.path, err)
	}
	if !bytes.Equal(head, r.fh.raw) {
		return rep, fmt.Errorf("%w: %s: prologue or schema frame changed", ErrFileReplaced, r.path)
	}
	d := discoverer{r: r.f, fh: r.fh}
	added, ch, tail, err := d.run(r.ch, size, nil)
	if err != nil {
		return rep, withPath(err, r.path)
	}
	r.blocks = append(r.blocks, added...)
	for _, m := range added {
		r.infos = append(r.infos, m.BlockInfo)
	}
	r.ch, r.tail = ch, tail
	rep.BlocksAdded, rep.IncompleteTail, rep.CommittedSize = len(added), tail.Incomplete, ch.off
	return rep, nil
}

// Tail follows a file for newly committed blocks, one per Poll. It spawns
// no goroutine and owns no timer: the caller decides when to poll again.
// It uses its Reader's snapshot; do not use the Reader elsewhere while a
// Tail is in use.
type Tail struct {
	s *Scan
}

// Tail starts after the blocks the reader already holds, with Scan's
// projection, range, limits and metrics.
func (r *Reader) Tail(o ScanOptions) (*Tail, error) {
	s, err := r.newScan(o)
	if err != nil {
		return nil, err
	}
	s.next, s.end = len(r.blocks), -1
	return &Tail{s: s}, nil
}

// Poll returns the next newly committed block with matching rows, or
// (nil, nil) when nothing is committed yet. Blocks that prune away or
// filter to no rows are consumed within the poll. A partial frame is never
// exposed. An error for one block moves past it, like Scan.Next.
func (t *Tail) Poll() (*Batch, error) {
	r := t.s.r
	refreshed := false
	for {
		for t.s.next < len(r.blocks) {
			m := &r.blocks[t.s.next]
			t.s.next++
			b, err := t.s.block(m)
			if err != nil || b != nil {
				return b, err
			}
		}
		if refreshed {
			return nil, nil
		}
		before := r.ch.off
		if _, err := r.Refresh(); err != nil {
			return nil, err
		}
		t.s.met.BytesRead += r.ch.off - before
		refreshed = true
	}
}

// Metrics reports what the tail has done so far.
func (t *Tail) Metrics() ScanMetrics { return t.s.met }

// IncompleteTail reports whether the last refresh saw a partial frame.
func (t *Tail) IncompleteTail() bool { return t.s.r.tail.Incomplete }

// Schema is the projected schema of the batches.
func (t *Tail) Schema() *Schema { return t.s.schema }
