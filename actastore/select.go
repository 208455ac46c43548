package actastore

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	return &seriesSet{s: s, ctx: ctx, list: list, mint: mint, maxt: maxt, i: -1}
}

// matchSeries returns the series matching ms, sorted by labels.
func (s *Store) matchSeries(ms []*labels.Matcher) []*memSeries {
	s.mu.RLock()
	ids := s.ix.selectIDs(ms)
	list := make([]*memSeries, len(ids))
	for i, id := range ids {
		list[i] = s.ix.series[id]
	}
	s.mu.RUnlock()
	slices.SortFunc(list, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	return list
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(ms) == 0 {
		return s.ix.labelNames(nil, true), nil
	}
	return s.ix.labelNames(s.ix.selectIDs(ms), false), nil
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(ms) == 0 {
		return s.ix.labelValues(name, nil, true), nil
	}
	return s.ix.labelValues(name, s.ix.selectIDs(ms), false), nil
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
	out := make([]labels.Labels, len(list))
	for i, m := range list {
		out[i] = m.lset
	}
	return out, nil
}

// readSeries returns the series' samples in [mint, maxt], sorted, without
// duplicate timestamps. The head is copied before the files are read: a
// flush running meanwhile moves samples from head to file, so they are seen
// at least once (twice at worst, and merged).
func (s *Store) readSeries(ms *memSeries, mint, maxt int64) ([]Sample, error) {
	ms.mu.Lock()
	flushing := samplesInRange(nil, ms.flushing, mint, maxt)
	head := samplesInRange(nil, ms.head, mint, maxt)
	files := filesInRange(ms, mint, maxt)
	ms.mu.Unlock()

	var runs [][]Sample
	if len(files) > 0 {
		ms.fileMu.RLock()
		for _, f := range files {
			path := seriesFilePath(s.dir, ms.ref, f.start)
			lo, ok, err := readSeriesFileMin(path, mint, maxt, func(b block) error {
				if run := b.samplesIn(mint, maxt); len(run) > 0 {
					runs = append(runs, run)
				}
				return nil
			})
			if errors.Is(err, os.ErrNotExist) {
				continue // retention deleted it after the listing: expired data
			}
			if err != nil {
				ms.fileMu.RUnlock()
				return nil, fmt.Errorf("read series %016x file %s: %w", ms.ref, path, err)
			}
			// Cache the lower bound of sealed files only: the newest file
			// may take an older sample between this read and the store.
			if ok && !f.minKnown && f.sealed {
				ms.mu.Lock()
				if ms.fileMin == nil {
					ms.fileMin = make(map[int64]int64)
				}
				if m, known := ms.fileMin[f.start]; !known || lo < m {
					ms.fileMin[f.start] = lo
				}
				ms.mu.Unlock()
			}
		}
		ms.fileMu.RUnlock()
	}
	// File blocks first: for equal timestamps the first run wins, and the
	// file holds what was stored first (see the package doc).
	if len(flushing) > 0 {
		runs = append(runs, flushing)
	}
	if len(head) > 0 {
		runs = append(runs, head)
	}
	return mergeRuns(runs), nil
}

// fileSpan is a series file a Select must open.
type fileSpan struct {
	start    int64
	minKnown bool
	sealed   bool // not the newest: never appended to again
}

// filesInRange lists the series' files that may hold samples in [mint,
// maxt] without opening any: file i holds only samples below the next
// file's start (rotation package doc), and none below its known minimum.
// Called with ms.mu held.
func filesInRange(ms *memSeries, mint, maxt int64) []fileSpan {
	var out []fileSpan
	for i, start := range ms.files {
		if i+1 < len(ms.files) && ms.files[i+1] <= mint {
			continue
		}
		m, known := ms.fileMin[start]
		if known && m > maxt {
			continue
		}
		out = append(out, fileSpan{start: start, minKnown: known, sealed: i+1 < len(ms.files)})
	}
	return out
}

// mergeRuns merges sorted runs into one sorted run, keeping the first
// sample for each timestamp (earlier runs win). Runs that follow each other
// in time (the usual case: one block after another) are concatenated.
func mergeRuns(runs [][]Sample) []Sample {
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return dedupeSorted(runs[0])
	}
	// Sort runs by first timestamp (stable, so run order decides ties).
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return runs[order[a]][0].T < runs[order[b]][0].T })
	disjoint := true
	for k := 1; k < len(order); k++ {
		if runs[order[k]][0].T <= runs[order[k-1]][len(runs[order[k-1]])-1].T {
			disjoint = false
			break
		}
	}
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	out := make([]Sample, 0, total)
	if disjoint {
		for _, k := range order {
			out = append(out, runs[k]...)
		}
		return dedupeSorted(out)
	}
	// k-way merge; k is small (blocks in range plus head), so a linear scan
	// for the smallest head beats a heap.
	pos := make([]int, len(runs))
	for {
		best := -1
		for k, r := range runs {
			if pos[k] < len(r) && (best < 0 || r[pos[k]].T < runs[best][pos[best]].T) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		smp := runs[best][pos[best]]
		pos[best]++
		if n := len(out); n > 0 && out[n-1].T == smp.T {
			continue
		}
		out = append(out, smp)
	}
	return out
}

