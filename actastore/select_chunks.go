package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
)

// Select's float track read for WithXORChunks (xorcache.go): readTrack,
// with each file's samples taken from its kept XOR chunks where it has
// them (or they can be built), and the chunks handed out as they are when
// the files, the flushing buffer and the head do not overlap in time
// (the usual case: one after the other). When they overlap, every chunk is
// decoded and the samples merged exactly as readTrack merges them.

// floatRun is one file's, or the flushing buffer's, or the head's samples
// in [mint, maxt]: parts in time order.
type floatRun struct {
	parts       []FloatPart
	first, last int64
	n           int
	chunked     bool // some part is chunks
}

func samplesRun(ss []Sample) floatRun {
	return floatRun{parts: []FloatPart{{Samples: ss}}, first: ss[0].T, last: ss[len(ss)-1].T, n: len(ss)}
}

// chunksRun cuts a file's chunks to [mint, maxt]: chunks inside are kept,
// the (at most two) that straddle a bound are decoded and cut. ok is false
// when none of its samples is in range.
func chunksRun(fc *fileChunks, mint, maxt int64) (floatRun, bool, error) {
	cs := fc.chunks
	lo := sort.Search(len(cs), func(i int) bool { return cs[i].MaxT >= mint })
	hi := sort.Search(len(cs), func(i int) bool { return cs[i].MinT > maxt })
	var r floatRun
	// Runs of chunks wholly in range are handed out as sub-slices of the
	// kept ones (capped, so an append by a reader cannot write into them):
	// copying them cost a wide read more than everything else it does
	// with kept chunks.
	whole := lo // first chunk of the current run of whole chunks
	for i := lo; i < hi; i++ {
		c := cs[i]
		if c.MinT >= mint && c.MaxT <= maxt {
			continue
		}
		if whole < i {
			r.parts = append(r.parts, FloatPart{Chunks: cs[whole:i:i]})
		}
		whole = i + 1
		ss, err := decodeXOR(nil, c.Data)
		if err != nil {
			return r, false, err
		}
		ss = inRange(floats, nil, ss, mint, maxt)
		if len(ss) > 0 {
			r.parts = append(r.parts, FloatPart{Samples: ss})
		}
	}
	if whole < hi {
		r.parts = append(r.parts, FloatPart{Chunks: cs[whole:hi:hi]})
	}
	for _, p := range r.parts {
		r.chunked = r.chunked || len(p.Chunks) > 0
		for _, c := range p.Chunks {
			r.n += c.Samples
		}
		r.n += len(p.Samples)
	}
	if r.n == 0 {
		return r, false, nil
	}
	r.first, r.last = partsFirst(r.parts[0]), partsLast(r.parts[len(r.parts)-1])
	return r, true, nil
}

func partsFirst(p FloatPart) int64 {
	if len(p.Chunks) > 0 {
		return p.Chunks[0].MinT
	}
	return p.Samples[0].T
}

func partsLast(p FloatPart) int64 {
	if len(p.Chunks) > 0 {
		return p.Chunks[len(p.Chunks)-1].MaxT
	}
	return p.Samples[len(p.Samples)-1].T
}

// decodeXOR appends an XOR chunk's samples to dst.
func decodeXOR(dst []Sample, data []byte) ([]Sample, error) {
	return appendXOR(floats, dst, data, math.MinInt64, math.MaxInt64)
}

