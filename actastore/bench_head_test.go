package actastore

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkHeadMemorySamples: what 100k series holding k unflushed samples
// each (15 s apart, realistic counter and gauge values) cost on the heap,
// and what the head accounts for them (headState.bytes). Nothing flushes.
func BenchmarkHeadMemorySamples(b *testing.B) {
	const n = 100_000
	for _, k := range []int{10, 20, 120} {
		b.Run(fmt.Sprintf("samples=%d", k), func(b *testing.B) {
			for it := 0; it < b.N; it++ {
				ls := benchLabels(n)
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				s := openT(b, b.TempDir(), Options{MaxHeadAge: time.Hour, BlockRows: 4096, MaxOpenFiles: 64, MaxHeadBytes: 16 << 30}) // nothing flushes by size
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

// BenchmarkHeadInsert is the head's share of ingest, without the WAL: one
// op checks (classify) and inserts one sample into each of 10k float
// tracks; every 20 ops (5 minutes of 15 s scrapes, the default head age)
// the heads start again as after a flush. "ooo" sends every tenth sample
// 5 scrapes late.
func BenchmarkHeadInsert(b *testing.B) {
	const n, per = 10_000, 20
	for _, ooo := range []bool{false, true} {
		name := "inorder"
		if ooo {
			name = "ooo"
		}
		b.Run(name, func(b *testing.B) {
			trs := make([]track[Sample], n)
			b.ReportAllocs()
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				step := it % per
				if step == 0 {
					for i := range trs {
						trs[i] = newTrack[Sample]()
					}
				}
				for i := range trs {
					st := step
					if ooo && st >= 5 && (i+st)%10 == 0 {
						st -= 5 // late: the scrape 5 before, not sent then
					} else if ooo && st+5 < per && (i+st+5)%10 == 0 {
						continue // sent 5 scrapes late
					}
					smp := Sample{T: 1_700_000_000_000 + int64(st)*15000, V: realisticValue(i, st)}
					if classify(floats, &trs[i], smp, 0, nil) != verdictAccept {
						b.Fatalf("sample %v of track %d not accepted", smp, i)
					}
					insertAll(floats, &trs[i], []Sample{smp}, 1, 1, false)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
		})
	}
}
