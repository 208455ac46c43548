package actastore

import (
	"github.com/prometheus/prometheus/model/labels"
)

// MergeSeriesSets merges sorted series sets into one: series of the same
// label set become one, their samples (float and histogram) merged by
// timestamp, the earlier set's sample winning a timestamp two sets hold.
// Each set must be sorted by labels (Select's order). A query instance
// merges what the bucket holds with what live writers hold locally.
func MergeSeriesSets(sets ...SeriesSet) SeriesSet {
	if len(sets) == 1 {
		return sets[0]
	}
	m := &mergedSet{sets: sets, heads: make([]Series, len(sets))}
	for i, s := range sets {
		if s.Next() {
			m.heads[i] = s.At()
		} else if err := s.Err(); err != nil {
			m.err = err
		}
	}
	return m
}

type mergedSet struct {
	sets  []SeriesSet
	heads []Series // the next series of each set; nil when it is done
	cur   Series
	err   error
}

func (m *mergedSet) Next() bool {
	if m.err != nil {
		return false
	}
	var lowest labels.Labels
	found := false
	for _, h := range m.heads {
		if h != nil && (!found || labels.Compare(h.Labels(), lowest) < 0) {
			lowest, found = h.Labels(), true
		}
	}
	if !found {
		return false
	}
	var fruns [][]Sample
	var hruns [][]HistogramSample
	var fsts, hsts [][]StartTime
	for i, h := range m.heads {
		if h == nil || !labels.Equal(h.Labels(), lowest) {
			continue
		}
		fs, hs, err := drain(h)
		if err != nil {
			m.err = err
			return false
		}
		if len(fs) > 0 {
			fruns = append(fruns, fs)
		}
		if len(hs) > 0 {
			hruns = append(hruns, hs)
		}
		if sts, ok := h.(StartTimeSeries); ok {
			f, hh := sts.StartTimes()
			fsts, hsts = append(fsts, f), append(hsts, hh)
		}
		m.heads[i] = nil
		if m.sets[i].Next() {
			m.heads[i] = m.sets[i].At()
		} else if err := m.sets[i].Err(); err != nil {
			m.err = err
			return false
		}
	}
	l := &loadedSeries{lset: lowest, samples: mergeRuns(floats, fruns), hists: mergeRuns(histograms, hruns)}
	// The start timestamps of the samples that won (earlier sets win).
	l.starts.floats = startsFor(floats, mergeStarts(fsts), l.samples)
	l.starts.hists = startsFor(histograms, mergeStarts(hsts), l.hists)
	m.cur = l
	return true
}

// drain reads a series' samples of both kinds.
func drain(s Series) ([]Sample, []HistogramSample, error) {
	var fs []Sample
	it := s.Iterator()
	for it.Next() {
		t, v := it.At()
		fs = append(fs, Sample{T: t, V: v})
	}
	if err := it.Err(); err != nil {
		return nil, nil, err
	}
	var hs []HistogramSample
	if h, ok := s.(HistogramSeries); ok {
		hit := h.HistogramIterator()
		for hit.Next() {
			hs = append(hs, hit.At())
		}
		if err := hit.Err(); err != nil {
			return nil, nil, err
		}
	}
	return fs, hs, nil
}

func (m *mergedSet) At() Series { return m.cur }
func (m *mergedSet) Err() error { return m.err }

func (m *mergedSet) Close() error {
	var first error
	for _, s := range m.sets {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// NewSeries is a Series of given samples (sorted by timestamp, one per
// timestamp), for adapters of other stores (a remote-read client).
func NewSeries(lset labels.Labels, samples []Sample, hists []HistogramSample) HistogramSeries {
	return &loadedSeries{lset: lset, samples: samples, hists: hists}
}

// NewSeriesSet is a SeriesSet of given series (sorted by labels), ending
// with err.
func NewSeriesSet(series []Series, err error) SeriesSet {
	return &sliceSet{series: series, i: -1, err: err}
}

type sliceSet struct {
	series []Series
	i      int
	err    error
}

func (s *sliceSet) Next() bool {
	s.i++
	return s.i < len(s.series)
}
func (s *sliceSet) At() Series { return s.series[s.i] }
func (s *sliceSet) Err() error {
	if s.i >= len(s.series) {
		return s.err
	}
	return nil
}
func (s *sliceSet) Close() error { return nil }

// Failed is the set's error, known before it is iterated.
func (s *sliceSet) Failed() error { return s.err }
