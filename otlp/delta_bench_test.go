package otlp

import (
	"fmt"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// asDelta turns benchRequest's counters and histograms into deltas
// covering (ts-15s, ts].
func asDelta(md pmetric.Metrics, ts uint64) pmetric.Metrics {
	walkMetrics(md, func(m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeSum:
			m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			for i := range m.Sum().DataPoints().Len() {
				m.Sum().DataPoints().At(i).SetStartTimestamp(pcommon.Timestamp(ts - 15e9))
			}
		case pmetric.MetricTypeHistogram:
			m.Histogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			for i := range m.Histogram().DataPoints().Len() {
				m.Histogram().DataPoints().At(i).SetStartTimestamp(pcommon.Timestamp(ts - 15e9))
			}
		}
	})
	return md
}

// BenchmarkTranslate measures translation alone of benchRequest (1000
// data points: 800 gauges, 150 counters, 50 histograms): cumulative,
// then with its counters and histograms as deltas under
// delta_temporality native and convert (the processor adds each to its
// stream's sum; a new timestamp per request, as an exporter sends).
func BenchmarkTranslate(b *testing.B) {
	run := func(b *testing.B, cfg Config, delta bool) {
		tr := NewTranslator(cfg)
		if cfg.DeltaTemporality == DeltaConvert {
			d, err := newDeltaConverter(cfg.DeltaConversion, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer d.close()
			tr.delta = d
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			ts := t0ns + uint64(i)*15e9
			md := benchRequest(ts)
			if delta {
				asDelta(md, ts)
			}
			b.StartTimer()
			if got := tr.Translate(md); got.Rejected != 0 {
				b.Fatalf("rejected %d: %q", got.Rejected, got.Reasons)
			}
		}
		b.ReportMetric(float64(b.N)*benchDataPoints/b.Elapsed().Seconds(), "datapoints/s")
	}
	b.Run("cumulative", func(b *testing.B) { run(b, DefaultConfig(), false) })
	b.Run("delta_native", func(b *testing.B) {
		cfg := DefaultConfig()
		cfg.DeltaTemporality = DeltaNative
		run(b, cfg, true)
	})
	b.Run("delta_convert", func(b *testing.B) {
		cfg := DefaultConfig()
		cfg.DeltaTemporality = DeltaConvert
		run(b, cfg, true)
	})
}

// BenchmarkDeltaStreamMemory measures the heap the conversion keeps per
// stream (its running sum, the stream's identity, the staleness entry),
// for a counter point with three attributes, a histogram with 8 bounds
// and an exponential histogram with 40 buckets: the figure behind
// delta_conversion.max_streams' default.
func BenchmarkDeltaStreamMemory(b *testing.B) {
	const streams = 20_000
	kinds := []struct {
		name string
		add  func(m pmetric.Metric, i int)
	}{
		{"counter", func(m pmetric.Metric, i int) {
			dp := deltaSumPoint(m, dStart, dT1, int64(i), nil)
			setAttrs(dp.Attributes(), map[string]any{"http.route": fmt.Sprintf("/r/%d", i), "http.method": "GET", "status": 200})
		}},
		{"histogram", func(m pmetric.Metric, i int) {
			dp := deltaHistPoint(m, dStart, dT1, []float64{5, 10, 25, 50, 100, 250, 500, 1000}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 12)
			setAttrs(dp.Attributes(), map[string]any{"http.route": fmt.Sprintf("/r/%d", i), "http.method": "GET", "status": 200})
		}},
		{"exponential", func(m pmetric.Metric, i int) {
			counts := make([]uint64, 40)
			for j := range counts {
				counts[j] = uint64(j + 1)
			}
			deltaExpPoint(m, dStart, dT1, 3, -10, counts, 1, 99)
			dps := m.ExponentialHistogram().DataPoints()
			setAttrs(dps.At(dps.Len()-1).Attributes(), map[string]any{"http.route": fmt.Sprintf("/r/%d", i), "http.method": "GET", "status": 200})
		}},
	}
	kindOf := map[string]pmetric.MetricType{"counter": pmetric.MetricTypeSum, "histogram": pmetric.MetricTypeHistogram, "exponential": pmetric.MetricTypeExponentialHistogram}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var perStream float64
			for b.Loop() {
				cfg := DefaultConfig()
				cfg.DeltaTemporality = DeltaConvert
				cfg.DeltaConversion.MaxStreams = streams
				d, err := newDeltaConverter(cfg.DeltaConversion, nil)
				if err != nil {
					b.Fatal(err)
				}
				tr := NewTranslator(cfg)
				tr.delta = d
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for r := range streams / 1000 {
					md := pmetric.NewMetrics()
					m := addDeltaMetric(newResource(md, svc), "m", "", kindOf[k.name], true)
					for i := range 1000 {
						k.add(m, r*1000+i)
					}
					if got := tr.Translate(md); got.Rejected != 0 {
						b.Fatalf("rejected %d: %q", got.Rejected, got.Reasons)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perStream = float64(after.HeapAlloc-before.HeapAlloc) / streams
				runtime.KeepAlive(tr)
				_ = d.close()
			}
			b.ReportMetric(perStream, "B/stream")
		})
	}
}
