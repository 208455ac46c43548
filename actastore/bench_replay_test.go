package actastore

import (
	"testing"
	"time"
)

// BenchmarkReplayFullHead: Open after kill -9 with 2000 series × 2880
// samples (12 h at 15 s: 5.76 M) only in the WAL, the restart
// scenario.
func BenchmarkReplayFullHead(b *testing.B) {
	b.Run("60-a-request", func(b *testing.B) { benchReplayFullHead(b, 60) })
	// One sample a series a request: what live remote write sends, and
	// what acta-bench's kill -9 scenario leaves (23 B a sample in the WAL).
	b.Run("1-a-request", func(b *testing.B) { benchReplayFullHead(b, 1) })
}

func benchReplayFullHead(b *testing.B, per int) {
	const n, steps = 2000, 2880
	ls := benchLabels(n)
	dir := b.TempDir()
	// A head bound high enough that nothing flushes by size (flush.go).
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: 24 * time.Hour, MaintenanceInterval: -1, MaxHeadBytes: 16 << 30}
	s := openT(b, dir, opts)
	for step := 0; step < steps; step += per {
		batch := make([]SeriesSamples, n)
		for i := range batch {
			smps := make([]Sample, per)
			for j := range smps {
				smps[j] = Sample{T: int64(step+j) * 15000, V: realisticValue(i, step+j)}
			}
			batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
		}
		mustAppend(b, s, batch)
	}
	walBytes := s.Stats().WALBytes
	s.abandon()
	b.ResetTimer()
	for range b.N {
		s2, err := Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st := s2.Stats(); st.HeadSamples != n*steps {
			b.Fatalf("stats %+v", st)
		}
		s2.abandon()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*steps)/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
	b.ReportMetric(float64(walBytes)/float64(n*steps), "WAL-B/sample")
}
