package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acta-remote/acta-remote/actastore/wal"
)

// The read-only view and the server's WAL checkpoints (checkpoint.go):
// the view holds the newest checkpoint as the first run of its WAL data
// (walData[checkpointKey]), then the segments from the checkpoint's on.

// checkpointKey is the checkpoint's key in walData: before every segment.
const checkpointKey = -1

// Bounds of readWAL's retries while the server keeps checkpointing:
// starting over after a checkpoint committed during a read (a whole
// checkpoint and its segments read again each time), and listing again
// after the newest checkpoint was deleted before it could be opened (a
// newer one replaced it in between: cheap, and each one means the server
// committed another checkpoint, so the two are counted apart).
const (
	maxCheckpointRestarts = 5
	maxCheckpointGone     = 100
)

// readWAL reads what the WAL gained since the last call. When the server
// wrote a new checkpoint meanwhile, the view starts over from it and the
// segments after it (the ones before are gone or going), keeping taken
// what TakeWAL handed out; it checks again after reading the segments,
// since a checkpoint renamed meanwhile may have replaced segments before
// the view read them.
func (r *ReadOnly) readWAL() error {
	dir := filepath.Join(r.dir, walDirName)
	for restarts, gone := 0, 0; ; {
		c, err := newestCheckpoint(dir)
		if err != nil {
			return fmt.Errorf("read WAL checkpoints of %s: %w", r.dir, err)
		}
		if c != r.ckpt {
			err = r.startFrom(dir, c)
			if errors.Is(err, os.ErrNotExist) && gone < maxCheckpointGone {
				gone++
				continue // replaced by a newer one between the listing and the open
			}
			if err != nil {
				return fmt.Errorf("read WAL checkpoint of %s: %w", r.dir, err)
			}
		}
		err = r.wal.Read(func(seg int, p []byte) error {
			switch {
			case seg < r.ckpt && p[0] != recSeries:
				return nil // the checkpoint holds it (a segment not deleted yet)
			case checkpointOnly(p[0]):
				return nil // not in a segment: the server writes none there
			}
			return r.walRecord(seg, p)
		})
		if err != nil {
			return fmt.Errorf("read WAL of %s: %w", r.dir, err)
		}
		if again, err := newestCheckpoint(dir); err == nil && again != r.ckpt && restarts < maxCheckpointRestarts {
			restarts++
			continue
		}
		if r.carry != nil {
			r.markTaken(r.carry)
			r.carry = nil
		}
		return nil
	}
}

// newestCheckpoint is the segment of the newest checkpoint in the WAL
// directory dir, -1 for none.
func newestCheckpoint(dir string) (int, error) {
	segs, _, err := listCheckpoints(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	if len(segs) == 0 {
		return -1, nil
	}
	return segs[len(segs)-1], nil
}

// startFrom makes the view hold checkpoint c (-1: none) and read the
// segments after it afresh (their tombstones apply to the checkpoint's
// samples as at the server's replay). What TakeWAL handed out stays taken,
// by series and timestamp (carry); a new checkpoint while the view is
// followed counts as a truncation. On error the view is as before.
func (r *ReadOnly) startFrom(dir string, c int) error {
	carry := r.takenSamples(r.carry)
	oldData, oldWAL := r.walData, r.wal
	r.walData, r.wal = make(map[int]map[uint64]*walSeries), wal.NewFollower(dir)
	var err error
	if c >= 0 {
		var m *wal.Mapping
		if m, err = wal.Map(filepath.Join(dir, checkpointName(c))); err == nil {
			// Records are decoded into copies: the view keeps none.
			err = readCheckpoint(m, dir, c, func(p []byte) error { return r.walRecord(checkpointKey, p) })
			m.Unmap()
		}
	}
	if err != nil {
		r.walData, r.wal = oldData, oldWAL
		return err
	}
	if r.hasListed {
		r.truncations++
	}
	r.ckpt, r.carry = c, carry
	return nil
}

// takenSet is, by series, the timestamps of the samples TakeWAL handed out.
type takenSet struct {
	floats, hists map[uint64]map[int64]struct{}
}

// takenSamples adds what TakeWAL handed out of the WAL data held now to
// acc (nil: a new set).
func (r *ReadOnly) takenSamples(acc *takenSet) *takenSet {
	if acc == nil {
		acc = &takenSet{floats: map[uint64]map[int64]struct{}{}, hists: map[uint64]map[int64]struct{}{}}
	}
	note := func(m map[uint64]map[int64]struct{}, ref uint64, t int64) {
		if m[ref] == nil {
			m[ref] = map[int64]struct{}{}
		}
		m[ref][t] = struct{}{}
	}
	for _, series := range r.walData {
		for ref, w := range series {
			for _, s := range w.floats[:w.takenF] {
				note(acc.floats, ref, s.T)
			}
			for _, h := range w.hists[:w.takenH] {
				note(acc.hists, ref, h.T)
			}
		}
	}
	return acc
}

// markTaken marks the samples of the WAL data that acc holds as handed
// out: they go first in their run, in the order they were, and count as
// taken.
func (r *ReadOnly) markTaken(acc *takenSet) {
	for _, series := range r.walData {
		for ref, w := range series {
			if ts := acc.floats[ref]; ts != nil {
				w.floats, w.takenF = takenFirst(w.floats, ts, func(s Sample) int64 { return s.T })
			}
			if ts := acc.hists[ref]; ts != nil {
				w.hists, w.takenH = takenFirst(w.hists, ts, func(h HistogramSample) int64 { return h.T })
			}
		}
	}
}

// takenFirst reorders ss so that the samples whose timestamps taken holds
// come first (each part keeping its order) and returns how many they are.
func takenFirst[S any](ss []S, taken map[int64]struct{}, ts func(S) int64) ([]S, int) {
	out := make([]S, 0, len(ss))
	var rest []S
	for _, s := range ss {
		if _, ok := taken[ts(s)]; ok {
			out = append(out, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(out, rest...), len(out)
}
