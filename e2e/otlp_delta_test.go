package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// deltaReceiver is one OTLP receiver under test: acta-remote or the
// reference Prometheus, restartable on the same address and data.
type deltaReceiver struct {
	name, bin, addr, path string
	args                  []string
	log                   string
	p                     *process
}

func (r *deltaReceiver) start(t *testing.T, owner *testing.T) {
	t.Helper()
	r.p = startProcess(t, owner, r.name, r.log, r.bin, r.args...)
	waitReady(t, r.p, "http://"+r.addr+"/-/ready", 30*time.Second)
}

func (r *deltaReceiver) stop(t *testing.T) {
	t.Helper()
	if err := r.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("%s on SIGTERM: %v, want exit 0", r.name, err)
	}
}

// TestOTLPDeltaAgainstPrometheus sends the same delta requests, made by
// the OpenTelemetry Go SDK (delta temporality for every instrument) and
// sent by its OTLP/HTTP exporter, to acta-remote and to Prometheus 3.16,
// and compares what each returns through remote read, series by series and
// sample by sample (histograms modulo Prometheus's chunk recoding and
// reset hints):
//
//   - convert: delta_temporality convert vs
//     --enable-feature=otlp-deltatocumulative; both restart between the
//     second and third export, which loses the running sums in both (the
//     next delta starts a new sum: a counter reset);
//   - native: delta_temporality native vs
//     --enable-feature=otlp-native-delta-ingestion.
//
// Counters, up-down counters, classic histograms, exponential histograms
// (whose scale changes between exports) and a gauge; the counter's values
// are also checked against the sums written out by hand. The native run
// also sends a data point at time_unix_nano 0 next to a valid one to both:
// Prometheus refuses the request with 400 (out of bounds) and stores
// neither; acta-remote refuses that point alone in partial_success.
func TestOTLPDeltaAgainstPrometheus(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	started := time.Now()
	tmp := t.TempDir()
	acta := buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
	prom := prometheusBinary(t)
	for _, mode := range []struct{ name, feature string }{
		{"convert", "otlp-deltatocumulative"},
		{"native", "otlp-native-delta-ingestion"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := filepath.Join(tmp, mode.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			addrs := distinctAddrs(t, 2)
			actaCfg := filepath.Join(dir, "acta.yaml")
			promCfg := filepath.Join(dir, "prometheus.yml")
			if err := os.WriteFile(actaCfg, []byte("otlp:\n  delta_temporality: "+mode.name+"\n  grpc:\n    enabled: false\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(promCfg, []byte("global: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			recv := []*deltaReceiver{
				{name: "acta-remote", bin: acta, addr: addrs[0], path: "/v1/metrics", log: filepath.Join(dir, "acta.log"),
					args: []string{"serve", "--config", actaCfg, "--listen", addrs[0], "--data-dir", filepath.Join(dir, "acta-data")}},
				{name: "prometheus", bin: prom, addr: addrs[1], path: "/api/v1/otlp/v1/metrics", log: filepath.Join(dir, "prometheus.log"),
					args: []string{"--config.file=" + promCfg, "--storage.tsdb.path=" + filepath.Join(dir, "prom-data"),
						"--web.listen-address=" + addrs[1], "--web.enable-otlp-receiver", "--enable-feature=" + mode.feature}},
			}
			for _, r := range recv {
				r.start(t, t)
			}
			runDeltaExports(t, recv, mode.name == "convert")
			if mode.name == "native" {
				checkTimestampZero(t, recv)
			}
			for _, r := range recv {
				r.stop(t)
				checkLog(t, r.log)
			}
		})
	}
	t.Logf("whole test %s", time.Since(started).Round(time.Millisecond))
}

// deltaTemporality asks the SDK for delta temporality for every kind,
// up-down counters included (its own delta preference keeps those
// cumulative).
func deltaTemporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.DeltaTemporality
}

// runDeltaExports makes four exports to every receiver, restarting them
// after the second when convert (running sums are lost), and compares the
// receivers' remote read answers.
func runDeltaExports(t *testing.T, recv []*deltaReceiver, convert bool) {
	restart := convert
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const job = "e2e/otlp-delta"
	res := resource.NewSchemaless(
		attribute.String("service.namespace", "e2e"),
		attribute.String("service.name", "otlp-delta"),
		attribute.String("service.instance.id", "delta-1"),
		attribute.String("host.name", "loopback"),
	)
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(deltaTemporality))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "e2e.size"}, sdkmetric.Stream{
			// Few buckets: values far apart make the SDK lower the scale,
			// so the conversion merges histograms of different scales.
			Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 8, MaxScale: 3},
		})))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	meter := mp.Meter("acta-remote/e2e-delta")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	requests, err := meter.Int64Counter("e2e.requests", metric.WithUnit("{request}"))
	must(err)
	sent, err := meter.Float64Counter("e2e.sent", metric.WithUnit("By"))
	must(err)
	depth, err := meter.Int64UpDownCounter("e2e.queue.depth")
	must(err)
	dur, err := meter.Float64Histogram("e2e.request.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.005, 0.1, 1, 2.5))
	must(err)
	size, err := meter.Float64Histogram("e2e.size", metric.WithUnit("By"))
	must(err)
	load, err := meter.Float64Gauge("e2e.load")
	must(err)

	get := metric.WithAttributes(attribute.String("http.method", "GET"))
	post := metric.WithAttributes(attribute.String("http.method", "POST"))
	rounds := []struct {
		get, post int64
		sizes     []float64
	}{
		{3, 1, []float64{1.5, 3, 0}},
		{2, 0, []float64{6.5, 1.25, 1.75}},
		{4, 2, []float64{100, 0.01}},
		{1, 0, []float64{2}},
	}
	exporters := make([]sdkmetric.Exporter, len(recv))
	newExporters := func() {
		for i, r := range recv {
			exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(r.addr), otlpmetrichttp.WithInsecure(),
				otlpmetrichttp.WithURLPath(r.path), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
				otlpmetrichttp.WithTemporalitySelector(deltaTemporality),
				otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}), otlpmetrichttp.WithTimeout(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			exporters[i] = exp
		}
	}
	newExporters()
	var first, last int64
	for i, rd := range rounds {
		if restart && i == 2 {
			for _, r := range recv {
				r.stop(t)
			}
			for _, r := range recv {
				r.start(t, t)
			}
			t.Logf("restarted both receivers before export %d", i+1)
		}
		if i > 0 {
			time.Sleep(20 * time.Millisecond) // distinct millisecond timestamps
		}
		requests.Add(ctx, rd.get, get)
		if rd.post > 0 {
			requests.Add(ctx, rd.post, post)
		}
		sent.Add(ctx, float64(rd.get)*0.1)
		depth.Add(ctx, rd.get-3)
		dur.Record(ctx, 0.05*float64(i+1))
		dur.Record(ctx, 3)
		for _, v := range rd.sizes {
			size.Record(ctx, v)
		}
		load.Record(ctx, 0.25*float64(i))
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if s, ok := m.Data.(metricdata.Sum[int64]); ok && s.Temporality != metricdata.DeltaTemporality {
					t.Fatalf("%s: temporality %v, want delta", m.Name, s.Temporality)
				}
			}
		}
		ms := time.Now().UnixMilli()
		if i == 0 {
			first = ms
		}
		last = ms
		for j, r := range recv {
			if err := exporters[j].Export(ctx, &rm); err != nil {
				t.Fatalf("export %d to %s: %v", i+1, r.name, err)
			}
		}
	}
	for _, e := range exporters {
		_ = e.Shutdown(ctx)
	}
	if convert {
		// The processor's telemetry on acta-remote's /metrics, counted since
		// the restart: exports 3 and 4 held 11 delta points (requests GET and
		// POST, then GET; sent, depth, duration and size once each) of 6
		// streams.
		checkMetrics(ctx, t, "http://"+recv[0].addr, map[string]string{
			"otelcol_deltatocumulative_datapoints_total":          "11",
			"otelcol_deltatocumulative_streams_tracked":           "6",
			"otelcol_deltatocumulative_streams_limit":             "100000",
			"otelcol_deltatocumulative_streams_max_stale_seconds": "300",
		})
	}

	match := prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "job", Value: job}
	got, err := remoteReadSamples(ctx, "http://"+recv[0].addr, first-60_000, last+60_000, match)
	if err != nil {
		t.Fatal(err)
	}
	want, err := remoteReadSamples(ctx, "http://"+recv[1].addr, first-60_000, last+60_000, match)
	if err != nil {
		t.Fatal(err)
	}
	// Prometheus's TSDB recodes a chunk's histograms to one bucket layout
	// and sets counter reset hints from its own detection (not on gauge
	// histograms): the same histograms either way.
	norm := func(h prompb.Histogram) prompb.Histogram {
		ih := h.ToIntHistogram().Compact(0)
		if ih.CounterResetHint == histogram.NotCounterReset || ih.CounterResetHint == histogram.CounterReset {
			ih.CounterResetHint = histogram.UnknownCounterReset
		}
		return prompb.FromIntHistogram(h.Timestamp, ih)
	}
	for _, d := range diffTimeSeries(want, got, norm) {
		t.Error(d)
	}
	// The GET counter by hand: running sums, starting over after the
	// restart, or the deltas themselves.
	wantGet := []float64{3, 2, 4, 1}
	if convert {
		wantGet = []float64{3, 5, 4, 5}
	}
	key := labelsString(map[string]string{"__name__": "e2e_requests_total", "job": job, "instance": "delta-1", "http_method": "GET"})
	var values []float64
	if s := got[key]; s != nil {
		for _, smp := range s.Samples {
			values = append(values, smp.Value)
		}
	}
	if fmt.Sprint(values) != fmt.Sprint(wantGet) {
		t.Errorf("%s: %v, want %v", key, values, wantGet)
	}
	if !t.Failed() {
		n, h := 0, 0
		for _, s := range got {
			n += len(s.Samples)
			h += len(s.Histograms)
		}
		t.Logf("remote read: acta-remote and Prometheus agree on %d series (%d samples, %d native histograms)", len(got), n, h)
	}
}

