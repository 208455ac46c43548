package actastore

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkHeadMemorySamples: what 100k series holding k unflushed samples
// each (15 s apart, realistic counter and gauge values) cost on the heap,
// and what the head accounts for them (headState.bytes).
func BenchmarkHeadMemorySamples(b *testing.B) {
	const n = 100_000
	for _, k := range []int{10, 120} {
		b.Run(map[int]string{10: "samples=10", 120: "samples=120"}[k], func(b *testing.B) {
			for it := 0; it < b.N; it++ {
				ls := benchLabels(n)
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				s := openT(b, b.TempDir(), Options{MaxHeadAge: time.Hour, BlockRows: 4096, MaxOpenFiles: 64})
				batch := make([]SeriesSamples, n)
				smps := make([]Sample, n)
				for step := range k {
					ts := 1_700_000_000_000 + int64(step)*15000
					for i := range batch {
						smps[i] = Sample{T: ts, V: realisticValue(i, step)}
						batch[i] = SeriesSamples{Labels: ls[i], Samples: smps[i : i+1]}
					}
					mustAppend(b, s, batch)
				}
				batch, smps = nil, nil
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
