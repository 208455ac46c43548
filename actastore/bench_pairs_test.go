package actastore

import (
	"testing"
	"time"
)

// BenchmarkCommitLabelPairs: one op commits one sample for each of 2000
// known series handed as label pairs (what the remote-write receiver
// sends): known series are found from the bytes, without building labels.
func BenchmarkCommitLabelPairs(b *testing.B) {
	const n = 2000
	ls := benchLabels(n)
	s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1})
	defer s.abandon()
	pairs := make([][]byte, n)
	for i, l := range ls {
		pairs[i] = pairsOfLabels(l)
	}
	smps := make([]Sample, n)
	var batch Batch
	step := 0
	commit := func() {
		batch.Reset()
		for i := range pairs {
			smps[i] = Sample{T: int64(step) * 15000, V: float64(i)}
			batch.Series = append(batch.Series, SeriesData{LabelPairs: pairs[i], Samples: smps[i : i+1]})
		}
		step++
		if res, err := s.Commit(ctx, &batch); err != nil || res.Samples.Written != n {
			b.Fatal(err, res)
		}
	}
	commit()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		commit()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "samples/s")
}
