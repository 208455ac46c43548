//go:build !otlpfuzz

package otlp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// deltaRequests are three requests of one client: delta counters (two
// streams), a delta up-down counter, a delta histogram and a delta
// exponential histogram, with exemplars; the second request carries a
// point out of order, the third one a start before its stream's, a point
// without a recorded value and a histogram with new bounds (which
// restarts its sum).
func deltaRequests() []pmetric.Metrics {
	req := func(end uint64, f func(sm pmetric.ScopeMetrics)) pmetric.Metrics {
		md := pmetric.NewMetrics()
		sm := newResource(md, svc)
		f(sm)
		addGauge(sm, "g", "", end, 1, nil)
		return md
	}
	bounds := []float64{0.1, 1}
	return []pmetric.Metrics{
		req(dT1, func(sm pmetric.ScopeMetrics) {
			c := addDeltaMetric(sm, "http.requests", "{request}", pmetric.MetricTypeSum, true)
			dp := deltaSumPoint(c, dStart, dT1, 3, map[string]any{"code": "200"})
			addExemplar(dp.Exemplars(), dT1-1e9, 1, 0xa1)
			deltaSumPoint(c, dStart, dT1, 1, map[string]any{"code": "500"})
			u := addDeltaMetric(sm, "queue.depth", "", pmetric.MetricTypeSum, false)
			deltaSumPoint(u, dStart, dT1, 5, nil)
			h := addDeltaMetric(sm, "latency", "s", pmetric.MetricTypeHistogram, false)
			hp := deltaHistPoint(h, dStart, dT1, bounds, []uint64{1, 2, 0}, 1.25)
			addExemplar(hp.Exemplars(), dT1-2e9, 0.5, 0xa2)
			e := addDeltaMetric(sm, "size", "By", pmetric.MetricTypeExponentialHistogram, false)
			deltaExpPoint(e, dStart, dT1, 2, 3, []uint64{1, 0, 2}, 1, 7.5)
		}),
		req(dT2, func(sm pmetric.ScopeMetrics) {
			c := addDeltaMetric(sm, "http.requests", "{request}", pmetric.MetricTypeSum, true)
			dp := deltaSumPoint(c, dT1, dT2, 2, map[string]any{"code": "200"})
			addExemplar(dp.Exemplars(), dT2-1e9, 1, 0xb1)
			deltaSumPoint(c, dStart, dT1-5e9, 7, map[string]any{"code": "500"}) // before the stream's last point
			u := addDeltaMetric(sm, "queue.depth", "", pmetric.MetricTypeSum, false)
			deltaSumPoint(u, dT1, dT2, -2, nil)
			h := addDeltaMetric(sm, "latency", "s", pmetric.MetricTypeHistogram, false)
			hp := deltaHistPoint(h, dT1, dT2, bounds, []uint64{0, 1, 1}, 3.5)
			addExemplar(hp.Exemplars(), dT2-2e9, 2.5, 0xb2)
			e := addDeltaMetric(sm, "size", "By", pmetric.MetricTypeExponentialHistogram, false)
			deltaExpPoint(e, dT1, dT2, 1, 1, []uint64{4}, 0, 10)
		}),
		req(dT3, func(sm pmetric.ScopeMetrics) {
			c := addDeltaMetric(sm, "http.requests", "{request}", pmetric.MetricTypeSum, true)
			deltaSumPoint(c, dStart-1e9, dT3, 4, map[string]any{"code": "200"}) // starts before the stream
			deltaSumPoint(c, dT1, dT3, 6, map[string]any{"code": "500"})
			// No recorded value: the processor adds it up like any other
			// and carries the stream's flags, so no stale marker is left
			// (as in Prometheus).
			u := addDeltaMetric(sm, "queue.depth", "", pmetric.MetricTypeSum, false)
			deltaSumPoint(u, dT2, dT3, 0, nil).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			h := addDeltaMetric(sm, "latency", "s", pmetric.MetricTypeHistogram, false)
			deltaHistPoint(h, dT2, dT3, []float64{0.5}, []uint64{2, 1}, 2)
		}),
	}
}

// newConvertingTranslator is a Translator under delta_temporality convert
// with a converter of its own, as a Receiver gives its translators.
func newConvertingTranslator(t *testing.T, cfg Config, reg prometheus.Registerer) *Translator {
	t.Helper()
	cfg.DeltaTemporality = DeltaConvert
	d, err := newDeltaConverter(cfg.DeltaConversion, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	})
	tr := NewTranslator(cfg)
	tr.delta = d
	return tr
}

