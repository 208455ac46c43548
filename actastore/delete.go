package actastore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/durable"
	"github.com/acta-remote/acta-remote/rotation"
)

// Deletion (the query API's delete_series): the samples of matching series
// in a range go, from the head and from the files, durably.
//
// The order makes it survive kill -9 at any moment. First a tombstone per
// series (ref, mint, maxt) goes to the WAL and is fsynced: from then on the
// deletion happens whatever follows. The heads lose the range, then each
// file is deleted (wholly in the range) or rewritten without it (rotation.
// Rewrite: temp, fsync, validate, rename). Then a tombstones-done record
// goes to the WAL and is fsynced. A series left with nothing is removed
// from the index and the catalog. WAL truncation waits for all of it
// (truncMu), so a tombstone is in the WAL until its files are done; a
// restart replays it, drops the range from the replayed heads, and applies
// it to the files again (idempotent) unless its done record follows.
//
// A deletion removes what was logged before its tombstone and nothing
// logged after it, live and after a restart alike:
//   - The tombstone is logged and the heads lose the range with appendMu
//     held exclusively, so every commit logged before it is in the heads
//     (and loses the range) and none logged after it is yet.
//   - The flush locks of the series are held from then until the done
//     record is durable, so nothing logged after the tombstone reaches a
//     file of theirs before the files are done; a restart that re-applies
//     an unfinished deletion to the files removes nothing logged after it.
//   - A finished deletion is not re-applied to the files: samples written
//     into its range afterwards (a backfill after a delete) are kept. Before
//     the done record they were lost after a kill -9 once flushed
//     (TestDeleteThenRewriteSurvivesCrash).

// tombstone is one deleted range of one series, ms inclusive.
type tombstone struct {
	Ref        uint64
	Mint, Maxt int64
}

// appendTombstonesRecord encodes one record of type typ (recTombstones or
// recTombstonesDone):
//
//	type=8|10 | count uvarint | count × (ref uint64 LE | mint varint | maxt varint)
func appendTombstonesRecord(typ byte, dst []byte, ts []tombstone) []byte {
	dst = append(dst, typ)
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	for _, t := range ts {
		dst = binary.LittleEndian.AppendUint64(dst, t.Ref)
		dst = binary.AppendVarint(dst, t.Mint)
		dst = binary.AppendVarint(dst, t.Maxt)
	}
	return dst
}

func decodeTombstonesRecord(rec []byte, fn func(tombstone) error) error {
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || n > uint64(len(rec))/10 {
		return fmt.Errorf("%w: tombstone count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return fmt.Errorf("%w: tombstone %d cut short", errRecord, i)
		}
		t := tombstone{Ref: binary.LittleEndian.Uint64(src)}
		var k1, k2 int
		t.Mint, k1 = binary.Varint(src[8:])
		if k1 <= 0 {
			return fmt.Errorf("%w: tombstone %d", errRecord, i)
		}
		t.Maxt, k2 = binary.Varint(src[8+k1:])
		if k2 <= 0 {
			return fmt.Errorf("%w: tombstone %d", errRecord, i)
		}
		src = src[8+k1+k2:]
		if err := fn(t); err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in tombstone record", errRecord, len(src))
	}
	return nil
}

