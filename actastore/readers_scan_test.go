package actastore

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// A query over more files than the reader cache holds, repeated, keeps
// hitting the readers cached (an LRU would miss every one of them: each
// open evicted the file the next query wanted first), stays within the
// bound, and a minute later the files read since take the cache over.
func TestReaderCacheCyclicScan(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 8, MaintenanceInterval: -1})
	var now int64
	s.readers.clock = func() int64 { return now }
	var batch []SeriesSamples
	for i := range 12 {
		batch = append(batch, SeriesSamples{Labels: labels.FromStrings("__name__", "m", "i", string(rune('a'+i))),
			Samples: []Sample{{T: 1000, V: float64(i)}}})
	}
	if _, err := s.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	scan := func(m *labels.Matcher) int64 {
		t.Helper()
		h0 := s.readers.hits.Load()
		ss := s.Select(ctx, math.MinInt64, math.MaxInt64, m)
		n := 0
		for ss.Next() {
			it := ss.At().Iterator()
			for it.Next() {
				n++
			}
		}
		if ss.Err() != nil {
			t.Fatal(ss.Err())
		}
		ss.Close()
		if n == 0 {
			t.Fatal("nothing read")
		}
		if open, _ := s.readers.stats(); open > 8 {
			t.Fatalf("%d readers open, bound 8", open)
		}
		return s.readers.hits.Load() - h0
	}
	all := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	scan(all)
	for range 3 {
		if hits := scan(all); hits != 8 {
			t.Fatalf("a repeated scan of 12 files hit %d cached readers, want 8", hits)
		}
	}
	// A minute on, other files take the cache over.
	now += int64(minResidency)
	late := labels.MustNewMatcher(labels.MatchRegexp, "i", "[i-l]")
	scan(late)
	if hits := scan(late); hits != 4 {
		t.Fatalf("the later files hit %d cached readers, want 4", hits)
	}
}
