package actastore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
)

// Select returns the series matching every matcher that have samples in
// [mint, maxt] (ms, inclusive), sorted by labels. Series are loaded one at
// a time as the set is iterated: a series' samples (file blocks overlapping
// the range, merged with its head) are read when Next reaches it, so memory
// holds one series' range at a time. Limits: more than MaxQuerySeries
// matching series, or more than MaxQuerySamples samples in total, end the
// set with an error wrapping ErrQueryLimit.
func (s *Store) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) SeriesSet {
	if s.closed.Load() {
		return &errSeriesSet{err: ErrClosed}
	}
	if err := ctxErr(ctx); err != nil {
		return &errSeriesSet{err: err}
	}
	if mint > maxt {
		return &errSeriesSet{}
	}
	list := s.matchSeries(ms)
	if s.opts.MaxQuerySeries > 0 && len(list) > s.opts.MaxQuerySeries {
		return &errSeriesSet{err: fmt.Errorf("%w: %d series match, limit %d", ErrQueryLimit, len(list), s.opts.MaxQuerySeries)}
	}
	list, lsets := s.sortByLabels(list)
	ss := &seriesSet{s: s, ctx: ctx, list: list, lsets: lsets, mint: mint, maxt: maxt, readMaxt: maxt, i: -1, st: readStats{localOnly: localOnly(ctx)},
		chunks: wantsXORChunks(ctx) && !s.opts.StartTimeZeroSamples}
	if s.opts.StartTimeZeroSamples {
		ss.readMaxt = zeroSampleReadMaxt(maxt)
	}
	readMaxt := ss.readMaxt
	if len(list) > 1 {
		// Decode the next series on the other cores while one is read
		// (file decoding is most of a wide query's cost); with files in a
		// bucket, keep more ranged GETs in flight.
		n := 2 * runtime.GOMAXPROCS(0)
		if s.tier != nil {
			n = max(n, tierLookahead)
		}
		ss.la = newLookahead(len(list), n, func(i int) loadedTracks {
			if err := ctxErr(ctx); err != nil {
				return loadedTracks{err: err}
			}
			lt := loadedTracks{st: readStats{localOnly: ss.st.localOnly}}
			lt.load(s, list[i], mint, readMaxt, ss.chunks)
			return lt
		})
	}
	return ss
}

// tierLookahead is how many series a Select of a store with a tier loads
// ahead of its reader (ranged GETs in flight at once).
const tierLookahead = 16

// loadedTracks is one series' samples as a lookahead loaded them.
type loadedTracks struct {
	smps   []Sample
	parts  []FloatPart // with chunks (WithXORChunks): the floats, smps nil
	n      int         // floats, in smps or parts
	hists  []HistogramSample
	starts seriesStarts
	st     readStats
	err    error
}

// load reads a series' samples of every kind in [mint, maxt], floats as
// chunks where they can be when chunks is set (then without the floats'
// start timestamps: a streamed answer has no place for them).
func (lt *loadedTracks) load(s *Store, ms *memSeries, mint, maxt int64, chunks bool) {
	if !chunks {
		lt.smps, lt.hists, lt.starts, lt.err = loadTracks(s, ms, mint, maxt, &lt.st)
		lt.n = len(lt.smps)
		return
	}
	if lt.parts, lt.smps, lt.n, lt.err = readFloatParts(s, ms, mint, maxt, &lt.st); lt.err != nil {
		return
	}
	var hsts []StartTime
	if lt.hists, hsts, lt.err = readTrack(s, histograms, ms, mint, maxt, &lt.st); lt.err == nil {
		lt.starts.hists = startsFor(histograms, hsts, lt.hists)
	}
}

