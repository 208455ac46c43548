package actastore

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
)

// Sets merge by label set; a series in several sets has its samples of
// both kinds merged by timestamp, the earlier set winning a timestamp
// both hold (bit for bit); an error of any set ends the merge with it.
func TestMergeSeriesSets(t *testing.T) {
	a, b, c := labels.FromStrings("__name__", "a"), labels.FromStrings("__name__", "b"), labels.FromStrings("__name__", "c")
	stale := math.Float64frombits(0x7ff0000000000002)
	h := func(ts int64, count uint64) HistogramSample {
		return HistogramSample{T: ts, H: &histogram.Histogram{Count: count, Sum: float64(count), Schema: 0}}
	}
	s1 := NewSeriesSet([]Series{
		NewSeries(a, []Sample{{1, 1}, {3, stale}}, nil),
		NewSeries(c, []Sample{{5, 5}}, []HistogramSample{h(6, 1)}),
	}, nil)
	s2 := NewSeriesSet([]Series{
		NewSeries(a, []Sample{{2, 2}, {3, 30}, {4, 4}}, nil),
		NewSeries(b, []Sample{{9, 9}}, nil),
		NewSeries(c, nil, []HistogramSample{h(6, 99), h(7, 2)}),
	}, nil)
	m := MergeSeriesSets(s1, s2)
	var got []string
	for m.Next() {
		s := m.At().(HistogramSeries)
		line := s.Labels().Get("__name__") + ":"
		it := s.Iterator()
		for it.Next() {
			ts, v := it.At()
			line += " " + fmtSample(ts, v)
		}
		hit := s.HistogramIterator()
		for hit.Next() {
			line += " h" + fmtSample(hit.At().T, float64(hit.At().H.Count))
		}
		got = append(got, line)
	}
	want := []string{"a: 1=3ff0000000000000 2=4000000000000000 3=7ff0000000000002 4=4010000000000000", "b: 9=4022000000000000",
		"c: 5=4014000000000000 h6=3ff0000000000000 h7=4000000000000000"}
	if m.Err() != nil || len(got) != len(want) {
		t.Fatalf("%v %v", got, m.Err())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("series %d: %q, want %q", i, got[i], want[i])
		}
	}
	boom := errors.New("boom")
	m = MergeSeriesSets(NewSeriesSet([]Series{NewSeries(a, []Sample{{1, 1}}, nil)}, nil), NewSeriesSet(nil, boom))
	for m.Next() {
	}
	if !errors.Is(m.Err(), boom) {
		t.Fatalf("error %v", m.Err())
	}
}

func fmtSample(ts int64, v float64) string { return fmt.Sprintf("%d=%016x", ts, math.Float64bits(v)) }