// dedupeSorted drops repeated timestamps of a sorted run, keeping the first.
func dedupeSorted(r []Sample) []Sample {
	for i := 1; i < len(r); i++ {
		if r[i].T == r[i-1].T {
			out := r[:i]
			for _, smp := range r[i+1:] {
				if smp.T != out[len(out)-1].T {
					out = append(out, smp)
				}
			}
			return out
		}
	}
	return r
}

// seriesSet loads one series at a time.
type seriesSet struct {
	s          *Store
	ctx        context.Context
	list       []*memSeries
	mint, maxt int64
	i          int
	cur        *loadedSeries
	total      int64
	err        error
}

func (ss *seriesSet) Next() bool {
	if ss.err != nil {
		return false
	}
	for ss.i+1 < len(ss.list) {
		ss.i++
		if err := ctxErr(ss.ctx); err != nil {
			ss.err = err
			return false
		}
		ms := ss.list[ss.i]
		smps, err := ss.s.readSeries(ms, ss.mint, ss.maxt)
		if err != nil {
			ss.err = err
			return false
		}
		hists, err := ss.s.hist.read(ms, ss.mint, ss.maxt)
		if err != nil {
			ss.err = err
			return false
		}
		if len(smps) == 0 && len(hists) == 0 {
			continue
		}
		ss.total += int64(len(smps) + len(hists))
		if lim := ss.s.opts.MaxQuerySamples; lim > 0 && ss.total > lim {
			ss.err = fmt.Errorf("%w: more than %d samples selected", ErrQueryLimit, lim)
			return false
		}
		ss.cur = &loadedSeries{lset: ms.lset, samples: smps, hists: hists}
		return true
	}
	return false
}

func (ss *seriesSet) At() Series   { return ss.cur }
func (ss *seriesSet) Err() error   { return ss.err }
func (ss *seriesSet) Close() error { ss.list = nil; ss.cur = nil; return nil }

// loadedSeries is one series with its selected samples.
type loadedSeries struct {
	lset    labels.Labels
	samples []Sample
	hists   []HistogramSample // hist_read.go
}

func (l *loadedSeries) Labels() labels.Labels    { return l.lset }
func (l *loadedSeries) Iterator() SampleIterator { return &sliceIterator{s: l.samples, i: -1} }

type sliceIterator struct {
	s []Sample
	i int
}

func (it *sliceIterator) Next() bool {
	it.i++
	return it.i < len(it.s)
}
func (it *sliceIterator) At() (int64, float64) { return it.s[it.i].T, it.s[it.i].V }
func (it *sliceIterator) Err() error           { return nil }

type errSeriesSet struct{ err error }

func (e *errSeriesSet) Next() bool   { return false }
func (e *errSeriesSet) At() Series   { return nil }
func (e *errSeriesSet) Err() error   { return e.err }
func (e *errSeriesSet) Close() error { return nil }
