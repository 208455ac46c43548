package actastore

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkHeadMemoryStarts reports heap bytes per active series holding
// 10 samples 15 s apart in the head, sent without start timestamps and with
// one on every sample (a counter's, constant), the shape issue 17 measures.
func BenchmarkHeadMemoryStarts(b *testing.B) {
	const n, steps = 50_000, 10
	for _, with := range []bool{false, true} {
		name := "without"
		if with {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			for it := 0; it < b.N; it++ {
				ls := benchLabels(n)
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				s := openT(b, b.TempDir(), Options{MaxHeadAge: time.Hour, BlockRows: 4096})
				for step := range steps {
					batch := make([]SeriesSamples, n)
					ts := 1_700_000_000_000 + int64(step)*15000
					for i := range batch {
						batch[i] = SeriesSamples{Labels: ls[i], Samples: []Sample{{T: ts, V: float64(i + step)}}}
						if with {
							batch[i].Starts = []StartTime{{T: ts, ST: 1_699_999_000_000}}
						}
					}
					mustAppend(b, s, batch)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heapB/series")
				b.ReportMetric(float64(s.hd.bytes.Load())/n, "headAccountedB/series")
				runtime.KeepAlive(ls)
				s.abandon()
			}
		})
	}
}
