package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// TestStartTimestampsAgainstPrometheus sends the same requests with start
// timestamps — Remote-Write 2.0 (writev2 types: Sample.start_timestamp,
// Histogram.start_timestamp) and OTLP (start_time_unix_nano of a sum, a
// classic histogram and an exponential histogram) — to acta-remote with
// storage.created_timestamp_zero_ingestion and to Prometheus 3.16 with
// --enable-feature=created-timestamp-zero-ingestion, and compares:
//
//   - remote read, SAMPLES and STREAMED_XOR_CHUNKS: every series, every
//     sample (the zero samples at the start timestamps included) bit for
//     bit, histograms modulo Prometheus's chunk recoding and reset hints;
//   - the query API: increase() and rate() (of histograms too) as range
//     queries, as JSON text;
//
// over counters that start fresh, reset (a new start timestamp between two
// samples), and run on (the same start timestamp, no zero sample), plus
// start timestamps Prometheus ignores: at or after their sample, and one
// far below the series' samples (out of bounds for Prometheus's head, below
// storage.min_timestamp here). acta-remote counts those in
// acta_store_start_timestamps_dropped_total.
func TestStartTimestampsAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	tmp := t.TempDir()
	actaBin := buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
	prom := prometheusBinary(t)
	addrs := distinctAddrs(t, 2)
	actaCfg := filepath.Join(tmp, "acta.yaml")
	promCfg := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(actaCfg, []byte("storage:\n  created_timestamp_zero_ingestion: true\notlp:\n  grpc:\n    enabled: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(promCfg, []byte("global: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recv := []*deltaReceiver{
		{name: "acta-remote", bin: actaBin, addr: addrs[0], path: "/v1/metrics", log: filepath.Join(tmp, "acta.log"),
			args: []string{"serve", "--config", actaCfg, "--listen", addrs[0], "--data-dir", filepath.Join(tmp, "acta-data")}},
		{name: "prometheus", bin: prom, addr: addrs[1], path: "/api/v1/otlp/v1/metrics", log: filepath.Join(tmp, "prometheus.log"),
			args: []string{"--config.file=" + promCfg, "--storage.tsdb.path=" + filepath.Join(tmp, "prom-data"),
				"--web.listen-address=" + addrs[1], "--web.enable-otlp-receiver", "--web.enable-remote-write-receiver",
				"--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request",
				"--enable-feature=created-timestamp-zero-ingestion"}},
	}
	for _, r := range recv {
		r.start(t, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const steps, step = 40, int64(15_000)
	t0 := time.Now().Add(-12*time.Minute).Truncate(time.Minute).UnixMilli() + 500 // off the step grid
	ts := func(i int) int64 { return t0 + int64(i)*step }
	// The counters: start t0-7s; at step 20 a reset 4 s before the sample.
	counterST := func(i int) int64 {
		if i < 20 {
			return t0 - 7_000
		}
		return ts(20) - 4_000
	}
	counterV := func(i int) float64 {
		if i < 20 {
			return float64(3 * (i + 1))
		}
		return float64(i - 19)
	}
	for i := range steps {
		for _, r := range recv {
			postRW2(ctx, t, r, stRequest(i, ts(i), counterST(i), counterV(i)))
			postOTLP(ctx, t, r, stOTLPRequest(ts(i), counterST(i), counterV(i), i))
		}
	}
	first, last := t0-60_000, ts(steps-1)+60_000

	// Remote read, both answer types: the zero samples are where
	// Prometheus put them.
	norm := func(h prompb.Histogram) prompb.Histogram {
		ih := h.ToIntHistogram().Compact(0)
		if ih.CounterResetHint == histogram.NotCounterReset || ih.CounterResetHint == histogram.CounterReset {
			ih.CounterResetHint = histogram.UnknownCounterReset
		}
		return prompb.FromIntHistogram(h.Timestamp, ih)
	}
	match := prompb.LabelMatcher{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "st_.+"}
	want, err := remoteReadSamples(ctx, "http://"+recv[1].addr, first, last, match)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remoteReadSamples(ctx, "http://"+recv[0].addr, first, last, match)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffTimeSeries(want, got, norm) {
		t.Error("samples: " + d)
	}
	zeros := 0
	for _, s := range want {
		for _, smp := range s.Samples {
			if smp.Value == 0 {
				zeros++
			}
		}
		for _, h := range s.Histograms {
			if h.GetCountInt() == 0 && h.GetCountFloat() == 0 {
				zeros++
			}
		}
	}
	if len(want) != 9 || zeros != 17 { // 2 per counter series (start, reset), 1 for the ignored one
		t.Errorf("Prometheus stored %d series with %d zero samples: the comparison proves little", len(want), zeros)
	}
	wantS, err := remoteReadStreamed(ctx, "http://"+recv[1].addr, first, last, match)
	if err != nil {
		t.Fatal(err)
	}
	gotS, err := remoteReadStreamed(ctx, "http://"+recv[0].addr, first, last, match)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffTimeSeries(wantS, gotS, norm) {
		t.Error("streamed: " + d)
	}
	for _, d := range diffTimeSeries(want, wantS, norm) {
		t.Error("Prometheus's two answers differ: " + d)
	}

	// The query API: increase and rate over the fresh start and the reset.
	start, end := time.UnixMilli(t0), time.UnixMilli(ts(steps-1))
	exact := 0
	for _, e := range []string{
		`increase(st_rw_total[5m])`, `rate(st_rw_total[1m])`, `increase(st_rw_total[10m])`,
		`increase(st_otlp_requests_total[5m])`, `rate(st_otlp_latency_seconds_bucket[2m])`, `increase(st_otlp_latency_seconds_count[5m])`,
		`histogram_count(increase(st_rw_hist[5m]))`, `histogram_sum(rate(st_rw_hist[1m]))`,
		`histogram_count(increase(st_otlp_native_seconds[5m]))`,
		`st_rw_total`, `resets(st_rw_total[10m])`,
	} {
		for _, stepS := range []string{"15", "7"} {
			params := url.Values{"query": {e}, "start": {promTime(start)}, "end": {promTime(end)}, "step": {stepS}}
			w, err := askAPI("http://"+recv[1].addr, http.MethodGet, "/api/v1/query_range", params)
			if err != nil {
				t.Fatal(err)
			}
			g, err := askAPI("http://"+recv[0].addr, http.MethodGet, "/api/v1/query_range", params)
			if err != nil {
				t.Fatal(err)
			}
			if w.status != "success" || strings.Contains(w.body, `"result":[]`) {
				t.Errorf("%s step %s: Prometheus answered %d %s", e, stepS, w.code, clip(w.body))
				continue
			}
			if wn, gn := normalizeData(t, w.data), normalizeData(t, g.data); wn != gn {
				t.Errorf("%s step %s:\n  acta-remote %s\n  prometheus  %s", e, stepS, clip(gn), clip(wn))
				continue
			}
			exact++
		}
	}
	checkMetrics(ctx, t, "http://"+recv[0].addr, map[string]string{
		// Per series: at the sample, after it; once below the floor.
		`acta_store_start_timestamps_dropped_total{reason="not_before_sample"}`: "2",
		`acta_store_start_timestamps_dropped_total{reason="out_of_bounds"}`:     "1",
	})
	t.Logf("%d series, %d zero samples, alike in both remote read answers; %d range queries equal as JSON text", len(want), zeros, exact)
	for _, r := range recv {
		r.stop(t)
		checkLog(t, r.log)
	}
}

// stRequest is step i of the Remote-Write 2.0 series: a counter with start
// timestamps (st_rw_total{case="counter"}), one whose start timestamps
// Prometheus ignores (case="ignored": at the sample at step 5, after it
// at step 6, negative at step 7, none otherwise but the first), and a
// native histogram counter with the counter's start timestamps.
func stRequest(i int, t, st int64, v float64) *writev2.Request {
	syms := writev2.NewSymbolTable()
	ref := func(kv ...string) []uint32 {
		var out []uint32
		for _, s := range kv {
			out = append(out, syms.Symbolize(s))
		}
		return out
	}
	ignored := int64(0)
	switch i {
	case 0:
		ignored = t - 1_000
	case 5:
		ignored = t
	case 6:
		ignored = t + 1_000
	case 7:
		ignored = -1_000
	}
	count := uint64(v)
	h := writev2.FromIntHistogram(st, t, &histogram.Histogram{Schema: 0, Count: count, Sum: v * 1.5, ZeroThreshold: 1e-128, ZeroCount: count})
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		{LabelsRefs: ref("__name__", "st_rw_total", "case", "counter"), Samples: []writev2.Sample{{Value: v, Timestamp: t, StartTimestamp: st}}},
		{LabelsRefs: ref("__name__", "st_rw_total", "case", "ignored"), Samples: []writev2.Sample{{Value: float64(i + 1), Timestamp: t, StartTimestamp: ignored}}},
		{LabelsRefs: ref("__name__", "st_rw_hist"), Histograms: []writev2.Histogram{h}},
	}}
	req.Symbols = syms.Symbols()
	return req
}

// stOTLPRequest is step i of the OTLP metrics: a monotonic cumulative sum,
// a classic histogram and an exponential histogram, each with the
// counter's start time (given in ns, with a sub-millisecond part the
// translation truncates).
func stOTLPRequest(t, st int64, v float64, i int) *colmetricpb.ExportMetricsServiceRequest {
	ns := func(ms int64) uint64 { return uint64(ms)*1_000_000 + 123_456 }
	cum := metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	n := uint64(v)
	return &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "st"}}},
		}},
		ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{
			{Name: "st_otlp_requests", Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{IsMonotonic: true, AggregationTemporality: cum,
				DataPoints: []*metricpb.NumberDataPoint{{StartTimeUnixNano: ns(st), TimeUnixNano: ns(t), Value: &metricpb.NumberDataPoint_AsInt{AsInt: int64(n)}}}}}},
			{Name: "st_otlp_latency", Unit: "s", Data: &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{AggregationTemporality: cum,
				DataPoints: []*metricpb.HistogramDataPoint{{StartTimeUnixNano: ns(st), TimeUnixNano: ns(t), Count: 2 * n, Sum: proto.Float64(v / 4),
					ExplicitBounds: []float64{0.5}, BucketCounts: []uint64{n, n}}}}}},
			{Name: "st_otlp_native", Unit: "s", Data: &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{AggregationTemporality: cum,
				DataPoints: []*metricpb.ExponentialHistogramDataPoint{{StartTimeUnixNano: ns(st), TimeUnixNano: ns(t), Count: n + uint64(i%2), Sum: proto.Float64(v),
					Scale: 0, ZeroCount: n, Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: 0, BucketCounts: []uint64{uint64(i % 2)}}}}}}},
		}}},
	}}}
}

