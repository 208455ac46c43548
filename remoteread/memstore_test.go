package remoteread

import (
	"context"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// memStore is a stand-in Appender+Querier used until the real store is
// usable; it keeps exact float bits and sorts series by labels like the store.
type memStore struct {
	mu     sync.Mutex
	series map[string]*memSeries
}

type memSeries struct {
	lset    labels.Labels
	samples []actastore.Sample
}

func newMemStore() *memStore { return &memStore{series: map[string]*memSeries{}} }

func (m *memStore) Append(_ context.Context, batch []actastore.SeriesSamples) (actastore.AppendResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ss := range batch {
		k := ss.Labels.String()
		s := m.series[k]
		if s == nil {
			s = &memSeries{lset: ss.Labels}
			m.series[k] = s
		}
		s.samples = append(s.samples, ss.Samples...)
		sort.SliceStable(s.samples, func(i, j int) bool { return s.samples[i].T < s.samples[j].T })
		n += len(ss.Samples)
	}
	return actastore.AppendResult{SamplesWritten: n}, nil
}

func (m *memStore) Select(_ context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*memSeries
outer:
	for _, s := range m.series {
		for _, mt := range ms {
			if !mt.Matches(s.lset.Get(mt.Name)) {
				continue outer
			}
		}
		var smp []actastore.Sample
		for _, x := range s.samples {
			if x.T >= mint && x.T <= maxt {
				smp = append(smp, x)
			}
		}
		if len(smp) > 0 {
			out = append(out, &memSeries{s.lset, smp})
		}
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].lset, out[j].lset) < 0 })
	return &memSet{list: out, i: -1}
}

type memSet struct {
	list []*memSeries
	i    int
}

func (s *memSet) Next() bool               { s.i++; return s.i < len(s.list) }
func (s *memSet) At() actastore.Series     { return s.list[s.i] }
func (s *memSet) Err() error               { return nil }
func (s *memSet) Close() error             { return nil }
func (s *memSeries) Labels() labels.Labels { return s.lset }
func (s *memSeries) Iterator() actastore.SampleIterator {
	return &memIter{s: s.samples, i: -1}
}

type memIter struct {
	s []actastore.Sample
	i int
}

func (it *memIter) Next() bool           { it.i++; return it.i < len(it.s) }
func (it *memIter) At() (int64, float64) { return it.s[it.i].T, it.s[it.i].V }
func (it *memIter) Err() error           { return nil }
