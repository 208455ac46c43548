package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

// writeRotated writes a flush's sorted samples of kind k into the series'
// files as the rotation policy routes them: the newest file first (its
// period's samples and older, out-of-order ones), then a new file per later
// period or after a full file. It returns how many leading samples are in
// files (all of them unless err) and the last path written or tried. Called
// with the series' flush lock held, so its newest file cannot change
// meanwhile. sts are the start timestamps of smps (sorted by T; nil when
// none).
func writeRotated[S any](s *Store, k kind[S], ms *memSeries, smps []S, sts []StartTime) (written int, path string, err error) {
	pol := s.opts.Rotation
	ms.mu.Lock()
	tr := k.track(ms, false)
	var cur *rotation.Newest
	var curStart int64
	if n := len(tr.files()); n > 0 {
		curStart = tr.files()[n-1]
		cur = &rotation.Newest{Start: curStart, MaxT: noTime}
		if fmax, known := tr.fileMax(); known {
			cur.MaxT = fmax
		}
		// A file may span periods (a pre-rotation histogram file was
		// renamed to its first sample): route as if it started in its
		// newest sample's period, so every new file starts after
		// everything written before it.
		if pol.Period > 0 && cur.MaxT != noTime && pol.PeriodStart(cur.MaxT) > cur.Start {
			cur.Start = pol.PeriodStart(cur.MaxT)
		}
	}
	ms.mu.Unlock()
	if cur != nil && pol.MaxFileBytes > 0 {
		p := filePath(s.dir, k, ms.ref, curStart)
		if fi, err := os.Stat(p); err == nil {
			cur.Bytes = fi.Size()
		}
		if pol.NeedsMaxT(*cur) && cur.MaxT == noTime {
			newest, ok, err := newestInFile(k, p)
			if err != nil {
				return 0, p, fmt.Errorf("newest sample of full file: %w", err)
			}
			if ok {
				cur.MaxT = k.ts(newest)
			}
		}
	}
	ts := make([]int64, len(smps))
	for i, smp := range smps {
		ts[i] = k.ts(smp)
	}
	for _, part := range pol.Split(cur, ts) {
		start := part.Start
		if !part.Create {
			start = curStart
		}
		path = filePath(s.dir, k, ms.ref, start)
		if !part.Create {
			// An idle newest file may exist only in the bucket (tier.go).
			if err := s.tier.ensureLocal(k.id(), ms.ref, start); err != nil {
				return written, path, err
			}
		}
		if err := writeBlocks(s, k, ms, path, start, part.Create, smps[part.Lo:part.Hi], sts); err != nil {
			return written, path, err
		}
		if part.Create {
			s.rm.FilesCreated.WithLabelValues(part.Reason).Inc()
			if part.Reason != rotation.ReasonFirst {
				s.log.Debug("series file rotated", "kind", k.name(), "ref", fmt.Sprintf("%016x", ms.ref), "path", path, "reason", part.Reason)
			}
		}
		ms.mu.Lock()
		if _, known := tr.fileMin(start); known || part.Create {
			noteFileMin(tr, start, ts[part.Lo])
		}
		ms.mu.Unlock()
		written = part.Hi
	}
	return written, path, nil
}

// writeBlocks appends sorted smps to the file at path (created when create)
// as blocks of at most the kind's block rows. Called with the series' flush
// lock held. A newest file that compaction rewrote (its value type chosen
// from what it held) gets the samples in its type; when one does not fit,
// the file is rewritten with all it holds and the rest of smps. So is a
// file without a start-timestamp column when smps bring start timestamps
// (sts, sorted by T; entries of other samples are ignored): a new file
// gets the column when its first samples have some.
func writeBlocks[S any](s *Store, k kind[S], ms *memSeries, path string, start int64, create bool, smps []S, sts []StartTime) error {
	rest, err := appendBlocks(s, k, ms, path, start, create, smps, sts)
	if !errors.Is(err, errNotRepresentable) {
		return err
	}
	return rewriteWith(s, k, ms, path, rest, sts)
}

