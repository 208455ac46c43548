package actastore

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// A query over more files than the reader cache holds, repeated, keeps
// hitting the readers cached (an LRU would miss every one of them: each
// open evicted the file the next query wanted first), stays within the
// bound, and files read more often since take the cache over.
func TestReaderCacheCyclicScan(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 8, MaintenanceInterval: -1})
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
	// The 4 files left out (which: the Select's lookahead opened the first
	// pass's files a few at once), read 4 times each as the 8 cached, are
	// refused while they tie, admitted once read more often, then hit.
	out := ""
	for i := range 12 {
		path := seriesFilePath(s.dir, refOf(t, s, batch[i].Labels), 1000)
		s.readers.mu.Lock()
		if _, ok := s.readers.m[path]; !ok {
			out += string(rune('a' + i))
		}
		s.readers.mu.Unlock()
	}
	if len(out) != 4 {
		t.Fatalf("files %q not cached, want 4", out)
	}
	late := labels.MustNewMatcher(labels.MatchRegexp, "i", "["+out+"]")
	for pass, want := range []int64{0, 0, 4} {
		if hits := scan(late); hits != want {
			t.Fatalf("read %d of the later files hit %d cached readers, want %d", pass+1, hits, want)
		}
	}
	if got := s.readers.refused.Load(); got != 4*4+4 {
		t.Fatalf("%d opens refused admission, want 20 (4 files in each of the 4 scans of all, then 4 ties)", got)
	}
}