// loadTracks reads a series' samples of every kind in [mint, maxt], with
// their start timestamps.
func loadTracks(s *Store, ms *memSeries, mint, maxt int64, st *readStats) ([]Sample, []HistogramSample, seriesStarts, error) {
	var sts seriesStarts
	smps, fsts, err := readTrack(s, floats, ms, mint, maxt, st)
	if err != nil {
		return nil, nil, sts, err
	}
	hists, hsts, err := readTrack(s, histograms, ms, mint, maxt, st)
	if err != nil {
		return nil, nil, sts, err
	}
	sts.floats, sts.hists = startsFor(floats, fsts, smps), startsFor(histograms, hsts, hists)
	return smps, hists, sts, nil
}

// matchSeries returns the series matching ms, in id order (sortByLabels
// sorts them once a query limit has passed them).
func (s *Store) matchSeries(ms []*labels.Matcher) []*memSeries {
	r := s.reg
	r.mu.RLock()
	ids := r.ix.selectIDs(ms)
	list := make([]*memSeries, len(ids))
	for i, id := range ids {
		list[i] = r.ix.series[id]
	}
	r.mu.RUnlock()
	return list
}

// sortByLabels returns the label sets of list, and list, both sorted by
// labels. The labels are built allChunk series at a time under the
// registry's read lock, so a wide query does not hold it (and the commits
// queued behind a new series' write lock) for its whole length; a series
// removed meanwhile still reads right (symbols).
func (s *Store) sortByLabels(list []*memSeries) ([]*memSeries, []labels.Labels) {
	if len(list) == 0 {
		return list, nil
	}
	type match struct {
		ms   *memSeries
		lset labels.Labels
	}
	found := make([]match, len(list))
	var sb labels.ScratchBuilder
	r := s.reg
	for lo := 0; lo < len(list); lo += allChunk {
		r.mu.RLock()
		for i := lo; i < min(lo+allChunk, len(list)); i++ {
			found[i] = match{ms: list[i], lset: r.ix.labels(&sb, list[i])}
		}
		r.mu.RUnlock()
	}
	slices.SortFunc(found, func(a, b match) int { return labels.Compare(a.lset, b.lset) })
	lsets := make([]labels.Labels, len(found))
	for i, f := range found {
		list[i], lsets[i] = f.ms, f.lset
	}
	return list, lsets
}

// LabelNames returns the sorted label names of the series matching ms (of
// every series without matchers).
func (s *Store) LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.reg.mu.RLock()
	defer s.reg.mu.RUnlock()
	ix := s.reg.ix
	if len(ms) == 0 {
		return ix.labelNames(nil, true), nil
	}
	return ix.labelNames(ix.selectIDs(ms), false), nil
}

// LabelValues returns the sorted values of label name among the series
// matching ms (among every series without matchers).
func (s *Store) LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.reg.mu.RLock()
	defer s.reg.mu.RUnlock()
	ix := s.reg.ix
	if len(ms) == 0 {
		return ix.labelValues(name, nil, true), nil
	}
	return ix.labelValues(name, ix.selectIDs(ms), false), nil
}

// Series returns the label sets of the series matching ms, sorted, whether
// or not they hold samples.
func (s *Store) Series(ctx context.Context, ms ...*labels.Matcher) ([]labels.Labels, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	list := s.matchSeries(ms)
	if s.opts.MaxQuerySeries > 0 && len(list) > s.opts.MaxQuerySeries {
		return nil, fmt.Errorf("%w: %d series match, limit %d", ErrQueryLimit, len(list), s.opts.MaxQuerySeries)
	}
	_, lsets := s.sortByLabels(list)
	return lsets, nil
}

