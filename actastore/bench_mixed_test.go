package actastore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
)

// BenchmarkMixedRequest: one op is one remote-write-sized request of 200
// series, each with one float sample, 20 of them also with one native
// histogram and one exemplar, committed by one appender at a time (so no
// group commit merges requests): requests/s, p99 latency and, run under
// strace -c, fsyncs per request.
func BenchmarkMixedRequest(b *testing.B) {
	const n, nh = 200, 20
	ls := benchLabels(n)
	s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1})
	defer s.Close()
	hist := func(t int64) HistogramSample {
		return HistogramSample{T: t, H: &histogram.Histogram{Schema: 0, ZeroThreshold: 1e-128, Count: 3, Sum: 1.5,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}}
	}
	step := int64(0)
	lat := make([]time.Duration, 0, 1024)
	send := func() {
		step++
		t := step * 15000
		begin := time.Now()
		var batch Batch
		for i := 0; i < n; i++ {
			var hs []HistogramSample
			var es []Exemplar
			if i < nh {
				hs = []HistogramSample{hist(t)}
				es = []Exemplar{{Labels: labels.FromStrings("trace_id", "x"), Value: 1, T: t}}
			}
			batch.Add(ls[i], []Sample{{T: t, V: float64(i)}}, hs, es)
		}
		if res, err := s.Commit(context.Background(), &batch); err != nil || res.Rejected() > 0 {
			b.Fatal(err, res)
		}
		lat = append(lat, time.Since(begin))
	}
	send() // creates the series outside the timing
	lat = lat[:0]
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		send()
	}
	el := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/el.Seconds(), "requests/s")
	b.ReportMetric(float64(b.N*(n+nh))/el.Seconds(), "items/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
