package actastore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkAppendOutOfOrder: one op appends one in-order sample to each of
// 2000 series with 240 samples already flushed; "ooo=1%" also sends, for 1 %
// of the series, a sample inside their flushed range (a new timestamp, so
// it is stored): what duplicate detection against files costs.
func BenchmarkAppendOutOfOrder(b *testing.B) {
	const n, flushed = 2000, 240
	ls := benchLabels(n)
	for _, pct := range []int{0, 1} {
		b.Run(fmt.Sprintf("ooo=%d%%", pct), func(b *testing.B) {
			s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1})
			defer s.abandon()
			batch := make([]SeriesSamples, n)
			for step := 0; step < flushed; step += 60 {
				for i := range batch {
					smps := make([]Sample, 60)
					for j := range smps {
						smps[j] = Sample{T: int64(step+j) * 15000, V: realisticValue(i, step+j)}
					}
					batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
				}
				mustAppend(b, s, batch)
				if err := s.FlushAll(); err != nil {
					b.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			step := flushed
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			total := 0
			for range b.N {
				for i := range batch {
					smps := []Sample{{T: int64(step) * 15000, V: realisticValue(i, step)}}
					if pct > 0 && r.IntN(100) < pct {
						smps = append(smps, Sample{T: int64(r.IntN(flushed))*15000 + 1 + int64(step), V: 1})
					}
					batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
					total += len(smps)
				}
				step++
				mustAppend(b, s, batch)
			}
			b.ReportMetric(float64(total)/time.Since(start).Seconds(), "samples/s")
		})
	}
}