// samplesOfParts is every sample of parts, chunks decoded.
func samplesOfParts(parts []FloatPart, n int) ([]Sample, error) {
	out := make([]Sample, 0, n)
	var err error
	for _, p := range parts {
		out = append(out, p.Samples...)
		for _, c := range p.Chunks {
			if out, err = decodeXOR(out, c.Data); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readFloatParts is readTrack(floats) for WithXORChunks: the series'
// floats in [mint, maxt] as parts (nil when nothing came as chunks: then
// smps holds them, as readTrack returns them).
func readFloatParts(s *Store, ms *memSeries, mint, maxt int64, st *readStats) (parts []FloatPart, smps []Sample, n int, err error) {
	const attempts = 5
	for i := 1; ; i++ {
		runs, listed, missing, err := readFloatRunsOnce(s, ms, mint, maxt, st)
		if err != nil {
			return nil, nil, 0, err
		}
		if missing && i < attempts {
			ms.mu.Lock()
			tr := floats.track(ms, false)
			same := tr != nil && slices.Equal(tr.files(), listed)
			ms.mu.Unlock()
			if !same {
				continue
			}
			// retention is deleting it: expired data
		}
		return mergeFloatRuns(runs)
	}
}

// readFloatRunsOnce is readTrackOnce for floats, files read as chunks
// where they can be.
func readFloatRunsOnce(s *Store, ms *memSeries, mint, maxt int64, st *readStats) (runs []floatRun, listed []int64, missing bool, err error) {
	k := floats
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil {
		ms.mu.Unlock()
		return nil, nil, false, nil
	}
	flushing := inRange(k, nil, tr.flushingBuf(), mint, maxt)
	head := tr.head.inRange(k, nil, mint, maxt)
	files := filesInRange(tr, mint, maxt)
	listed = slices.Clone(tr.files())
	ms.mu.Unlock()

	for _, f := range files {
		if st != nil && st.localOnly {
			if _, only := s.tier.bucketOnly(k.id(), ms.ref, f.start); only {
				continue
			}
		}
		path := filePath(s.dir, k, ms.ref, f.start)
		fc, err := s.readers.cachedChunks(path, mint, maxt, st)
		if errors.Is(err, os.ErrNotExist) {
			missing = true
			continue
		}
		if err != nil {
			return nil, listed, false, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, path, err)
		}
		if fc != nil {
			if len(fc.chunks) > 0 && !f.minKnown && f.sealed {
				ms.mu.Lock()
				if slices.Contains(tr.files(), f.start) {
					noteFileMin(tr, f.start, fc.chunks[0].MinT)
				}
				ms.mu.Unlock()
			}
			r, ok, err := chunksRun(fc, mint, maxt)
			if err != nil {
				return nil, listed, false, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, path, err)
			}
			if ok {
				runs = append(runs, r)
			}
			continue
		}
		// Not kept: decoded as readTrackOnce does.
		var fileRuns [][]Sample
		lo, _, ok, err := readFileStats(k, s.readers, path, mint, maxt, st, func(run []Sample) error {
			fileRuns = append(fileRuns, run)
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			missing = true
			continue
		}
		if err != nil {
			return nil, listed, false, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, path, err)
		}
		if ok && !f.minKnown && f.sealed {
			ms.mu.Lock()
			if slices.Contains(tr.files(), f.start) {
				noteFileMin(tr, f.start, lo)
			}
			ms.mu.Unlock()
		}
		// The file's blocks merged on their own: the first stored wins
		// within the file, as it would among all runs (files come first,
		// in file order).
		if ss := mergeRuns(k, fileRuns); len(ss) > 0 {
			runs = append(runs, samplesRun(ss))
		}
	}
	if len(flushing) > 0 {
		runs = append(runs, samplesRun(flushing))
	}
	if len(head) > 0 {
		runs = append(runs, samplesRun(head))
	}
	return runs, listed, missing, nil
}

// mergeFloatRuns returns the runs' parts in time order when they follow
// each other (and some part is chunks); otherwise every sample merged as
// mergeRuns merges them (earlier runs win a timestamp).
func mergeFloatRuns(runs []floatRun) (parts []FloatPart, smps []Sample, n int, err error) {
	chunked := false
	for _, r := range runs {
		chunked = chunked || r.chunked
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return runs[order[a]].first < runs[order[b]].first })
	disjoint := true
	for i := 1; i < len(order); i++ {
		if runs[order[i]].first <= runs[order[i-1]].last {
			disjoint = false
			break
		}
	}
	if chunked && disjoint {
		for _, i := range order {
			for _, p := range runs[i].parts {
				if len(p.Samples) > 0 {
					p.Samples = dedupeSorted(floats, p.Samples)
					n += len(p.Samples)
				}
				for _, c := range p.Chunks {
					n += c.Samples
				}
				parts = append(parts, p)
			}
		}
		return parts, nil, n, nil
	}
	ss := make([][]Sample, 0, len(runs))
	for _, r := range runs {
		s, err := samplesOfParts(r.parts, r.n)
		if err != nil {
			return nil, nil, 0, err
		}
		ss = append(ss, s)
	}
	smps = mergeRuns(floats, ss)
	return nil, smps, len(smps), nil
}