// DeleteSeries deletes the samples of every kind, and the exemplars, of
// the series matching ms in [mint, maxt] (ms, inclusive; math.MinInt64 and
// math.MaxInt64 for all time), durably before it returns. A series left
// without data is removed (from the index, the catalog and every read).
// It returns how many series matched. Files wholly in the range are
// deleted; the others are rewritten without it.
func (s *Store) DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	if mint > maxt {
		return 0, nil
	}
	list := s.matchSeries(ms)
	if len(list) == 0 {
		return 0, nil
	}
	s.truncMu.Lock() // until the files are done: the tombstones stay in the WAL
	ts := make([]tombstone, len(list))
	for i, m := range list {
		ts[i] = tombstone{Ref: m.ref, Mint: mint, Maxt: maxt}
	}
	s.appendMu.Lock()
	unlockFlushes := s.lockFlushes(list)
	err := s.logTombstones(recTombstones, ts)
	if err == nil {
		for _, m := range list {
			m.mu.Lock()
			s.dropHeadRange(m, mint, maxt)
			m.mu.Unlock()
		}
	}
	s.appendMu.Unlock()
	if err != nil {
		unlockFlushes()
		s.truncMu.Unlock()
		return 0, fmt.Errorf("delete series: write tombstones to the WAL: %w", err)
	}
	var errs []error
	var emptied []*memSeries
	var done []tombstone
	for _, m := range list {
		finished, err := s.deleteFromSeries(m, mint, maxt)
		if err != nil {
			errs = append(errs, err)
			continue // its tombstone is applied to the files again at the next start
		}
		emptied = append(emptied, m)
		if finished {
			done = append(done, tombstone{Ref: m.ref, Mint: mint, Maxt: maxt})
		}
	}
	if len(done) > 0 {
		if err := s.logTombstonesDone(done); err != nil {
			errs = append(errs, fmt.Errorf("delete series: tombstones done: %w", err))
		}
	}
	unlockFlushes()
	s.truncMu.Unlock()
	_, rerr := s.removeSeries(emptied) // those left without data
	return len(list), errors.Join(append(errs, rerr)...)
}

// logTombstones writes ts as records of type typ (recTombstones or
// recTombstonesDone) to the WAL and fsyncs them (appendMu held).
func (s *Store) logTombstones(typ byte, ts []tombstone) error {
	var recs [][]byte
	for len(ts) > 0 {
		n := min(len(ts), maxRecordPayload/30)
		recs = append(recs, appendTombstonesRecord(typ, nil, ts[:n]))
		ts = ts[n:]
	}
	pos, err := s.wal.Append(recs...)
	if err == nil {
		err = s.wal.Sync(pos)
	}
	return err
}

// lockFlushes takes the flush locks of the series in list, each stripe
// once and in stripe order (so two deletions cannot deadlock), and returns
// their unlock.
func (s *Store) lockFlushes(list []*memSeries) func() {
	stripes := make([]int, 0, len(list))
	for _, m := range list {
		stripes = append(stripes, int(m.ref%flushStripes))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		s.flushMu[i].Lock()
	}
	return func() {
		for _, i := range stripes {
			s.flushMu[i].Unlock()
		}
	}
}

// dropHeadRange removes [mint, maxt] from every head of ms (mu held).
func (s *Store) dropHeadRange(ms *memSeries, mint, maxt int64) {
	had := ms.hasHeadLocked()
	dropTrackRange(s, floats, &ms.floats, mint, maxt)
	if h := ms.hists(); h != nil {
		dropTrackRange(s, histograms, h, mint, maxt)
	}
	if x := ms.ex(); x != nil {
		x.kept = slices.DeleteFunc(x.kept, func(e Exemplar) bool { return e.T >= mint && e.T <= maxt })
		x.unflushed = min(x.unflushed, len(x.kept))
	}
	if had && !ms.hasHeadLocked() {
		s.hd.series.Add(-1)
	}
}

func dropTrackRange[S any](s *Store, k kind[S], tr *track[S], mint, maxt int64) {
	dn, db := tr.head.deleteFunc(k, func(smp S) bool {
		t := k.ts(smp)
		return t >= mint && t <= maxt
	})
	n, b := int64(dn), -db // bytes the head no longer holds
	b += int64(pruneStarts(k, tr)) * startBytes
	if last, ok := tr.lastFlushed(); ok && k.ts(last) >= mint && k.ts(last) <= maxt {
		tr.clearLast()
	}
	s.hd.added(-n, -b)
}

