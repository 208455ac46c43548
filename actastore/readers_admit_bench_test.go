package actastore

import (
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// BenchmarkReaderCacheHotAfterScan is make bench's read shape at small
// scale: a cache of 200 readers, 204 series files of 6 h of 15 s samples
// (12 blocks each), three passes of a read of every series (which fill the
// cache and leave the last 4 files out), then the last series read again
// and again over its last hour. ns/op is that single-series read;
// misses/op says whether it opens its file every time.
// go test -run '^$' -bench ReaderCacheHotAfterScan -benchtime 2000x ./actastore
func BenchmarkReaderCacheHotAfterScan(b *testing.B) {
	for _, chunked := range []bool{false, true} {
		name := "samples"
		if chunked {
			name = "xor-chunks"
		}
		b.Run(name, func(b *testing.B) {
			const files, capacity, steps = 204, 200, 6 * 240
			s := openT(b, b.TempDir(), Options{MaxOpenReaders: capacity, BlockRows: 120, MaintenanceInterval: -1, Logger: quiet})
			defer s.abandon()
			for i := range files {
				smps := make([]Sample, steps)
				for j := range smps {
					smps[j] = Sample{T: int64(j) * 15000, V: realisticValue(i, j)}
				}
				mustAppend(b, s, []SeriesSamples{{Labels: labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%04d", i)), Samples: smps}})
			}
			if err := s.FlushAll(); err != nil {
				b.Fatal(err)
			}
			c := ctx
			if chunked {
				c = WithXORChunks(ctx)
			}
			read := func(mint int64, m *labels.Matcher) int {
				ss := s.Select(c, mint, math.MaxInt64, m)
				defer ss.Close()
				n := 0
				for ss.Next() {
					it := ss.At().Iterator()
					for it.Next() {
						n++
					}
				}
				if ss.Err() != nil {
					b.Fatal(ss.Err())
				}
				return n
			}
			all := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
			for range 3 {
				if n := read(math.MinInt64, all); n != files*steps {
					b.Fatalf("a read of every series returned %d samples, want %d", n, files*steps)
				}
			}
			hot := labels.MustNewMatcher(labels.MatchEqual, "i", fmt.Sprintf("%04d", files-1))
			mint := int64(steps-240) * 15000
			m0 := s.readers.misses.Load()
			if n := read(mint, hot); n != 240 {
				b.Fatalf("the hot series' last hour returned %d samples, want 240", n)
			}
			if s.readers.misses.Load() == m0 {
				b.Fatal("the hot series' file was cached after the wide reads: not the shape measured")
			}
			h0, m0 := s.readers.hits.Load(), s.readers.misses.Load()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if n := read(mint, hot); n != 240 {
					b.Fatalf("the hot series' last hour returned %d samples, want 240", n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(s.readers.misses.Load()-m0)/float64(b.N), "misses/op")
			b.ReportMetric(float64(s.readers.hits.Load()-h0)/float64(b.N), "hits/op")
		})
	}
}
