package actastore

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// AppendExtras stores native histograms, exemplars and metadata durably
// before it returns (ExtrasAppender). Histograms follow the float sample
// rules (doc.go): exact duplicates count as written, another histogram at
// a stored timestamp is ErrDuplicateSample, the out-of-order window applies;
// a histogram failing model/histogram's Validate is ErrInvalidHistogram
// (stale markers are exempt). Exemplars keep the newest 32 per series,
// metadata the latest per metric family name.
func (s *Store) AppendExtras(ctx context.Context, b ExtrasBatch) (ExtrasResult, error) {
	return s.hist.appendExtras(ctx, b)
}

// read returns a series' histograms in [mint, maxt], sorted, one per
// timestamp (the first stored wins, as for floats).
func (h *histStore) read(ms *memSeries, mint, maxt int64) ([]HistogramSample, error) {
	if h == nil {
		return nil, nil
	}
	h.smu.Lock()
	st := h.series[ms.ref]
	h.smu.Unlock()
	if st == nil {
		return nil, nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	st.mu.Lock()
	files := slices.Clone(st.files)
	st.mu.Unlock()
	var runs [][]HistogramSample
	for i, start := range files {
		// Every sample of a file is older than the next file's start
		// (out-of-order ones may be older than its own): skip by name.
		if i+1 < len(files) && files[i+1] <= mint {
			continue
		}
		r, err := readHistFile(histFilePath(h.s.dir, ms.ref, start), mint, maxt)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r...)
	}
	st.mu.Lock()
	var head []HistogramSample
	for _, x := range st.head {
		if x.T >= mint && x.T <= maxt {
			head = append(head, x)
		}
	}
	st.mu.Unlock()
	runs = append(runs, head)
	var out []HistogramSample
	for _, r := range runs {
		out = append(out, r...)
	}
	slices.SortStableFunc(out, func(a, b HistogramSample) int { return cmpInt64(a.T, b.T) })
	return slices.CompactFunc(out, func(a, b HistogramSample) bool { return a.T == b.T }), nil
}

// HistogramIterator returns the series' histograms (HistogramSeries).
func (l *loadedSeries) HistogramIterator() HistogramIterator {
	return &histSliceIterator{s: l.hists, i: -1}
}

type histSliceIterator struct {
	s []HistogramSample
	i int
}

func (it *histSliceIterator) Next() bool          { it.i++; return it.i < len(it.s) }
func (it *histSliceIterator) At() HistogramSample { return it.s[it.i] }
func (it *histSliceIterator) Err() error          { return nil }

// SelectExemplars returns the kept exemplars of matching series in
// [mint, maxt] (ExemplarQuerier).
func (s *Store) SelectExemplars(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesExemplars, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var out []SeriesExemplars
	for _, m := range s.matchSeries(ms) {
		s.hist.smu.Lock()
		st := s.hist.series[m.ref]
		s.hist.smu.Unlock()
		if st == nil {
			continue
		}
		st.mu.Lock()
		s.hist.loadExemplarsLocked(st)
		var es []Exemplar
		for _, e := range st.exemplars {
			if e.T >= mint && e.T <= maxt {
				es = append(es, e)
			}
		}
		st.mu.Unlock()
		if len(es) > 0 {
			slices.SortStableFunc(es, func(a, b Exemplar) int { return cmpInt64(a.T, b.T) })
			out = append(out, SeriesExemplars{Labels: m.lset, Exemplars: es})
		}
	}
	return out, nil
}

// Metadata returns the stored metadata of a metric family, or of all
// families sorted by name when name is "" (MetadataQuerier).
func (s *Store) Metadata(ctx context.Context, name string) ([]NamedMetadata, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.hist.smu.Lock()
	defer s.hist.smu.Unlock()
	if name != "" {
		if m, ok := s.hist.meta[name]; ok {
			return []NamedMetadata{{Name: name, Metadata: m}}, nil
		}
		return nil, nil
	}
	out := make([]NamedMetadata, 0, len(s.hist.meta))
	for n, m := range s.hist.meta {
		out = append(out, NamedMetadata{Name: n, Metadata: m})
	}
	slices.SortFunc(out, func(a, b NamedMetadata) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}