// readTrack returns the series' samples of kind k in [mint, maxt], sorted,
// one per timestamp (the one stored first wins: file blocks in file order,
// then the flushing buffer, then the head). The head is copied before the
// files are read: a flush running meanwhile moves samples from head to
// file, so they are seen at least once (twice at worst, and merged). A
// file that disappears between the listing and its read was deleted by
// retention (expired) or replaced by a tier merge (its samples are now in
// an earlier file, maybe read before the merge): when the track's files
// changed meanwhile, the read starts again from a fresh listing.
//
// st (nil: not counted) counts what is read from the object store; with
// st.localOnly, files that exist only there are skipped.
func readTrack[S any](s *Store, k kind[S], ms *memSeries, mint, maxt int64, st *readStats) ([]S, []StartTime, error) {
	const attempts = 5
	for i := 1; ; i++ {
		out, sts, listed, missing, err := readTrackOnce(s, k, ms, mint, maxt, st)
		if err != nil || !missing || i == attempts {
			return out, sts, err
		}
		ms.mu.Lock()
		tr := k.track(ms, false)
		same := tr != nil && slices.Equal(tr.files(), listed)
		ms.mu.Unlock()
		if same {
			return out, sts, nil // retention is deleting it: expired data
		}
	}
}

// readTrackOnce is one attempt of readTrack; it also returns the track's
// files it listed and whether a listed file was missing.
func readTrackOnce[S any](s *Store, k kind[S], ms *memSeries, mint, maxt int64, st *readStats) (out []S, sts []StartTime, listed []int64, missing bool, err error) {
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil {
		ms.mu.Unlock()
		return nil, nil, nil, false, nil
	}
	flushing := inRange(k, nil, tr.flushingBuf(), mint, maxt)
	head := tr.head.inRange(k, nil, mint, maxt)
	var stRuns [][]StartTime
	memSts := [2][]StartTime{slices.Clone(startsIn(tr.flushingStarts(), mint, maxt)), slices.Clone(startsIn(tr.headStarts(), mint, maxt))}
	files := filesInRange(tr, mint, maxt)
	listed = slices.Clone(tr.files())
	ms.mu.Unlock()

	var runs [][]S
	var fcs []*fileChunks
	var room []int
	if k.xorHead() {
		fcs, room = keptRuns(s, k, ms, files, mint, maxt, st, len(flushing)+len(head))
	}
	kept := -1 // runs[kept] is the last run of kept chunks, while it is the last run
	for i, f := range files {
		if st != nil && st.localOnly {
			if _, only := s.tier.bucketOnly(k.id(), ms.ref, f.start); only {
				continue
			}
		}
		if fcs != nil {
			if fc := fcs[i]; fc != nil {
				// Its kept XOR chunks, not the file (select_kept.go),
				// appended to the run of the file before when that was
				// kept too and this one's samples follow it.
				var prev []S
				if kept >= 0 && kept == len(runs)-1 {
					prev = runs[kept]
				} else {
					prev = make([]S, 0, room[i])
				}
				run, err := keptRun(k, fc, mint, maxt, prev)
				if err != nil {
					return nil, nil, listed, false, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, filePath(s.dir, k, ms.ref, f.start), err)
				}
				switch n := len(prev); {
				case len(run) == n:
				case n > 0 && k.ts(run[n]) <= k.ts(run[n-1]):
					// Not after it (files overlap after a backfill): two
					// runs for mergeRuns, each its own part of the array.
					runs[kept] = run[:n:n]
					runs = append(runs, run[n:])
					kept = len(runs) - 1
				case n > 0:
					runs[kept] = run
				default:
					runs = append(runs, run)
					kept = len(runs) - 1
				}
				if len(fc.chunks) > 0 && !f.minKnown && f.sealed {
					ms.mu.Lock()
					if slices.Contains(tr.files(), f.start) {
						noteFileMin(tr, f.start, fc.chunks[0].MinT)
					}
					ms.mu.Unlock()
				}
				continue
			}
		}
		path := filePath(s.dir, k, ms.ref, f.start)
		lo, _, ok, err := readFileStarts(k, s.readers, path, mint, maxt, st, func(run []S, sts []StartTime) error {
			runs = append(runs, run)
			if len(sts) > 0 {
				stRuns = append(stRuns, sts)
			}
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			missing = true
			continue
		}
		if err != nil {
			return nil, nil, listed, false, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, path, err)
		}
		// Cache the lower bound of sealed files only: the newest file may
		// take an older sample between this read and the store.
		if ok && !f.minKnown && f.sealed {
			ms.mu.Lock()
			if slices.Contains(tr.files(), f.start) {
				noteFileMin(tr, f.start, lo)
			}
			ms.mu.Unlock()
		}
	}
	for _, r := range [][]S{flushing, head} {
		if len(r) == 0 {
			continue
		}
		last := len(runs) - 1
		if last >= 0 && last == kept && k.ts(r[0]) > k.ts(runs[last][len(runs[last])-1]) {
			// After the kept run, in the room keptRun left for it.
			runs[last] = append(runs[last], r...)
			continue
		}
		runs = append(runs, r)
	}
	for _, m := range memSts {
		if len(m) > 0 {
			stRuns = append(stRuns, m)
		}
	}
	return mergeRuns(k, runs), mergeStarts(stRuns), listed, missing, nil
}

