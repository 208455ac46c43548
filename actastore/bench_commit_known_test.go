package actastore

import (
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// BenchmarkCommitKnownSeries: one op commits one batch of 2,000 known
// series (one sample each, as label pairs, what the remote-write receiver
// sends) out of 10,000, the next 2,000 each op, so the series' memory is
// not all in cache, as in make bench. The WAL is fsynced every second
// (SyncInterval), so the figures are the commit's CPU work, not the disk's
// latency; cpu-ns/sample is the process's CPU time per sample.
func BenchmarkCommitKnownSeries(b *testing.B) {
	const (
		series = 10_000
		batch  = 2_000
	)
	ls := benchLabels(series)
	s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1,
		WALSync: SyncInterval, WALSyncInterval: time.Second})
	defer s.abandon()
	pairs := make([][]byte, series)
	for i, l := range ls {
		l.Range(func(lb labels.Label) { pairs[i] = AppendLabelPair(pairs[i], []byte(lb.Name), []byte(lb.Value)) })
	}
	smps := make([]Sample, batch)
	var bt Batch
	op := 0
	commit := func() {
		bt.Reset()
		for j := range batch {
			e := op*batch + j
			i, k := e%series, e/series
			smps[j] = Sample{T: int64(k) * 15000, V: realisticValue(i, k)}
			bt.Series = append(bt.Series, SeriesData{LabelPairs: pairs[i], Samples: smps[j : j+1]})
		}
		op++
		if res, err := s.Commit(ctx, &bt); err != nil || res.Samples.Written != batch {
			b.Fatal(err, res)
		}
	}
	for range series / batch {
		commit() // create every series
	}
	b.ReportAllocs()
	cpu0 := cpuNow(b)
	b.ResetTimer()
	for range b.N {
		commit()
	}
	b.StopTimer()
	n := float64(batch * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(cpuNow(b)-cpu0)/n, "cpu-ns/sample")
}

// cpuNow is the process's user and system CPU time so far, ns.
func cpuNow(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