// TestDeltaConvertMatchesPrometheus sends the same requests through our
// conversion and through Prometheus's otlp-deltatocumulative path (its
// deltatocumulative processor, then FromMetrics): series, native
// histograms and metadata agree request by request, the running sums are
// the ones written out by hand, the points the processor drops are
// reported. Exemplars are each point's own, as Prometheus stores them
// when it ingests the same deltas natively; its conversion instead
// repeats the first point's (shown below).
func TestDeltaConvertMatchesPrometheus(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaConvert
	ours := newConvertingTranslator(t, cfg, nil)
	prom := newPrometheusD2C(t, cfg)
	native := cfg
	native.DeltaTemporality = DeltaNative

	job := `instance="pod-1", job="shop/checkout"`
	wantSums := [][]string{
		{
			`{__name__="http_requests_total", code="200", ` + job + `} 1700000000123 3`,
			`{__name__="http_requests_total", code="500", ` + job + `} 1700000000123 1`,
			`{__name__="queue_depth", ` + job + `} 1700000000123 5`,
		},
		{
			`{__name__="http_requests_total", code="200", ` + job + `} 1700000010123 5`,
			`{__name__="queue_depth", ` + job + `} 1700000010123 3`,
		},
		{
			`{__name__="http_requests_total", code="500", ` + job + `} 1700000020123 7`,
			`{__name__="queue_depth", ` + job + `} 1700000020123 3`,
		},
	}
	wantRejected := []int{0, 1, 1}
	var firstExemplars []string
	for i, md := range deltaRequests() {
		ref, err := prometheusTranslate(t, md, native) // each point's own exemplars
		if err != nil {
			t.Fatal(err)
		}
		p, err := prom.translate(md)
		if err != nil {
			t.Fatalf("request %d: Prometheus: %v", i+1, err)
		}
		n := md.DataPointCount()
		got := ours.Translate(md)

		diffLines(t, "series", formatSeries(got.Series), formatSeries(p.series))
		diffLines(t, "native histograms", formatHistSeries(got.Extras), formatHistSeries(p.hists))
		diffLines(t, "metadata", formatMetadata(got.Metadata), formatMetadataMap(p.meta))
		diffLines(t, "exemplars", formatExemplars(got.Extras), formatExemplars(ref.exemplars))
		var sums []string
		for _, l := range formatSeries(got.Series) {
			if strings.Contains(l, "http_requests") || strings.Contains(l, "queue_depth") {
				sums = append(sums, l)
			}
		}
		diffLines(t, "running sums", sums, wantSums[i])
		if got.DataPoints != n || got.Rejected != wantRejected[i] {
			t.Errorf("request %d: DataPoints %d Rejected %d, want %d and %d (%q)", i+1, got.DataPoints, got.Rejected, n, wantRejected[i], got.Reasons)
		}
		if wantRejected[i] > 0 && (len(got.Reasons) != 1 || !strings.Contains(got.Reasons[0], `metric "http.requests": delta data points dropped by the conversion to cumulative`)) {
			t.Errorf("request %d: reasons %q", i+1, got.Reasons)
		}
		switch i {
		case 0:
			firstExemplars = formatExemplars(p.exemplars)
		case 1:
			// Prometheus's conversion copies the stream's state, first
			// point's exemplars included, over every later point.
			var repeated []string
			for _, l := range formatExemplars(p.exemplars) {
				repeated = append(repeated, strings.ReplaceAll(l, "1700000010123", "1700000000123"))
			}
			diffLines(t, "Prometheus's converted exemplars are the first point's", repeated, firstExemplars)
		}
		if got.Exemplars != 2*btoi(i < 2) {
			t.Errorf("request %d: %d exemplars, want %d", i+1, got.Exemplars, 2*btoi(i < 2))
		}
		if t.Failed() {
			t.Fatalf("request %d differs", i+1)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDeltaConvertLimitAndMetrics: with max_streams 2, a third stream's
// points are rejected, and the processor's telemetry is on the registry.
func TestDeltaConvertLimitAndMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DeltaConversion.MaxStreams = 2
	reg := prometheus.NewPedanticRegistry()
	tr := newConvertingTranslator(t, cfg, reg)

	md := pmetric.NewMetrics()
	c := addDeltaMetric(newResource(md, svc), "c", "", pmetric.MetricTypeSum, true)
	for _, k := range []string{"a", "b", "c"} {
		deltaSumPoint(c, dStart, dT1, 1, map[string]any{"k": k})
	}
	got := tr.Translate(md)
	if got.Rejected != 1 || got.DataPoints != 3 || len(got.Series) != 3 { // two streams and target_info
		t.Fatalf("rejected %d of %d, %d series (%q)", got.Rejected, got.DataPoints, len(got.Series), got.Reasons)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP otelcol_deltatocumulative_datapoints_total total number of datapoints processed. may have 'error' attribute, if processing failed [Development]
# TYPE otelcol_deltatocumulative_datapoints_total counter
otelcol_deltatocumulative_datapoints_total 2
otelcol_deltatocumulative_datapoints_total{error="limit"} 1
# HELP otelcol_deltatocumulative_streams_limit upper limit of tracked streams [Development]
# TYPE otelcol_deltatocumulative_streams_limit gauge
otelcol_deltatocumulative_streams_limit 2
# HELP otelcol_deltatocumulative_streams_max_stale_seconds duration after which streams inactive streams are dropped [Development]
# TYPE otelcol_deltatocumulative_streams_max_stale_seconds gauge
otelcol_deltatocumulative_streams_max_stale_seconds 300
# HELP otelcol_deltatocumulative_streams_tracked number of streams tracked [Development]
# TYPE otelcol_deltatocumulative_streams_tracked gauge
otelcol_deltatocumulative_streams_tracked 2
`)); err != nil {
		t.Fatal(err)
	}
}

// failOnce fails the first Commit as an overloaded store would, then
// hands every batch to the real store.
type failOnce struct {
	st     *actastore.Store
	failed bool
}

func (f *failOnce) Commit(ctx context.Context, b *actastore.Batch) (actastore.Result, error) {
	if !f.failed {
		f.failed = true
		return actastore.Result{}, actastore.ErrOverloaded
	}
	return f.st.Commit(ctx, b)
}

// counterRequest is one delta of the counter "c" covering (start, end].
func counterRequest(t *testing.T, start, end uint64, v int64) []byte {
	md := pmetric.NewMetrics()
	deltaSumPoint(addDeltaMetric(newResource(md, svc), "c", "", pmetric.MetricTypeSum, true), start, end, v, nil)
	return protoBody(t, md)
}

func readCounter(t *testing.T, st *actastore.Store) []string {
	t.Helper()
	return formatSeries(readAll(t, st, labels.MustNewMatcher(labels.MatchEqual, "__name__", "c_total")))
}

func exportDelta(t *testing.T, url string, body []byte) (status int, rejected int64, msg string) {
	t.Helper()
	a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(body))
	if a.status != http.StatusOK {
		return a.status, 0, string(a.body)
	}
	ps := decodeResponse(t, a).PartialSuccess()
	return a.status, ps.RejectedDataPoints(), ps.ErrorMessage()
}

// TestDeltaConvertRetryAfterStoreFailure: the store refuses a request
// after its deltas were added up (503); the client's retry is reported as
// already added up, and the next point carries the sum with it: nothing
// counted twice, nothing lost from the sums, one point in time missing.
func TestDeltaConvertRetryAfterStoreFailure(t *testing.T) {
	st, err := actastore.Open(t.TempDir(), actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaConvert
	f := &failOnce{st: st, failed: true}
	url := startHTTP(t, cfg, f)

	if s, rej, msg := exportDelta(t, url, counterRequest(t, dStart, dT1, 3)); s != http.StatusOK || rej != 0 {
		t.Fatalf("first delta: %d, rejected %d %q", s, rej, msg)
	}
	f.failed = false
	second := counterRequest(t, dT1, dT2, 2)
	if s, _, msg := exportDelta(t, url, second); s != http.StatusServiceUnavailable {
		t.Fatalf("second delta with the store overloaded: %d %q, want 503", s, msg)
	}
	s, rej, msg := exportDelta(t, url, second) // the client's retry
	if s != http.StatusOK || rej != 1 || !strings.Contains(msg, "a retry of deltas already added up") {
		t.Fatalf("retry: %d, rejected %d %q; want 200, 1 rejected as already added up", s, rej, msg)
	}
	if s, rej, msg := exportDelta(t, url, counterRequest(t, dT2, dT3, 4)); s != http.StatusOK || rej != 0 {
		t.Fatalf("third delta: %d, rejected %d %q", s, rej, msg)
	}
	diffLines(t, "stored", readCounter(t, st), []string{
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000000123 3`,
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000020123 9`,
	})
}

// TestDeltaConvertRestart: the running sums live in memory. After a
// restart (a new Receiver over the reopened store) the next delta starts
// a new sum: the stored counter drops from 5 to 4, which PromQL reads as
// a counter reset, so increase() and rate() count the 4 in full and stay
// right; they undercount only when the first delta after the restart is
// larger than the sum before it (then no reset is visible).
func TestDeltaConvertRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaConvert
	run := func(reqs ...[]byte) {
		st, err := actastore.Open(dir, actastore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rcv, err := New(cfg, st, discardLogger, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rcv.Close()
		for _, body := range reqs {
			md, err := protoEncoder{}.unmarshalRequest(body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rcv.export(context.Background(), md.Metrics())
			if err != nil || resp.PartialSuccess().RejectedDataPoints() != 0 {
				t.Fatalf("export: %v %q", err, resp.PartialSuccess().ErrorMessage())
			}
		}
	}
	run(counterRequest(t, dStart, dT1, 3), counterRequest(t, dT1, dT2, 2))
	run(counterRequest(t, dT2, dT3, 4))

	st, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	diffLines(t, "stored across the restart", readCounter(t, st), []string{
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000000123 3`,
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000010123 5`,
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000020123 4`,
	})
}

// TestDeltaNativeStoredAsSent: under delta_temporality native each delta
// is stored as sent, typed unknown, the exponential histogram a gauge
// histogram (compared with Prometheus in TestTranslateRandomAgainstPrometheus
// too).
func TestDeltaNativeStoredAsSent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaNative
	tr := NewTranslator(cfg)
	for i, md := range deltaRequests()[:2] {
		ref, err := prometheusTranslate(t, md, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := tr.Translate(md)
		diffLines(t, "series", formatSeries(got.Series), formatSeries(ref.series))
		diffLines(t, "native histograms", formatHistSeries(got.Extras), formatHistSeries(ref.hists))
		diffLines(t, "metadata", formatMetadata(got.Metadata), formatMetadataMap(ref.meta))
		diffLines(t, "exemplars", formatExemplars(got.Extras), formatExemplars(ref.exemplars))
		if i == 1 {
			var lines []string
			for _, l := range formatSeries(got.Series) {
				if strings.Contains(l, "http_requests") {
					lines = append(lines, l)
				}
			}
			// The out-of-order point is stored too: nothing orders deltas.
			diffLines(t, "deltas as sent", lines, []string{
				`{__name__="http_requests_total", code="200", instance="pod-1", job="shop/checkout"} 1700000010123 2`,
				`{__name__="http_requests_total", code="500", instance="pod-1", job="shop/checkout"} 1699999995123 7`,
			})
		}
		for _, m := range got.Metadata {
			if m.Name != "g" && m.Name != "target_info" && m.Type != "unknown" {
				t.Errorf("%s typed %s, want unknown", m.Name, m.Type)
			}
		}
		for _, s := range got.Extras {
			for _, h := range s.Histograms {
				if h.H.CounterResetHint != histogram.GaugeType {
					t.Errorf("%s: reset hint %d, want GaugeType", s.Labels, h.H.CounterResetHint)
				}
			}
		}
	}
}

// TestDeltaConvertConcurrent: requests converting at once, each client
// with its own stream, add up exactly (run with -race too): the last
// stored value of every stream is the count of its deltas.
func TestDeltaConvertConcurrent(t *testing.T) {
	rec := &recorder{}
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaConvert
	url := startHTTP(t, cfg, rec)
	const clients, deltas = 8, 25
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range deltas {
				md := pmetric.NewMetrics()
				m := addDeltaMetric(newResource(md, svc), "c", "", pmetric.MetricTypeSum, true)
				deltaSumPoint(m, dStart+uint64(i)*1e9, dStart+uint64(i+1)*1e9, 1, map[string]any{"client": fmt.Sprint(c)})
				a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(protoBody(t, md)))
				if a.status != http.StatusOK {
					t.Errorf("client %d delta %d: %d %q", c, i, a.status, a.body)
					return
				}
			}
		})
	}
	wg.Wait()
	last := map[string]float64{}
	for _, s := range rec.series() {
		if s.Labels.Get("__name__") == "c_total" {
			last[s.Labels.Get("client")] = s.Samples[len(s.Samples)-1].V
		}
	}
	for c := range clients {
		if v := last[fmt.Sprint(c)]; v != deltas {
			t.Errorf("client %d: last sum %v, want %d", c, v, deltas)
		}
	}
}