// mergeRuns merges sorted runs into one sorted run, keeping the first
// sample for each timestamp (earlier runs win). Runs that follow each other
// in time (the usual case: one block after another) are concatenated.
func mergeRuns[S any](k kind[S], runs [][]S) []S {
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return dedupeSorted(k, runs[0])
	}
	first := func(r []S) int64 { return k.ts(r[0]) }
	last := func(r []S) int64 { return k.ts(r[len(r)-1]) }
	// Sort runs by first timestamp (stable, so run order decides ties).
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return first(runs[order[a]]) < first(runs[order[b]]) })
	disjoint := true
	for i := 1; i < len(order); i++ {
		if first(runs[order[i]]) <= last(runs[order[i-1]]) {
			disjoint = false
			break
		}
	}
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	out := make([]S, 0, total)
	if disjoint {
		for _, i := range order {
			out = append(out, runs[i]...)
		}
		return dedupeSorted(k, out)
	}
	// k-way merge; k is small (blocks in range plus head), so a linear scan
	// for the smallest head beats a heap.
	pos := make([]int, len(runs))
	for {
		best := -1
		for i, r := range runs {
			if pos[i] < len(r) && (best < 0 || k.ts(r[pos[i]]) < k.ts(runs[best][pos[best]])) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		smp := runs[best][pos[best]]
		pos[best]++
		if n := len(out); n > 0 && k.ts(out[n-1]) == k.ts(smp) {
			continue
		}
		out = append(out, smp)
	}
	return out
}

// dedupeSorted drops repeated timestamps of a sorted run, keeping the first.
func dedupeSorted[S any](k kind[S], r []S) []S {
	for i := 1; i < len(r); i++ {
		if k.ts(r[i]) == k.ts(r[i-1]) {
			out := r[:i]
			for _, smp := range r[i+1:] {
				if k.ts(smp) != k.ts(out[len(out)-1]) {
					out = append(out, smp)
				}
			}
			return out
		}
	}
	return r
}

// seriesSet loads the selected series in order, a few ahead of its
// reader (lookahead) when there is more than one.
type seriesSet struct {
	s          *Store
	ctx        context.Context
	list       []*memSeries
	lsets      []labels.Labels // list's
	mint, maxt int64
	readMaxt   int64 // maxt, or later with StartTimeZeroSamples
	i          int
	cur        *loadedSeries
	total      int64
	err        error
	st         readStats // what the object store served (tier_read.go)
	observed   bool
	la         *lookahead[loadedTracks] // with a tier: series loaded ahead
	chunks     bool                     // WithXORChunks
}

func (ss *seriesSet) Next() bool {
	if ss.err != nil {
		return false
	}
	if !ss.next() {
		ss.observe()
		return false
	}
	return true
}

// observe reports the set's object store reads once, when it ends.
func (ss *seriesSet) observe() {
	if !ss.observed {
		ss.observed = true
		ss.s.tier.observeQuery(&ss.st)
	}
}

