package otlp

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// fuzzContentTypes indexes the Content-Type a fuzz input is sent with.
var fuzzContentTypes = []string{contentTypeProtobuf, contentTypeJSON, "text/plain", ""}

// lastBatch keeps the batch of the request in flight (fuzzing runs
// inputs one at a time per process).
type lastBatch struct{ batch []actastore.SeriesData }

func (a *lastBatch) Commit(_ context.Context, b *actastore.Batch) (actastore.Result, error) {
	a.batch = append(a.batch[:0], b.Series...)
	return actastore.Result{}, nil
}

// checkBatch fails on a batch the store would find malformed: every series
// needs __name__, sorted, unique, non-empty labels and data; every sample
// and histogram a time after the epoch; exemplars non-empty label values,
// sorted unique names, and a time.
func checkBatch(t *testing.T, batch []actastore.SeriesData) {
	for _, s := range batch {
		if s.Labels.Get(labels.MetricName) == "" {
			t.Fatalf("series without __name__: %s", s.Labels)
		}
		prev := ""
		s.Labels.Range(func(l labels.Label) {
			if l.Name <= prev || l.Value == "" {
				t.Fatalf("labels unsorted, repeated or empty: %s", s.Labels)
			}
			prev = l.Name
		})
		if len(s.Samples) == 0 && len(s.Histograms) == 0 && len(s.Exemplars) == 0 {
			t.Fatalf("series without data: %s", s.Labels)
		}
		for _, smp := range s.Samples {
			if smp.T <= 0 {
				t.Fatalf("%s: sample at %d", s.Labels, smp.T)
			}
		}
		for _, h := range s.Histograms {
			if h.T <= 0 || (h.H == nil) == (h.FH == nil) {
				t.Fatalf("%s: histogram at %d, int %v float %v", s.Labels, h.T, h.H != nil, h.FH != nil)
			}
		}
		// A start timestamp belongs to a sample of its series (0 is none:
		// never passed on).
		for _, st := range s.SampleStarts {
			if st.ST == 0 || !slices.ContainsFunc(s.Samples, func(x actastore.Sample) bool { return x.T == st.T }) {
				t.Fatalf("%s: start timestamp %v of no sample", s.Labels, st)
			}
		}
		for _, st := range s.HistogramStarts {
			if st.ST == 0 || !slices.ContainsFunc(s.Histograms, func(x actastore.HistogramSample) bool { return x.T == st.T }) {
				t.Fatalf("%s: start timestamp %v of no histogram", s.Labels, st)
			}
		}
		for _, e := range s.Exemplars {
			if e.T <= 0 {
				t.Fatalf("%s: exemplar at %d", s.Labels, e.T)
			}
			prev := ""
			first := true
			e.Labels.Range(func(l labels.Label) {
				if (!first && l.Name <= prev) || l.Value == "" {
					t.Fatalf("%s: exemplar labels unsorted, repeated or empty: %s", s.Labels, e.Labels)
				}
				prev, first = l.Name, false
			})
		}
	}
}

