package actastore

import (
	"fmt"
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
func BenchmarkCommitKnownSeries(b *testing.B) { benchCommitKnown(b, benchLabels(10_000)) }

// BenchmarkCommitKnownTargets is BenchmarkCommitKnownSeries with the
// series of 40 scrape targets of 250 series each, so labels repeat across
// series as they do in a Prometheus's remote write (benchLabels gives
// every series an instance of its own).
func BenchmarkCommitKnownTargets(b *testing.B) { benchCommitKnown(b, benchTargetLabels(10_000)) }

// benchTargetLabels: n series of targets of 250 series each, node_exporter
// shaped (a metric name, a cpu and a mode, the target's instance and job).
func benchTargetLabels(n int) []labels.Labels {
	modes := []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}
	ls := make([]labels.Labels, n)
	for i := range ls {
		target, k := i/250, i%250
		ls[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", k/32), "cpu", fmt.Sprint(k/8%4), "mode", modes[k%8],
			"instance", fmt.Sprintf("10.16.%d.%d:9100", target/256, target%256), "job", "node")
	}
	return ls
}

func benchCommitKnown(b *testing.B, ls []labels.Labels) {
	const batch = 2_000
	series := len(ls)
	s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1,
		WALSync: SyncInterval, WALSyncInterval: time.Second})
	defer s.abandon()
	pairs := make([][]byte, series)
	for i, l := range ls {
		pairs[i] = pairsOfLabels(l)
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
