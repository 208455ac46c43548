package otlp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// benchRequest is one typical export: one resource, 1000 data points
// (800 gauges, 150 counters, 50 classic histograms with 8 bounds), each
// series with three attributes, at timestamp ts.
func benchRequest(ts uint64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	g := sm.Metrics().AppendEmpty()
	g.SetName("system.memory.usage")
	g.SetUnit("By")
	gdps := g.SetEmptyGauge().DataPoints()
	for i := range 800 {
		dp := gdps.AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(ts))
		dp.SetDoubleValue(float64(i) * 1.5)
		setAttrs(dp.Attributes(), map[string]any{"state": "used", "device": fmt.Sprintf("dev%d", i), "host.arch": "amd64"})
	}
	c := sm.Metrics().AppendEmpty()
	c.SetName("http.server.requests")
	s := c.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range 150 {
		dp := s.DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(ts))
		dp.SetIntValue(int64(i * 10))
		setAttrs(dp.Attributes(), map[string]any{"http.route": fmt.Sprintf("/r/%d", i), "http.method": "GET", "status": 200})
	}
	h := sm.Metrics().AppendEmpty()
	h.SetName("http.server.duration")
	h.SetUnit("ms")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range 50 {
		dp := hh.DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(ts))
		dp.ExplicitBounds().FromRaw([]float64{5, 10, 25, 50, 100, 250, 500, 1000})
		dp.BucketCounts().FromRaw([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9})
		dp.SetCount(45)
		dp.SetSum(1234.5)
		setAttrs(dp.Attributes(), map[string]any{"http.route": fmt.Sprintf("/r/%d", i), "http.method": "GET", "status": 200})
	}
	return md
}

const benchDataPoints = 1000

// countingAppender accepts everything and counts samples: the benchmark
// then measures the receiver alone.
type countingAppender struct{ samples atomic.Int64 }

func (a *countingAppender) Commit(_ context.Context, b *actastore.Batch) (actastore.Result, error) {
	var res actastore.Result
	res.Samples.Written, _, _, _ = b.Len()
	a.samples.Add(int64(res.Samples.Written))
	return res, nil
}

// BenchmarkHTTPProtobuf measures OTLP data points accepted per second over
// loopback HTTP with protobuf bodies: decode, translate, append, answer.
// "receiver" discards what it translates; "store" appends to the real
// actastore (WAL fsync per request), so the figures bracket the receiver's
// cost and the end-to-end rate.
func BenchmarkHTTPProtobuf(b *testing.B) {
	b.Run("receiver", func(b *testing.B) {
		app := &countingAppender{}
		benchHTTP(b, app, false)
	})
	b.Run("store", func(b *testing.B) {
		st, err := actastore.Open(b.TempDir(), actastore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchHTTP(b, st, true)
	})
}

func benchHTTP(b *testing.B, app actastore.Appender, freshTimestamps bool) {
	url := startHTTP(b, DefaultConfig(), app) + "/v1/metrics"
	body := protoBody(b, benchRequest(t0ns))
	client := &http.Client{}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if freshTimestamps {
			// A new timestamp per request, as a real exporter sends; building
			// the body is not the receiver's cost.
			b.StopTimer()
			body = protoBody(b, benchRequest(t0ns+uint64(i)*15e9))
			b.StartTimer()
		}
		resp, err := client.Post(url, contentTypeProtobuf, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var sink bytes.Buffer
		_, _ = sink.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d: %s", resp.StatusCode, sink.Bytes())
		}
	}
	b.ReportMetric(float64(b.N)*benchDataPoints/b.Elapsed().Seconds(), "datapoints/s")
}
