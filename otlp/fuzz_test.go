package otlp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// fuzzContentTypes indexes the Content-Type a fuzz input is sent with.
var fuzzContentTypes = []string{contentTypeProtobuf, contentTypeJSON, "text/plain", ""}

// lastBatch keeps the batch of the request in flight (fuzzing runs
// inputs one at a time per process).
type lastBatch struct{ batch []actastore.SeriesSamples }

func (a *lastBatch) Commit(_ context.Context, b *actastore.Batch) (actastore.Result, error) {
	a.batch = a.batch[:0]
	for _, s := range b.Series {
		if len(s.Samples) > 0 {
			a.batch = append(a.batch, actastore.SeriesSamples{Labels: s.Labels, Samples: s.Samples})
		}
	}
	return actastore.Result{}, nil
}

// checkBatch fails on a batch the store would find malformed: every series
// needs __name__, sorted, unique, non-empty labels and a sample.
func checkBatch(t *testing.T, batch []actastore.SeriesSamples) {
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
		if len(s.Samples) == 0 {
			t.Fatalf("series without samples: %s", s.Labels)
		}
	}
}

// FuzzHandler feeds arbitrary bodies to the HTTP handler under each
// content type (ct&3), plain or declared gzip (gz) or zstd (gz and ct&4). Whatever comes in, the answer is a
// status from the OTLP/HTTP set, a 200 body decodes as a response, and no
// malformed series reaches the store. Seeds: testdata/fuzz/FuzzHandler.
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
	rcv, err := New(cfg, app, discardLogger, nil)
	if err != nil {
		f.Fatal(err)
	}
	handler := rcv.Handler()
	f.Fuzz(func(t *testing.T, ct uint8, gz bool, body []byte) {
		app.batch = nil
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
