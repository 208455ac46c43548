package acta

import (
	"errors"
	"fmt"
	"os"
)

// Explicit recovery (spec §13.2): an append interrupted by a crash leaves an
// incomplete final frame. InspectRecovery reports it without writing;
// RepairIncompleteTail removes exactly that frame and nothing else.

// RecoveryPlan is a point-in-time, read-only view of a file's tail.
type RecoveryPlan struct {
	Size           int64  // file size when inspected
	LastGoodOffset int64  // byte after the last complete frame
	Blocks         int    // complete data blocks
	NextSeq        uint64 // sequence the next frame would carry
	// IncompleteTail is true when bytes follow the last complete frame
	// without forming a complete frame.
	IncompleteTail bool
	TailBytes      int64 // bytes of the incomplete frame on disk
	TailDeclared   int64 // its declared length; 0 when its prefix is itself incomplete
	// SchemaIncomplete is true when the file ends inside the prologue or
	// schema frame: there is nothing to keep, and repair refuses.
	SchemaIncomplete bool
}

// RequiresRepair reports whether RepairIncompleteTail would act.
func (p RecoveryPlan) RequiresRepair() bool { return p.IncompleteTail && !p.SchemaIncomplete }

// RepairSummary reports a repair.
type RepairSummary struct {
	BytesRemoved int64
	NewSize      int64
	Blocks       int
}

// InspectRecovery checks the prologue, schema frame and every complete frame
// (with body CRCs, sequence and row-ID chains) and describes the tail. A
// corrupt complete frame is an error, not a plan.
func InspectRecovery(path string) (RecoveryPlan, error) {
	f, err := os.Open(path)
	if err != nil {
		return RecoveryPlan{}, fmt.Errorf("acta: inspect recovery: %w", err)
	}
	defer f.Close()
	p, _, err := planFor(f, DefaultLimits())
	return p, withPath(err, path)
}

func planFor(f *os.File, lim Limits) (RecoveryPlan, *fileHead, error) {
	var p RecoveryPlan
	fi, err := f.Stat()
	if err != nil {
		return p, nil, err
	}
	p.Size = fi.Size()
	lim = lim.withDefaults()
	fh, err := readHead(f, p.Size, &lim)
	if err != nil {
		if errors.Is(err, ErrIncompleteTail) {
			p.IncompleteTail, p.SchemaIncomplete, p.TailBytes = true, true, p.Size
			return p, nil, nil
		}
		return p, nil, err
	}
	d := discoverer{r: f, fh: fh, strict: true}
	blocks, ch, tail, err := d.run(fh.firstChain(), p.Size, nil)
	if err != nil {
		return p, fh, err
	}
	p.LastGoodOffset, p.Blocks, p.NextSeq = ch.off, len(blocks), ch.seq
	p.IncompleteTail, p.TailBytes, p.TailDeclared = tail.Incomplete, tail.Present, tail.Declared
	return p, fh, nil
}

// RepairIncompleteTail truncates an incomplete final data frame. It takes
// the writer lock, rescans the locked file (a stale plan is never trusted),
// rechecks the length just before truncating, syncs, and scans again. It
// refuses complete files, corrupt complete frames and incomplete schema
// frames. Every error says whether bytes were already removed.
func RepairIncompleteTail(path string) (RepairSummary, error) {
	var sum RepairSummary
	refuse := func(format string, args ...any) (RepairSummary, error) {
		return sum, fmt.Errorf("acta: repair %s (no bytes removed): %w", path, fmt.Errorf(format, args...))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return refuse("%w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return refuse("%w", err)
	}
	defer unlockFile(f)
	p, _, err := planFor(f, DefaultLimits())
	if err != nil {
		return refuse("%w", withPath(err, path))
	}
	if p.SchemaIncomplete {
		return refuse("%w: the file ends inside its prologue or schema frame (%d bytes); there is no committed data to keep", ErrCorrupt, p.Size)
	}
	if !p.IncompleteTail {
		sum.NewSize, sum.Blocks = p.Size, p.Blocks
		return refuse("the file is complete (%d bytes, %d blocks)", p.Size, p.Blocks)
	}
	fi, err := f.Stat()
	if err != nil {
		return refuse("%w", err)
	}
	if fi.Size() != p.Size {
		return refuse("file length moved from %d to %d during the scan", p.Size, fi.Size())
	}
	if err := f.Truncate(p.LastGoodOffset); err != nil {
		return sum, fmt.Errorf("acta: repair %s (tail may be partly removed): truncate to %d: %w", path, p.LastGoodOffset, err)
	}
	sum.BytesRemoved, sum.NewSize = p.Size-p.LastGoodOffset, p.LastGoodOffset
	removed := func(format string, args ...any) (RepairSummary, error) {
		return sum, fmt.Errorf("acta: repair %s (tail of %d bytes already removed): %w", path, sum.BytesRemoved, fmt.Errorf(format, args...))
	}
	if err := f.Sync(); err != nil {
		return removed("sync: %w", err)
	}
	q, _, err := planFor(f, DefaultLimits())
	if err != nil {
		return removed("rescan: %w", withPath(err, path))
	}
	if q.IncompleteTail || q.Size != p.LastGoodOffset {
		return removed("rescan found %d bytes with incomplete tail %v", q.Size, q.IncompleteTail)
	}
	sum.Blocks = q.Blocks
	return sum, nil
}
