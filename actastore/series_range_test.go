package actastore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/rotation"
)

// SeriesInRange answers from what the store knows: exactly the series
// with samples in the range while every bound is known (files written
// since Open, the head), and a superset, never a series less, after a
// restart that knows only the file starts (and so lists, until reads or
// appends teach it the bounds, every series whose files might reach the
// range).
func TestSeriesInRange(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour}}
	s := openT(t, dir, opts)
	// Series i: a sample a minute over the first half of hour i%4, then
	// flushed; series 8 and 9 also get hour 5 in the head.
	for i := 0; i < 10; i++ {
		from := day0 + int64(i%4)*hour
		for ts := from; ts < from+hour/2; ts += 60000 {
			clk.Set(ts)
			mustAppend(t, s, []SeriesSamples{{Labels: seriesLabels(i), Samples: []Sample{{T: ts, V: float64(i)}}}})
		}
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for i := 8; i < 10; i++ {
		clk.Set(day0 + 5*hour)
		mustAppend(t, s, []SeriesSamples{{Labels: seriesLabels(i), Samples: []Sample{{T: day0 + 5*hour, V: 1}}}})
	}
	truth := func(s *Store, mint, maxt int64) []string {
		var out []string
		for k := range selectAll(t, s, mint, maxt) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	got := func(s *Store, mint, maxt int64) []string {
		lsets, err := s.SeriesInRange(context.Background(), mint, maxt)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(lsets))
		for i, l := range lsets {
			out[i] = l.String()
		}
		slices.Sort(out)
		return out
	}
	ranges := [][2]int64{}
	for h := int64(-1); h < 8; h++ {
		ranges = append(ranges, [2]int64{day0 + h*hour, day0 + (h+1)*hour - 1}, [2]int64{day0 + h*hour + hour/2, day0 + (h+1)*hour - 1})
	}
	for _, r := range ranges {
		if g, w := got(s, r[0], r[1]), truth(s, r[0], r[1]); !slices.Equal(g, w) {
			t.Fatalf("[%d, %d]: %v, want %v", r[0]-day0, r[1]-day0, g, w)
		}
	}
	if g := got(s, day0+6*hour, day0+7*hour); len(g) != 0 {
		t.Fatalf("after the newest sample: %v", g)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	for _, r := range ranges {
		g, w := got(s, r[0], r[1]), truth(s, r[0], r[1])
		for _, k := range w {
			if !slices.Contains(g, k) {
				t.Fatalf("after a restart, [%d, %d]: %v lacks %s (want a superset of %v)", r[0]-day0, r[1]-day0, g, k, w)
			}
		}
	}
}