// deleteFromFiles applies a deleted range to the track's files (the
// series' flush lock held).
//
// pending says the deletion touched a file in the bucket's index, so it is
// not finished until an upload cycle records the change (tier.uploaded).
func deleteFromFiles[S any](s *Store, k kind[S], ms *memSeries, mint, maxt int64) (pending bool, _ error) {
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil {
		ms.mu.Unlock()
		return false, nil
	}
	spans := filesInRange(tr, mint, maxt)
	ms.mu.Unlock()
	var errs []error
	for _, f := range spans {
		path := filePath(s.dir, k, ms.ref, f.start)
		pending = pending || s.tier.uploaded(k.id(), ms.ref, f.start)
		if skip, err := tierBeforeDelete(s, k, ms, f.start, mint, maxt); skip || err != nil {
			if err != nil {
				errs = append(errs, fmt.Errorf("delete from %s: %w", path, err))
			}
			continue
		}
		gone, changed, err := rewriteWithout(s, k, ms, path, mint, maxt)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete from %s: %w", path, err))
			continue
		}
		if !changed {
			continue
		}
		ms.mu.Lock()
		if gone {
			dropFile(tr, f.start)
		} else if slices.Index(tr.files(), f.start) == len(tr.files())-1 {
			// The newest file changed: its newest sample is read again
			// when needed.
			tr.clearLast()
			fmax, _ := tr.fileMax()
			tr.setFileMax(fmax, false)
		}
		tr.forgetFileMin(f.start)
		ms.mu.Unlock()
	}
	return pending, errors.Join(errs...)
}

// deleteFromSeries applies [mint, maxt] to every file of ms, its
// exemplars included (its flush lock held). finished says nothing of it
// waits for an upload cycle, so a tombstones-done record may say so.
func (s *Store) deleteFromSeries(ms *memSeries, mint, maxt int64) (finished bool, err error) {
	pf, ferr := deleteFromFiles(s, floats, ms, mint, maxt)
	ph, herr := deleteFromFiles(s, histograms, ms, mint, maxt)
	err = errors.Join(ferr, herr, s.deleteExemplars(ms, mint, maxt))
	return err == nil && !pf && !ph, err
}