// FuzzHandler feeds arbitrary bodies to the HTTP handler under each
// content type (ct&3), plain or declared gzip (gz) or zstd (gz and ct&4),
// to a receiver with delta_temporality reject, convert or native
// ((ct>>3)%3; the converting one keeps its sums across inputs, as a
// server does). Whatever comes in, the answer is a status from the
// OTLP/HTTP set, a 200 body decodes as a response, and no malformed series,
// sample, histogram or exemplar reaches the store. Seeds:
// testdata/fuzz/FuzzHandler.
//
// Run it with the otlpfuzz tag, which leaves out the tests linking
// Prometheus (coverage over that binary makes minimization stall):
//
//	go test -tags otlpfuzz -run '^$' -fuzz FuzzHandler -fuzztime 15s ./otlp/
func FuzzHandler(f *testing.F) {
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 1 << 20
	cfg.MaxDecompressedBytes = 4 << 20
	app := &lastBatch{}
	var handlers []http.Handler
	for _, mode := range []DeltaMode{DeltaReject, DeltaConvert, DeltaNative} {
		cfg.DeltaTemporality = mode
		rcv, err := New(cfg, app, discardLogger, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { _ = rcv.Close() })
		handlers = append(handlers, rcv.Handler())
	}
	f.Fuzz(func(t *testing.T, ct uint8, gz bool, body []byte) {
		app.batch = nil
		handler := handlers[int(ct>>3)%len(handlers)]
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
		if c := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]; c != "" {
			req.Header.Set("Content-Type", c)
		}
		switch {
		case gz && ct&4 != 0:
			req.Header.Set("Content-Encoding", "zstd")
		case gz:
			req.Header.Set("Content-Encoding", "gzip")
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		checkBatch(t, app.batch)
		switch w.Code {
		case http.StatusOK:
			decodeResponse(t, httpAnswer{status: w.Code, contentType: w.Header().Get("Content-Type"), body: w.Body.Bytes()})
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			decodeStatus(t, httpAnswer{status: w.Code, contentType: w.Header().Get("Content-Type"), body: w.Body.Bytes()})
		case http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("status %d: %q", w.Code, w.Body.Bytes())
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzHandler from real
// requests when OTLP_WRITE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("OTLP_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set OTLP_WRITE_FUZZ_SEEDS=1 to rewrite the seed corpus")
	}
	all := sampleMetrics()
	sm := all.ResourceMetrics().At(0).ScopeMetrics().At(0)
	addSummary(sm, "rpc.latency", "s", t0ns, 10, 2.5, [][2]float64{{0.5, 0.1}, {0.99, 0.7}})
	addExpHistogram(sm, "native", pmetric.AggregationTemporalityCumulative, t0ns)
	addSum(sm, "delta", "", true, pmetric.AggregationTemporalityDelta, t0ns, 1, nil)
	dp := addGauge(sm, "stale", "", t0ns, 1, map[string]any{"a.b": "1", "a_b": "2", "": "empty key"})
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	addGauge(sm, "at_zero", "", 0, 1, nil)

	// Deltas of every kind with exemplars (values across the bounds, with
	// and without trace context and time, one without a value).
	deltas := sampleMetrics()
	dsm := deltas.ResourceMetrics().At(0).ScopeMetrics().At(0)
	c := addDeltaMetric(dsm, "requests", "", pmetric.MetricTypeSum, true)
	sp := deltaSumPoint(c, dStart, dT1, 3, map[string]any{"code": "200"})
	addExemplar(sp.Exemplars(), dT1-1e9, 1, 0xa1)
	sp.Exemplars().AppendEmpty().FilteredAttributes().PutStr("user", "u1")
	h := addDeltaMetric(dsm, "latency", "s", pmetric.MetricTypeHistogram, false)
	hp := deltaHistPoint(h, dStart, dT1, []float64{0.1, 1}, []uint64{1, 2, 1}, 4)
	addExemplar(hp.Exemplars(), dT1-2e9, 0.05, 0xa2)
	addExemplar(hp.Exemplars(), 0, 7, 0xa3)
	e := addDeltaMetric(dsm, "size", "By", pmetric.MetricTypeExponentialHistogram, false)
	deltaExpPoint(e, dStart, dT1, 2, 3, []uint64{1, 0, 2}, 1, 7.5)
	later := pmetric.NewMetrics()
	deltas.CopyTo(later)
	walkMetrics(later, func(m pmetric.Metric) {
		forEachExemplarSlice(m, func(dp any, _ pmetric.ExemplarSlice) {
			type span interface{ SetStartTimestamp(pcommon.Timestamp) }
			type at interface{ SetTimestamp(pcommon.Timestamp) }
			dp.(span).SetStartTimestamp(dT1)
			dp.(at).SetTimestamp(dT2)
		})
	})

	// Start times on every kind of point: before, at and after the point,
	// beyond int64 nanoseconds.
	starts := pmetric.NewMetrics()
	ssm := starts.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	addGauge(ssm, "g", "", t0ns, 1, nil).SetStartTimestamp(t0ns - 1e9)
	addHistogram(ssm, "h", "s", t0ns, []float64{1}, []uint64{1, 1}, nil, nil).SetStartTimestamp(t0ns)
	addSummary(ssm, "q", "", t0ns, 1, 1, [][2]float64{{0.5, 1}}).SetStartTimestamp(t0ns + 1e9)
	addExpHistogram(ssm, "e", pmetric.AggregationTemporalityCumulative, t0ns)
	ssm.Metrics().At(ssm.Metrics().Len() - 1).ExponentialHistogram().DataPoints().At(0).SetStartTimestamp(math.MaxUint64)

	seeds := map[string]struct {
		ct   uint8
		gz   bool
		body []byte
	}{
		"proto":        {0, false, protoBody(t, all)},
		"json":         {1, false, jsonBody(t, all)},
		"proto_gzip":   {0, true, gzipped(t, protoBody(t, all))},
		"json_gzip":    {1, true, gzipped(t, jsonBody(t, all))},
		"proto_empty":  {0, false, nil},
		"json_garbage": {1, false, []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[{"asInt":"1`)},
		"text":         {2, false, []byte("hello")},
		"proto_zstd":   {4, true, zstded(t, protoBody(t, all))},
		"json_zstd":    {5, true, zstded(t, jsonBody(t, all))},
		// ct>>3: 1 converts deltas, 2 stores them natively.
		"proto_delta_convert":       {8, false, protoBody(t, deltas)},
		"proto_delta_convert_later": {8, false, protoBody(t, later)},
		"json_delta_native":         {17, false, jsonBody(t, deltas)},
		"proto_start_times":         {0, false, protoBody(t, starts)},
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzHandler")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range seeds {
		content := fmt.Sprintf("go test fuzz v1\nbyte(%q)\nbool(%v)\n[]byte(%q)\n", rune(s.ct), s.gz, s.body)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