// checkTimestampZero posts one request with a gauge at time_unix_nano 0
// and one at now to both receivers.
func checkTimestampZero(t *testing.T, recv []*deltaReceiver) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	gauge := func(name string, ts uint64) *metricpb.Metric {
		return &metricpb.Metric{Name: name, Data: &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: []*metricpb.NumberDataPoint{
			{TimeUnixNano: ts, Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: 1}},
		}}}}
	}
	req := &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "ts0"}}},
		}},
		ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{
			gauge("e2e_ts_zero", 0), gauge("e2e_ts_now", uint64(now.UnixNano())),
		}}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	post := func(r *deltaReceiver) (int, []byte) {
		hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+r.path, bytes.NewReader(body))
		hr.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	stored := func(r *deltaReceiver, name string) int {
		got, err := remoteReadSamples(ctx, "http://"+r.addr, 0, now.UnixMilli()+60_000,
			prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range got {
			n += len(s.Samples)
		}
		return n
	}

	code, b := post(recv[1])
	if code != http.StatusBadRequest || !strings.Contains(string(b), "out of bounds") {
		t.Errorf("Prometheus: %d %q, want 400 out of bounds", code, b)
	}
	if n, m := stored(recv[1], "e2e_ts_zero"), stored(recv[1], "e2e_ts_now"); n != 0 || m != 0 {
		t.Errorf("Prometheus stored %d samples at 0 and %d now, want none (it rolls the request back)", n, m)
	}
	code, b = post(recv[0])
	var resp colmetricpb.ExportMetricsServiceResponse
	if err := proto.Unmarshal(b, &resp); code != http.StatusOK || err != nil ||
		resp.GetPartialSuccess().GetRejectedDataPoints() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), `metric "e2e_ts_zero": data point refused: time_unix_nano is 0 (not set)`) {
		t.Errorf("acta-remote: %d %v %v, want 200 with 1 rejected at time 0", code, err, resp.GetPartialSuccess())
	}
	if n, m := stored(recv[0], "e2e_ts_zero"), stored(recv[0], "e2e_ts_now"); n != 0 || m != 1 {
		t.Errorf("acta-remote stored %d samples at 0 and %d now, want 0 and 1", n, m)
	}
	t.Logf("time_unix_nano 0: Prometheus %d out of bounds, acta-remote refused the point alone (%q)", http.StatusBadRequest, resp.GetPartialSuccess().GetErrorMessage())
}

// checkMetrics fetches base's /metrics and checks the value of each
// unlabelled sample named in want.
func checkMetrics(ctx context.Context, t *testing.T, base string, want map[string]string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	got := map[string]string{}
	for _, l := range strings.Split(string(body), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
			got[name] = v
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("/metrics: %s = %q, want %s", name, got[name], v)
		}
	}
}