func appendBlocks[S any](s *Store, k kind[S], ms *memSeries, path string, start int64, create bool, smps []S, sts []StartTime) ([]S, error) {
	sts = startsFor(k, sts, smps)
	schema := k.schema()
	if len(sts) > 0 {
		schema = schemaWithStart(schema)
	}
	e, err := s.writers.acquire(fileKey{ref: ms.ref, kind: k.id()}, path, create, schema, k.writerOptions(s.fo))
	if err != nil {
		return smps, err
	}
	defer s.writers.release(e)
	if create {
		// The file exists from now on, whatever happens to the append.
		ms.mu.Lock()
		tr := k.track(ms, false)
		tr.setFiles(append(tr.files(), start))
		tr.setNewestRows(0)
		ms.mu.Unlock()
	}
	rows := k.maxBlockRows(s.fo)
	if testHookWriteBlocks != nil {
		testHookWriteBlocks(k.id())
	}
	// Kept chunks of the file, extended by each block (xorcache_kept.go).
	var kept *fileChunks
	if k.xorHead() && len(sts) == 0 && !create {
		kept = s.readers.keptFor(path)
	}
	for len(smps) > 0 {
		n := min(len(smps), rows)
		b, err := k.batch(smps[:n], false)
		if err == nil {
			b = withStarts(k, b, smps[:n], sts, false)
			b, err = adaptWithStarts(k, b, smps[:n], e.w.Schema())
		}
		if errors.Is(err, errNotRepresentable) {
			e.broken = true // closed on release: the file is rewritten
			return smps, err
		}
		if err != nil {
			return smps, err
		}
		size := e.w.Size()
		err = e.appendBlock(b)
		s.m.flushedBytes.Add(float64(e.w.Size() - size))
		// Before the samples leave the flushing buffer (readerCache doc).
		s.readers.invalidate(path)
		if err != nil {
			e.broken = true
			return smps, err
		}
		if kept != nil {
			kept = extendKeptBy(s, k, path, kept, smps[:n])
		}
		e.dirty = true
		smps = smps[n:]
		ms.mu.Lock()
		if tr := k.track(ms, false); tr != nil {
			tr.addNewestRows(n)
		}
		ms.mu.Unlock()
	}
	return nil, nil
}

// extendKeptBy keeps the file's chunks extended by the block of smps just
// appended to it (the flush lock held), returning them; nil when they
// cannot be (then none are kept: the invalidation dropped them).
func extendKeptBy[S any](s *Store, k kind[S], path string, fc *fileChunks, smps []S) *fileChunks {
	out, err := extendKept(fc, xorSamples(k, smps))
	if err != nil || out == nil {
		return nil
	}
	s.readers.keepRewritten(path, out)
	return out
}

// rewriteWith rewrites the file at path (a track's newest, its writer
// closed) with what it holds and smps, in a layout chosen over all of
// them: what a flush does when its samples do not fit the value type a
// compaction gave the file. The series' flush lock is held.
func rewriteWith[S any](s *Store, k kind[S], ms *memSeries, path string, smps []S, sts []StartTime) error {
	s.writers.forget(fileKey{ref: ms.ref, kind: k.id()}, path)
	r, err := acta.Open(path)
	if err != nil {
		return err
	}
	var all []S
	var allSts []StartTime
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err == nil {
			all, allSts, err = decodeWithStarts(k, all, allSts, r.Schema(), b, math.MinInt64, math.MaxInt64)
		}
		if err != nil {
			r.Close()
			return fmt.Errorf("block %d of %s: %w", i, path, err)
		}
	}
	r.Close()
	all = append(all, smps...) // the file's first: the first stored wins
	slices.SortStableFunc(all, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
	all = dedupeSorted(k, all)
	allSts = mergeStarts([][]StartTime{allSts, startsFor(k, sts, smps)})
	co := s.opts.Compaction
	rows := co.BlockRows
	if rows <= 0 {
		rows = 65536
	}
	batches, err := sealedBatchesWithStarts(k, all, allSts, min(rows, k.maxBlockRows(fileOptions{blockRows: rows})))
	if err != nil {
		return err
	}
	tmp := lockedTmpPath(path)
	res, err := rotation.WriteTemp([]string{path}, tmp, k.schema(), batches, rotation.CompactOptions{ZstdLevel: co.ZstdLevel})
	if err != nil {
		return err
	}
	if testHookFlushRewrite != nil {
		testHookFlushRewrite()
	}
	if err := rotation.Install(tmp, path, &res); err != nil {
		return err
	}
	s.readers.invalidate(path)
	ms.mu.Lock()
	if tr := k.track(ms, false); tr != nil {
		tr.setNewestRows(len(all))
	}
	ms.mu.Unlock()
	s.rm.Written.Add(float64(res.BytesOut))
	s.log.Debug("newest series file rewritten for a value its type did not hold", "kind", k.name(), "path", path, "rows", res.RowsOut)
	return nil
}

// testHookWriteBlocks, set by tests only, runs before a flush writes a
// track's blocks (with the series' flush lock held): a test makes a kind's
// file I/O hang there and checks what does not wait for it.
var testHookWriteBlocks func(kindID)

// testHookFlushRewrite, set by tests only, runs between rewriteWith's
// writing of the new version and its rename over the file.
var testHookFlushRewrite func()