// postRW2 sends one Remote-Write 2.0 request and wants it stored whole.
func postRW2(ctx context.Context, t *testing.T, r *deltaReceiver, req *writev2.Request) {
	t.Helper()
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	hr.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: RW 2.0: %d %s", r.name, resp.StatusCode, b)
	}
}

// postOTLP sends one OTLP/HTTP protobuf request and wants nothing refused.
func postOTLP(ctx context.Context, t *testing.T, r *deltaReceiver, req *colmetricpb.ExportMetricsServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+r.path, bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var res colmetricpb.ExportMetricsServiceResponse
	if resp.StatusCode != http.StatusOK || proto.Unmarshal(b, &res) != nil || res.GetPartialSuccess().GetRejectedDataPoints() != 0 {
		t.Fatalf("%s: OTLP: %d %q", r.name, resp.StatusCode, b)
	}
}

// remoteReadStreamed asks base's remote read for one query, answer type
// STREAMED_XOR_CHUNKS, and returns the decoded samples and histograms of
// the chunks by series. The frames (Prometheus's chunked read format:
// uvarint length, CRC32C big-endian, a ChunkedReadResponse) are read
// here, the chunks decoded with tsdb/chunkenc.
func remoteReadStreamed(ctx context.Context, base string, start, end int64, ms ...prompb.LabelMatcher) (map[string]*prompb.TimeSeries, error) {
	resp, err := postRemoteRead(ctx, base, prompb.ReadRequest_STREAMED_XOR_CHUNKS, start, end, ms...)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("remote read: %s: %s", resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-streamed-protobuf") {
		return nil, fmt.Errorf("remote read: Content-Type %q, want streamed", ct)
	}
	out := map[string]*prompb.TimeSeries{}
	br := bufio.NewReader(resp.Body)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil || n > 50<<20 {
			return nil, fmt.Errorf("remote read: frame length %d: %v", n, err)
		}
		var sum [4]byte
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(br, frame); err != nil {
			return nil, err
		}
		if crc32.Checksum(frame, castagnoli) != binary.BigEndian.Uint32(sum[:]) {
			return nil, errors.New("remote read: frame checksum mismatch")
		}
		var cr prompb.ChunkedReadResponse
		if err := cr.Unmarshal(frame); err != nil {
			return nil, err
		}
		for _, cs := range cr.ChunkedSeries {
			ls := map[string]string{}
			for _, l := range cs.Labels {
				ls[l.Name] = l.Value
			}
			key := labelsString(ls)
			s := out[key]
			if s == nil {
				s = &prompb.TimeSeries{Labels: cs.Labels}
				out[key] = s
			}
			for _, c := range cs.Chunks {
				chk, err := chunkenc.FromData(chunkenc.Encoding(c.Type), c.Data)
				if err != nil {
					return nil, fmt.Errorf("remote read: %s chunk: %v", key, err)
				}
				it := chk.Iterator(nil)
				for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
					switch vt {
					case chunkenc.ValFloat:
						t, v := it.At()
						if t >= start && t <= end {
							s.Samples = append(s.Samples, prompb.Sample{Timestamp: t, Value: v})
						}
					case chunkenc.ValHistogram:
						t, h := it.AtHistogram(nil)
						if t >= start && t <= end {
							s.Histograms = append(s.Histograms, prompb.FromIntHistogram(t, h))
						}
					case chunkenc.ValFloatHistogram:
						t, h := it.AtFloatHistogram(nil)
						if t >= start && t <= end {
							s.Histograms = append(s.Histograms, prompb.FromFloatHistogram(t, h))
						}
					}
				}
				if it.Err() != nil {
					return nil, it.Err()
				}
			}
		}
	}
}
