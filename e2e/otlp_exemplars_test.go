package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

const exemplarJob = "e2e/otlp-exemplars"

// TestOTLPExemplarsQueryAPI records measurements inside spans of the
// OpenTelemetry Go SDK's own tracer (always sampled; the meter's exemplar
// filter trace-based), exports each collection with the SDK's OTLP/HTTP
// exporter to acta-remote and to Prometheus 3.16 (--web.enable-otlp-receiver,
// --enable-feature=exemplar-storage), and reads the exemplars back through
// each one's /api/v1/query_exemplars. acta-remote's answer must hold exactly
// what the SDK sent: the series labels (a counter's _total series, a classic
// histogram's _bucket series whose le holds the exemplar's value, as
// Prometheus's translator hands them out; nothing on _sum, _count or the
// gauge), the exemplar labels (trace_id and span_id in the lower-case hex of
// the span that recorded the value, and the view-filtered attribute under its
// name as sent), the value's float bits and the millisecond time; and its JSON
// must be byte for byte Prometheus's. The same answer must come back after
// kill -9 (from the WAL: no exemplar file exists yet), after a head flush
// while the server runs (the exemplar files written), after kill -9 once
// flushed, after SIGTERM, and after the exporter resent them to the restarted
// server (a cumulative reservoir's exemplars come with every export) and one
// more SIGTERM.
func TestOTLPExemplarsQueryAPI(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_METRICS_EXEMPLAR_FILTER", "")
	started := time.Now()
	tmp := t.TempDir()
	actaBin := buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
	promBin := prometheusBinary(t)
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The default max_head_age (5m): nothing is flushed before the first
	// kill -9. The second config flushes a series' head within seconds.
	slow := write("acta.yaml", "otlp:\n  grpc:\n    enabled: false\n")
	fast := write("acta-flush.yaml", "otlp:\n  grpc:\n    enabled: false\nstorage:\n  max_head_age: 1s\n")
	promCfg := write("prometheus.yml", "global: {}\n")
	addrs := distinctAddrs(t, 2)
	actaData := filepath.Join(tmp, "acta-data")
	actaArgs := func(cfg string) []string {
		return []string{"serve", "--config", cfg, "--listen", addrs[0], "--data-dir", actaData}
	}
	acta := &deltaReceiver{name: "acta-remote", bin: actaBin, addr: addrs[0], path: "/v1/metrics",
		log: filepath.Join(tmp, "acta.log"), args: actaArgs(slow)}
	prom := &deltaReceiver{name: "prometheus", bin: promBin, addr: addrs[1], path: "/api/v1/otlp/v1/metrics",
		log: filepath.Join(tmp, "prometheus.log"),
		args: []string{"--config.file=" + promCfg, "--storage.tsdb.path=" + filepath.Join(tmp, "prom-data"),
			"--web.listen-address=" + addrs[1], "--web.enable-otlp-receiver", "--enable-feature=exemplar-storage"}}
	built := time.Now()
	acta.start(t, t)
	prom.start(t, t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, first, again := exportExemplars(ctx, t, []*deltaReceiver{acta, prom})
	params := url.Values{"query": {`{job="` + exemplarJob + `"}`},
		"start": {promTime(time.UnixMilli(first).Add(-time.Minute))}, "end": {promTime(time.Now().Add(time.Minute))}}
	ask := func(r *deltaReceiver, when string) []byte {
		t.Helper()
		a, err := askAPI("http://"+r.addr, http.MethodGet, "/api/v1/query_exemplars", params)
		if err != nil || a.code != http.StatusOK || a.status != "success" {
			t.Fatalf("%s: %s /api/v1/query_exemplars: %v %d %s", when, r.name, err, a.code, clip(a.body))
		}
		for _, d := range diffExemplarAnswer(a.data, want) {
			t.Errorf("%s: %s: %s", when, r.name, d)
		}
		return a.data
	}
	promData := ask(prom, "stored")
	if testing.Verbose() {
		t.Logf("Prometheus's answer: %s", promData)
	}
	check := func(when string) {
		t.Helper()
		if got := ask(acta, when); !bytes.Equal(got, promData) {
			t.Errorf("%s: acta-remote's JSON differs from Prometheus's:\n  acta-remote %s\n  prometheus  %s", when, clip(string(got)), clip(string(promData)))
		}
	}
	check("stored")

	exemplarFiles := func() []string { return findFiles(t, filepath.Join(actaData, "histograms"), ".exemplars.acta") }
	if fs := exemplarFiles(); len(fs) != 0 {
		t.Fatalf("exemplar files %v before any flush: the restart would not show the WAL replay", fs)
	}
	kill := func() {
		t.Helper()
		_ = acta.p.cmd.Process.Kill()
		<-acta.p.done
	}
	kill()
	acta.start(t, t)
	check("after kill -9 (WAL replay)")
	if fs := exemplarFiles(); len(fs) != 0 {
		t.Fatalf("exemplar files %v after the replay with a 5m head age", fs)
	}

	// kill -9 again (a SIGTERM would flush) and start with a 1 s head age:
	// the series flush their replayed heads, and with them their exemplars
	// into their exemplar files, while the server runs.
	kill()
	acta.args = actaArgs(fast)
	acta.start(t, t)
	deadline := time.Now().Add(20 * time.Second)
	for len(exemplarFiles()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if fs := exemplarFiles(); len(fs) != len(want) {
		t.Fatalf("%d exemplar files after the head flush, want one per series with exemplars (%d): %v", len(fs), len(want), fs)
	}
	check("after a head flush")
	kill()
	acta.args = actaArgs(slow)
	acta.start(t, t)
	check("after the head flush and kill -9")
	acta.stop(t)
	acta.start(t, t)
	check("after SIGTERM")
	// The exporter resends the exemplars it holds to a restarted server
	// before anyone asked it for them: each is still listed once, also once
	// that is flushed and read back.
	acta.stop(t)
	acta.start(t, t)
	again()
	check("resent after the restart")
	acta.stop(t)
	acta.start(t, t)
	check("resent, after SIGTERM")

	for _, r := range []*deltaReceiver{acta, prom} {
		r.stop(t)
		checkLog(t, r.log)
	}
	t.Logf("whole test %s (builds %s); %d series with exemplars", time.Since(started).Round(time.Millisecond), built.Sub(started).Round(time.Millisecond), len(want))
}

// wantExemplar is one exemplar as /api/v1/query_exemplars must list it.
type wantExemplar struct {
	labels map[string]string
	value  float64
	ms     int64
}

// exportExemplars makes two collections of a counter, a classic histogram
// and a gauge, every measurement in its own sampled span, exports each to
// every receiver, and returns the exemplars each series must list (by
// labelsString of the series labels, in time order) and the earliest
// exemplar time (ms).
func exportExemplars(ctx context.Context, t *testing.T, recv []*deltaReceiver) (want map[string][]wantExemplar, first int64, again func()) {
	res := resource.NewSchemaless(
		attribute.String("service.namespace", "e2e"),
		attribute.String("service.name", "otlp-exemplars"),
		attribute.String("service.instance.id", "ex-1"),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("acta-remote/e2e-exemplars")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res),
		sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter),
		// Only http.route stays on the series; user.id goes to the
		// exemplars' filtered attributes (and keeps its name there).
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "*"}, sdkmetric.Stream{
			AttributeFilter: attribute.NewAllowKeysFilter("http.route"),
		})))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	meter := mp.Meter("acta-remote/e2e-exemplars")
	requests, err := meter.Int64Counter("e2e.requests", metric.WithUnit("{request}"))
	if err != nil {
		t.Fatal(err)
	}
	bounds := []float64{0.1, 1}
	latency, err := meter.Float64Histogram("e2e.latency", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(bounds...))
	if err != nil {
		t.Fatal(err)
	}
	load, err := meter.Float64Gauge("e2e.load")
	if err != nil {
		t.Fatal(err)
	}
	exporters := make([]sdkmetric.Exporter, len(recv))
	for i, r := range recv {
		exporters[i], err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(r.addr), otlpmetrichttp.WithInsecure(),
			otlpmetrichttp.WithURLPath(r.path), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}), otlpmetrichttp.WithTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = exporters[i].Shutdown(context.Background()) })
	}

	// spans: the hex trace and span IDs of every span, by the value
	// recorded in it (values are distinct).
	spans := map[float64][2]string{}
	record := func(v float64, user string, rec func(context.Context, metric.MeasurementOption)) {
		sctx, span := tracer.Start(ctx, "op")
		sc := span.SpanContext()
		if !sc.IsSampled() {
			t.Fatal("the tracer's span is not sampled")
		}
		spans[v] = [2]string{sc.TraceID().String(), sc.SpanID().String()}
		rec(sctx, metric.WithAttributes(attribute.String("http.route", "/a"), attribute.String("user.id", user)))
		span.End()
	}
	count := func(n int64, user string) {
		record(float64(n), user, func(c context.Context, o metric.MeasurementOption) { requests.Add(c, n, o) })
	}
	observe := func(v float64, user string) {
		record(v, user, func(c context.Context, o metric.MeasurementOption) { latency.Record(c, v, o) })
	}
	rounds := []func(){
		func() {
			count(2, "u1")
			observe(0.05, "u1")
			observe(0.5, "u2")
			observe(7, "u3")
			record(0.25, "u1", func(c context.Context, o metric.MeasurementOption) { load.Record(c, 0.25, o) })
		},
		func() {
			count(3, "u4")
			observe(0.075, "u4")
			observe(12, "u5")
			record(0.875, "u4", func(c context.Context, o metric.MeasurementOption) { load.Record(c, 0.875, o) })
		},
	}

	want = map[string][]wantExemplar{}
	add := func(series map[string]string, e metricdata.Exemplar[float64], user string) {
		ids, ok := spans[e.Value]
		if !ok || hex.EncodeToString(e.TraceID) != ids[0] || hex.EncodeToString(e.SpanID) != ids[1] {
			t.Fatalf("the SDK's exemplar %v has trace %x span %x, not those of the span that recorded it (%v)", e.Value, e.TraceID, e.SpanID, ids)
		}
		if len(e.FilteredAttributes) != 1 || e.FilteredAttributes[0] != attribute.String("user.id", user) {
			t.Fatalf("the SDK's exemplar %v has filtered attributes %v, want user.id=%s", e.Value, e.FilteredAttributes, user)
		}
		w := wantExemplar{labels: map[string]string{"trace_id": ids[0], "span_id": ids[1], "user.id": user}, value: e.Value, ms: e.Time.UnixNano() / 1e6}
		key := labelsString(series)
		if !slices.ContainsFunc(want[key], func(o wantExemplar) bool { return o.ms == w.ms && o.value == w.value }) {
			want[key] = append(want[key], w) // a cumulative collection resends older exemplars
		}
	}
	users := map[float64]string{2: "u1", 0.05: "u1", 0.5: "u2", 7: "u3", 3: "u4", 0.075: "u4", 12: "u5"}
	first = int64(math.MaxInt64)
	for i, round := range rounds {
		if i > 0 {
			time.Sleep(20 * time.Millisecond) // distinct millisecond times
		}
		round()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				base := func(name string) map[string]string {
					return map[string]string{"__name__": name, "job": exemplarJob, "instance": "ex-1", "http_route": "/a"}
				}
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, dp := range d.DataPoints {
						for _, e := range dp.Exemplars {
							add(base("e2e_requests_total"), metricdata.Exemplar[float64]{FilteredAttributes: e.FilteredAttributes,
								Time: e.Time, Value: float64(e.Value), SpanID: e.SpanID, TraceID: e.TraceID}, users[float64(e.Value)])
							seen++
						}
					}
				case metricdata.Histogram[float64]:
					for _, dp := range d.DataPoints {
						for _, e := range dp.Exemplars {
							// The bucket whose le holds the value: where
							// Prometheus's translator puts it when the
							// exemplars come in bucket order, as the SDK's
							// one-per-bucket reservoir sends them.
							le := "+Inf"
							if j := sort.SearchFloat64s(bounds, e.Value); j < len(bounds) {
								le = strconv.FormatFloat(bounds[j], 'f', -1, 64)
							}
							s := base("e2e_latency_seconds_bucket")
							s["le"] = le
							add(s, e, users[e.Value])
							seen++
						}
					}
				case metricdata.Gauge[float64]:
					if len(d.DataPoints) != 1 || len(d.DataPoints[0].Exemplars) == 0 {
						t.Fatal("the SDK recorded no gauge exemplar: the test would not see it dropped")
					}
				default:
					t.Fatalf("%s: unexpected aggregation %T", m.Name, m.Data)
				}
			}
		}
		if seen == 0 {
			t.Fatalf("collection %d holds no exemplar", i+1)
		}
		for j, exp := range exporters {
			if err := exp.Export(ctx, &rm); err != nil {
				t.Fatalf("export %d to %s: %v", i+1, recv[j].name, err)
			}
		}
	}
	// Every value recorded must be some exemplar (the reservoirs keep the
	// newest per bucket and at least one per counter stream).
	n := 0
	for _, es := range want {
		slices.SortFunc(es, func(a, b wantExemplar) int { return int(a.ms - b.ms) })
		for _, e := range es {
			first = min(first, e.ms)
		}
		n += len(es)
	}
	if n < 5 {
		t.Fatalf("only %d exemplars sent: %v", n, want)
	}
	// again collects once more, no new measurement, and exports to the
	// first receiver: the SDK's cumulative reservoirs resend what they hold.
	again = func() {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		if err := exporters[0].Export(ctx, &rm); err != nil {
			t.Fatalf("export again to %s: %v", recv[0].name, err)
		}
	}
	return want, first, again
}