// logTombstonesDone makes the file changes of the finished deletions in
// done durable (their directories fsynced: a removed file must stay
// removed once the tombstone is no longer applied again) and then writes
// and fsyncs their tombstones-done records.
func (s *Store) logTombstonesDone(done []tombstone) error {
	dirs := map[string]bool{}
	for _, t := range done {
		dirs[filepath.Dir(filePath(s.dir, floats, t.Ref, 0))] = true
		dirs[filepath.Dir(filePath(s.dir, histograms, t.Ref, 0))] = true
		dirs[filepath.Dir(exemplarFilePath(s.dir, t.Ref))] = true
	}
	for d := range dirs {
		if err := durable.SyncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	s.appendMu.RLock()
	defer s.appendMu.RUnlock()
	return s.logTombstones(recTombstonesDone, done)
}

// rewriteWithout rewrites one file without the samples in [mint, maxt], or
// deletes it when nothing else is left. changed is false when it held none.
func rewriteWithout[S any](s *Store, k kind[S], ms *memSeries, path string, mint, maxt int64) (gone, changed bool, err error) {
	r, err := acta.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	var keep []S
	var keepSts []StartTime
	hit := false
	for i, bi := range r.Blocks() {
		if bi.Rows == 0 {
			continue
		}
		b, err := r.ReadBlock(i)
		if err != nil {
			r.Close()
			return false, false, err
		}
		all, sts, err := decodeWithStarts(k, nil, nil, r.Schema(), b, math.MinInt64, math.MaxInt64)
		if err != nil {
			r.Close()
			return false, false, err
		}
		for _, st := range sts {
			if st.T < mint || st.T > maxt {
				keepSts = append(keepSts, st)
			}
		}
		for _, smp := range all {
			if t := k.ts(smp); t >= mint && t <= maxt {
				hit = true
			} else {
				keep = append(keep, smp)
			}
		}
	}
	r.Close()
	if !hit {
		return false, false, nil
	}
	s.writers.forget(fileKey{ref: ms.ref, kind: k.id()}, path)
	if len(keep) == 0 {
		if _, err := s.removeFile(k, ms, path); err != nil {
			return false, false, err
		}
		return true, true, nil
	}
	// Stable: the file's order decides among equal timestamps, as reads do.
	slices.SortStableFunc(keep, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
	keep = dedupeSorted(k, keep)
	keepSts = sortStarts(keepSts)
	// A file that had the start-timestamp column keeps it on every block
	// (one schema per file), even when the deletion took every value.
	withCol := r.Schema().Index(colStart) >= 0
	rows := k.maxBlockRows(s.fo)
	var batches []*acta.Batch
	for lo := 0; lo < len(keep); lo += rows {
		part := keep[lo:min(lo+rows, len(keep))]
		b, err := k.batch(part, false)
		if err != nil {
			return false, false, err
		}
		if withCol {
			b = withStarts(k, b, part, keepSts, true)
		}
		batches = append(batches, b)
	}
	co := s.opts.Compaction
	_, err = rotation.Rewrite(path, lockedTmpPath(path), k.schema(), batches, rotation.CompactOptions{ZstdLevel: co.ZstdLevel})
	s.readers.invalidate(path)
	if err != nil {
		return false, false, err
	}
	s.maint.forget(path)
	return false, true, nil
}

// deleteExemplars drops [mint, maxt] from the series' exemplar file by
// rewriting it with what is kept (its flush lock held).
func (s *Store) deleteExemplars(ms *memSeries, mint, maxt int64) error {
	ms.mu.Lock()
	has := ms.ex() != nil
	ms.mu.Unlock()
	if !has {
		return nil
	}
	s.loadExemplars(ms)
	ms.mu.Lock()
	x := ms.ex()
	x.kept = slices.DeleteFunc(x.kept, func(e Exemplar) bool { return e.T >= mint && e.T <= maxt })
	kept := slices.Clone(x.kept)
	x.unflushed = 0
	x.fileRows = len(kept)
	ms.mu.Unlock()
	path := exemplarFilePath(s.dir, ms.ref)
	s.writers.forget(fileKey{ref: ms.ref, kind: exemplarFileKind}, path)
	if len(kept) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		ms.mu.Lock()
		ms.dropExemplarsLocked()
		ms.mu.Unlock()
		return nil
	}
	return writeActaFileAtomic(path, exemplarSchema, exemplarBatch(kept), exemplarWriterOptions)
}

// tombstone (replay) drops a deleted range from the replayed heads, and
// keeps it to apply to the files once they are attached.
func (rp *replayer) tombstone(t tombstone) error {
	ms := rp.s.reg.byRef.get(t.Ref)
	if ms == nil {
		return nil
	}
	rp.s.dropHeadRange(ms, t.Mint, t.Maxt)
	rp.s.tombstones = append(rp.s.tombstones, t)
	return nil
}

// tombstoneDone takes a finished deletion off the list applyTombstones
// applies to the files: its files were done before the crash, and what
// they hold in its range now was written after it.
func (rp *replayer) tombstoneDone(t tombstone) error {
	// Every earlier equal tombstone: a deletion that failed and was
	// retried logged the same range twice, and the retry finished both.
	rp.s.tombstones = slices.DeleteFunc(rp.s.tombstones, func(x tombstone) bool { return x == t })
	return nil
}

// applyTombstones applies the deletions replayed from the WAL to the files
// (a deletion interrupted by a crash finishes here; a finished one finds
// nothing left to do) and removes the series they emptied.
func (s *Store) applyTombstones() error {
	var errs []error
	var emptied []*memSeries
	var done []tombstone
	for _, t := range s.tombstones {
		ms := s.reg.byRef.get(t.Ref)
		if ms == nil {
			continue
		}
		finished, err := s.deleteFromSeries(ms, t.Mint, t.Maxt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		emptied = append(emptied, ms)
		if finished {
			done = append(done, t)
		}
	}
	s.tombstones = nil
	if len(done) > 0 { // finished now: the next start leaves the files alone
		if err := s.logTombstonesDone(done); err != nil {
			errs = append(errs, fmt.Errorf("tombstones done: %w", err))
		}
	}
	if len(emptied) > 0 {
		if _, err := s.removeSeries(emptied); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