func (ss *seriesSet) next() bool {
	for ss.i+1 < len(ss.list) {
		ss.i++
		if err := ctxErr(ss.ctx); err != nil {
			ss.err = err
			return false
		}
		ms := ss.list[ss.i]
		var lt loadedTracks
		if ss.la != nil {
			lt = ss.la.get(ss.i)
			ss.st.bucketBytes += lt.st.bucketBytes
			ss.st.bucketBlocks += lt.st.bucketBlocks
		} else {
			lt.st.localOnly = ss.st.localOnly
			lt.load(ss.s, ms, ss.mint, ss.readMaxt, ss.chunks)
			ss.st.bucketBytes += lt.st.bucketBytes
			ss.st.bucketBlocks += lt.st.bucketBlocks
		}
		if lt.err != nil {
			ss.err = lt.err
			return false
		}
		if ss.s.opts.StartTimeZeroSamples { // never with chunks (Select)
			lt.smps, lt.hists, lt.starts = withZeroSamplesIn(lt.smps, lt.hists, lt.starts, ss.mint, ss.maxt, ss.s.opts.MinTimestamp)
			lt.n = len(lt.smps)
		}
		if lt.n == 0 && len(lt.hists) == 0 {
			continue
		}
		ss.total += int64(lt.n + len(lt.hists))
		if lim := ss.s.opts.MaxQuerySamples; lim > 0 && ss.total > lim {
			ss.err = fmt.Errorf("%w: more than %d samples selected", ErrQueryLimit, lim)
			return false
		}
		ss.cur = &loadedSeries{lset: ss.lsets[ss.i], samples: lt.smps, parts: lt.parts, n: lt.n, hists: lt.hists, starts: lt.starts}
		return true
	}
	return false
}

func (ss *seriesSet) At() Series   { return ss.cur }
func (ss *seriesSet) Err() error   { return ss.err }
func (ss *seriesSet) Close() error { ss.observe(); ss.list = nil; ss.cur = nil; return nil }

// loadedSeries is one series with its selected samples of every kind.
type loadedSeries struct {
	lset    labels.Labels
	samples []Sample
	parts   []FloatPart // the floats as chunks (WithXORChunks); samples nil
	n       int         // floats in parts
	hists   []HistogramSample
	starts  seriesStarts
}

func (l *loadedSeries) Labels() labels.Labels { return l.lset }

// Iterator returns the series' floats; parts' chunks are decoded (once).
func (l *loadedSeries) Iterator() SampleIterator {
	if l.parts != nil {
		ss, err := samplesOfParts(l.parts, l.n)
		if err != nil {
			return &floatIterator{i: -1, err: err}
		}
		l.samples, l.parts = ss, nil
	}
	return &floatIterator{s: l.samples, i: -1}
}

// FloatParts returns the floats as parts, nil when they are not chunks
// (ChunkedSeries).
func (l *loadedSeries) FloatParts() []FloatPart { return l.parts }

// HistogramIterator returns the series' histograms (HistogramSeries).
func (l *loadedSeries) HistogramIterator() HistogramIterator {
	return &histIterator{s: l.hists, i: -1}
}

type floatIterator struct {
	s   []Sample
	i   int
	err error
}

func (it *floatIterator) Next() bool           { it.i++; return it.i < len(it.s) }
func (it *floatIterator) At() (int64, float64) { return it.s[it.i].T, it.s[it.i].V }
func (it *floatIterator) Err() error           { return it.err }

type histIterator struct {
	s []HistogramSample
	i int
}

func (it *histIterator) Next() bool          { it.i++; return it.i < len(it.s) }
func (it *histIterator) At() HistogramSample { return it.s[it.i] }
func (it *histIterator) Err() error          { return nil }

type errSeriesSet struct{ err error }

func (e *errSeriesSet) Next() bool   { return false }
func (e *errSeriesSet) At() Series   { return nil }
func (e *errSeriesSet) Err() error   { return e.err }
func (e *errSeriesSet) Close() error { return nil }