// diffExemplarAnswer lists how a query_exemplars data array differs from
// want: series, exemplar labels, value bits and millisecond times.
func diffExemplarAnswer(data json.RawMessage, want map[string][]wantExemplar) []string {
	var got []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    []struct {
			Labels    map[string]string `json:"labels"`
			Value     string            `json:"value"`
			Timestamp json.Number       `json:"timestamp"`
		} `json:"exemplars"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		return []string{fmt.Sprintf("cannot decode %s: %v", clip(string(data)), err)}
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range got {
		key := labelsString(s.SeriesLabels)
		seen[key] = true
		w, ok := want[key]
		if !ok {
			out = append(out, fmt.Sprintf("unexpected series %s with %d exemplars", key, len(s.Exemplars)))
			continue
		}
		var lines, wlines []string
		for _, e := range s.Exemplars {
			v, err := strconv.ParseFloat(e.Value, 64)
			ms, err2 := secondsToMs(string(e.Timestamp))
			if err != nil || err2 != nil {
				out = append(out, fmt.Sprintf("%s: exemplar value %q time %q: %v %v", key, e.Value, e.Timestamp, err, err2))
			}
			lines = append(lines, fmt.Sprintf("%s %#x@%d", labelsString(e.Labels), math.Float64bits(v), ms))
		}
		for _, e := range w {
			wlines = append(wlines, fmt.Sprintf("%s %#x@%d", labelsString(e.labels), math.Float64bits(e.value), e.ms))
		}
		if !slices.Equal(lines, wlines) {
			out = append(out, fmt.Sprintf("%s: exemplars\n    %s\n  want\n    %s", key, strings.Join(lines, "\n    "), strings.Join(wlines, "\n    ")))
		}
	}
	for key := range want {
		if !seen[key] {
			out = append(out, fmt.Sprintf("missing series %s (%d exemplars)", key, len(want[key])))
		}
	}
	sort.Strings(out)
	return out
}

// secondsToMs reads the API's decimal seconds ("1700000000.123") as ms
// without a float's rounding.
func secondsToMs(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	if len(frac) > 3 {
		return 0, fmt.Errorf("time %q finer than ms", s)
	}
	v, err := strconv.ParseInt(sec+(frac + "000")[:3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q: %w", s, err)
	}
	return v, nil
}
