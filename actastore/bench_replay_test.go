package actastore

import (
	"testing"
	"time"
)

// BenchmarkReplayFullHead: Open after kill -9 with 2000 series × 2880
// samples (12 h at 15 s: 5.76 M) only in the WAL, the restart
// scenario.
func BenchmarkReplayFullHead(b *testing.B) {
	b.Run("60-a-request", func(b *testing.B) { benchReplayFullHead(b, 60, 1) })
	// One sample a series a request: what live remote write sends, and
	// what acta-bench's kill -9 scenario leaves (23 B a sample in the WAL).
	b.Run("1-a-request", func(b *testing.B) { benchReplayFullHead(b, 1, 1) })
	// acta-bench's kill -9 load: two senders of a third and two thirds of
	// the series, each cutting its scrapes into requests of 2,000 samples
	// wherever they fall, their requests alternating in the WAL.
	b.Run("2-senders", func(b *testing.B) { benchReplayFullHead(b, 1, 2) })
}

const replayBenchSeries, replayBenchSteps = 2000, 2880

func benchReplayFullHead(b *testing.B, per, senders int) {
	const n, steps = replayBenchSeries, replayBenchSteps
	dir := b.TempDir()
	// A head bound high enough that nothing flushes by size (flush.go).
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: 24 * time.Hour, MaintenanceInterval: -1, MaxHeadBytes: 16 << 30}
	s := openT(b, dir, opts)
	if senders == 1 {
		fillReplayOneSender(b, s, per)
	} else {
		fillReplayTwoSenders(b, s, nil)
	}
	walBytes := s.Stats().WALBytes
	s.abandon()
	b.ResetTimer()
	lookups := 0
	for range b.N {
		s2, err := Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st := s2.Stats(); st.HeadSamples != n*steps {
			b.Fatalf("stats %+v", st)
		}
		lookups += s2.replayLookups
		s2.abandon()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*steps)/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
	b.ReportMetric(float64(walBytes)/float64(n*steps), "WAL-B/sample")
	b.ReportMetric(float64(lookups)/float64(b.N*n*steps), "lookups/sample")
}

// fillReplayOneSender commits every series in one request, per samples each.
func fillReplayOneSender(b *testing.B, s *Store, per int) {
	ls := benchLabels(replayBenchSeries)
	for step := 0; step < replayBenchSteps; step += per {
		batch := make([]SeriesSamples, len(ls))
		for i := range batch {
			smps := make([]Sample, per)
			for j := range smps {
				smps[j] = Sample{T: int64(step+j) * 15000, V: realisticValue(i, step+j)}
			}
			batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
		}
		mustAppend(b, s, batch)
	}
}

// fillReplayTwoSenders commits one sample a series an entry, series i sent
// by sender i%3/2, requests of 2,000 entries cut across scrapes, the
// senders taking turns; at, unless nil, is called before each step.
func fillReplayTwoSenders(b *testing.B, s *Store, at func(step int)) {
	ls := benchLabels(replayBenchSeries)
	var pending [2][]SeriesSamples
	for step := range replayBenchSteps {
		if at != nil {
			at(step)
		}
		for i, lset := range ls {
			w := i % 3 / 2
			pending[w] = append(pending[w], SeriesSamples{Labels: lset, Samples: []Sample{{T: int64(step) * 15000, V: realisticValue(i, step)}}})
			if len(pending[w]) == 2000 {
				mustAppend(b, s, pending[w])
				pending[w] = nil
			}
		}
	}
	for _, p := range pending {
		if len(p) > 0 {
			mustAppend(b, s, p)
		}
	}
}
