package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// recorder is an in-memory actastore.Appender that keeps every batch, or
// answers with a scripted result.
type recorder struct {
	mu      sync.Mutex
	batches [][]actastore.SeriesSamples
	extras  []actastore.SeriesExtras
	respond func(batch []actastore.SeriesSamples) (actastore.AppendResult, error)
}

// Commit keeps the float series and native histograms of each batch, or
// answers the float part with the scripted respond.
func (r *recorder) Commit(_ context.Context, b *actastore.Batch) (actastore.Result, error) {
	var floats []actastore.SeriesSamples
	var extras []actastore.SeriesExtras
	nh := 0
	for _, s := range b.Series {
		if len(s.Samples) > 0 {
			floats = append(floats, actastore.SeriesSamples{Labels: s.Labels, Samples: s.Samples})
		}
		if len(s.Histograms) > 0 || len(s.Exemplars) > 0 {
			extras = append(extras, actastore.SeriesExtras{Labels: s.Labels, Histograms: s.Histograms, Exemplars: s.Exemplars})
			nh += len(s.Histograms)
		}
	}
	var res actastore.Result
	if r.respond != nil {
		ar, err := r.respond(floats)
		if err != nil {
			return actastore.Result{}, err
		}
		res.Samples = actastore.Counts{Written: ar.SamplesWritten, Rejected: ar.SamplesRejected}
		res.Errors = ar.Errors
		return res, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(floats) > 0 {
		r.batches = append(r.batches, floats)
	}
	r.extras = append(r.extras, extras...)
	res.Samples.Written, _, _, _ = b.Len()
	res.Histograms.Written = nh
	res.Metadata.Written = len(b.Metadata)
	return res, nil
}

func (r *recorder) series() []actastore.SeriesSamples {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []actastore.SeriesSamples
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

// startHTTP serves a Receiver over real loopback HTTP on a gorilla/mux
// router, as the server mounts it.
func startHTTP(t testing.TB, cfg Config, app actastore.Appender) string {
	t.Helper()
	rcv, err := New(cfg, app, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rcv.Close() })
	router := mux.NewRouter()
	rcv.RegisterRoutes(router)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sampleMetrics is a small request: one gauge, one counter, one histogram.
func sampleMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	addGauge(sm, "queue.depth", "", t0ns, 3, map[string]any{"queue": "q1"})
	addSum(sm, "jobs.done", "", true, pmetric.AggregationTemporalityCumulative, t0ns, 12, nil)
	addHistogram(sm, "job.duration", "s", t0ns, []float64{1, 10}, []uint64{1, 2, 3}, ptr(40.0), nil)
	return md
}

var sampleWant = []string{
	`{__name__="queue_depth", instance="pod-1", job="shop/checkout", queue="q1"} 1700000000123 3`,
	`{__name__="jobs_done_total", instance="pod-1", job="shop/checkout"} 1700000000123 12`,
	`{__name__="job_duration_seconds_sum", instance="pod-1", job="shop/checkout"} 1700000000123 40`,
	`{__name__="job_duration_seconds_count", instance="pod-1", job="shop/checkout"} 1700000000123 6`,
	`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="1"} 1700000000123 1`,
	`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="10"} 1700000000123 3`,
	`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="+Inf"} 1700000000123 6`,
	targetInfo(t0ms),
}

func protoBody(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonBody(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t testing.TB, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

type httpAnswer struct {
	status      int
	contentType string
	retryAfter  string
	body        []byte
}

// post sends body (chunked when its length is unknown) with the two
// headers, each left out when empty.
func post(t testing.TB, url, contentType, encoding string, body io.Reader) httpAnswer {
	t.Helper()
	a := testkit.Send(t, http.MethodPost, url, map[string]string{"Content-Type": contentType, "Content-Encoding": encoding}, body)
	return httpAnswer{a.Code, a.Header.Get("Content-Type"), a.Header.Get("Retry-After"), a.Body}
}

// decodeResponse decodes a 200 answer in the encoding it declares.
func decodeResponse(t testing.TB, a httpAnswer) pmetricotlp.ExportResponse {
	t.Helper()
	resp := pmetricotlp.NewExportResponse()
	var err error
	switch a.contentType {
	case contentTypeProtobuf:
		err = resp.UnmarshalProto(a.body)
	case contentTypeJSON:
		err = resp.UnmarshalJSON(a.body)
	default:
		t.Fatalf("response Content-Type %q", a.contentType)
	}
	if err != nil {
		t.Fatalf("cannot decode response %q: %v", a.body, err)
	}
	return resp
}

// decodeStatus decodes a google.rpc.Status answer in its declared encoding.
func decodeStatus(t testing.TB, a httpAnswer) *spb.Status {
	t.Helper()
	st := &spb.Status{}
	var err error
	switch a.contentType {
	case contentTypeProtobuf:
		err = proto.Unmarshal(a.body, st)
	case contentTypeJSON:
		err = protojson.Unmarshal(a.body, st)
	default:
		t.Fatalf("status Content-Type %q, body %q", a.contentType, a.body)
	}
	if err != nil {
		t.Fatalf("cannot decode status %q: %v", a.body, err)
	}
	return st
}

func TestHTTPAcceptsEveryEncodingOnEveryPath(t *testing.T) {
	md := sampleMetrics()
	bodies := []struct {
		name, ct, ce string
		body         []byte
	}{
		{"protobuf", contentTypeProtobuf, "", protoBody(t, md)},
		{"json", contentTypeJSON, "", jsonBody(t, md)},
		{"protobuf+gzip", contentTypeProtobuf, "gzip", gzipped(t, protoBody(t, md))},
		{"json+gzip, charset", contentTypeJSON + "; charset=utf-8", "gzip", gzipped(t, jsonBody(t, md))},
		{"protobuf+zstd", contentTypeProtobuf, "zstd", zstded(t, protoBody(t, md))},
	}
	for _, path := range Paths {
		for _, b := range bodies {
			t.Run(path+" "+b.name, func(t *testing.T) {
				rec := &recorder{}
				url := startHTTP(t, DefaultConfig(), rec)
				a := post(t, url+path, b.ct, b.ce, bytes.NewReader(b.body))
				if a.status != http.StatusOK {
					t.Fatalf("status %d, body %q", a.status, a.body)
				}
				if want, _, _ := strings.Cut(b.ct, ";"); a.contentType != want {
					t.Fatalf("response Content-Type %q, want %q", a.contentType, want)
				}
				resp := decodeResponse(t, a)
				if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
					t.Fatalf("unexpected partial success %d %q", ps.RejectedDataPoints(), ps.ErrorMessage())
				}
				diffLines(t, "stored", formatSeries(rec.series()), sampleWant)
			})
		}
	}
}

func TestHTTPPartialSuccess(t *testing.T) {
	md := sampleMetrics()
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	addExpHistogram(sm, "native", pmetric.AggregationTemporalityCumulative, t0ns)
	addSum(sm, "deltas", "", true, pmetric.AggregationTemporalityDelta, t0ns, 1, nil)
	addExpHistogram(sm, "coarse", pmetric.AggregationTemporalityCumulative, t0ns)
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(sm.Metrics().Len() - 1).ExponentialHistogram().DataPoints().At(0).SetScale(-5)

	for _, enc := range []encoder{protoEncoder{}, jsonEncoder{}} {
		t.Run(enc.contentType(), func(t *testing.T) {
			rec := &recorder{}
			url := startHTTP(t, DefaultConfig(), rec)
			var req []byte
			if enc.contentType() == contentTypeJSON {
				req = jsonBody(t, md)
			} else {
				req = protoBody(t, md)
			}
			a := post(t, url+"/v1/metrics", enc.contentType(), "", bytes.NewReader(req))
			if a.status != http.StatusOK {
				t.Fatalf("status %d, body %q", a.status, a.body)
			}
			ps := decodeResponse(t, a).PartialSuccess()
			if ps.RejectedDataPoints() != 2 {
				t.Fatalf("rejected %d, want 2 (%q)", ps.RejectedDataPoints(), ps.ErrorMessage())
			}
			for _, want := range []string{"2 of 6 data points rejected", `metric "coarse": exponential histogram scale -5`, `metric "deltas": delta temporality`} {
				if !strings.Contains(ps.ErrorMessage(), want) {
					t.Errorf("message %q lacks %q", ps.ErrorMessage(), want)
				}
			}
			diffLines(t, "stored", formatSeries(rec.series()), sampleWant)
			if len(rec.extras) != 1 || rec.extras[0].Labels.Get("__name__") != "native_seconds" || len(rec.extras[0].Histograms) != 1 {
				t.Fatalf("native histograms stored: %v", rec.extras)
			}
		})
	}
}

func TestHTTPStoreErrors(t *testing.T) {
	body := protoBody(t, sampleMetrics())
	cases := []struct {
		name       string
		respond    func([]actastore.SeriesSamples) (actastore.AppendResult, error)
		status     int
		retryAfter string
		code       codes.Code
		rejected   int64
		message    string
	}{
		{
			name: "overloaded is retryable",
			respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
				return actastore.AppendResult{}, actastore.ErrOverloaded
			},
			status: http.StatusServiceUnavailable, retryAfter: "1", code: codes.Unavailable,
			message: "overloaded",
		},
		{
			name: "closed is retryable",
			respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
				return actastore.AppendResult{}, actastore.ErrClosed
			},
			status: http.StatusServiceUnavailable, retryAfter: "1", code: codes.Unavailable,
			message: "store closed",
		},
		{
			name: "internal",
			respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
				return actastore.AppendResult{}, errors.New("disk on fire")
			},
			status: http.StatusInternalServerError, code: codes.Internal, message: "disk on fire",
		},
		{
			name: "whole batch refused as data counts every data point",
			respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
				return actastore.AppendResult{}, fmt.Errorf("%w: limit 10", actastore.ErrTooManySeries)
			},
			status: http.StatusOK, rejected: 3, message: "3 of 3 data points rejected: store refused the batch: actastore: series limit exceeded: limit 10",
		},
		{
			name: "some samples refused",
			respond: func(b []actastore.SeriesSamples) (actastore.AppendResult, error) {
				return actastore.AppendResult{SamplesWritten: 6, SamplesRejected: 2,
					Errors: []error{actastore.ErrOutOfOrder, actastore.ErrDuplicateSample}}, nil
			},
			status: http.StatusOK, rejected: 2,
			message: "2 of 3 data points rejected: store rejected 2 of the batch's samples; actastore: out-of-order sample; actastore: duplicate sample for timestamp",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := startHTTP(t, DefaultConfig(), &recorder{respond: tc.respond})
			a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(body))
			if a.status != tc.status || a.retryAfter != tc.retryAfter {
				t.Fatalf("status %d Retry-After %q, want %d %q; body %q", a.status, a.retryAfter, tc.status, tc.retryAfter, a.body)
			}
			if tc.status != http.StatusOK {
				st := decodeStatus(t, a)
				if codes.Code(st.Code) != tc.code || !strings.Contains(st.Message, tc.message) {
					t.Fatalf("status %v %q, want %v containing %q", codes.Code(st.Code), st.Message, tc.code, tc.message)
				}
				return
			}
			ps := decodeResponse(t, a).PartialSuccess()
			if ps.RejectedDataPoints() != tc.rejected || ps.ErrorMessage() != tc.message {
				t.Fatalf("partial success %d %q, want %d %q", ps.RejectedDataPoints(), ps.ErrorMessage(), tc.rejected, tc.message)
			}
		})
	}
}

func TestHTTPRefusesBadRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 64 << 10
	cfg.MaxDecompressedBytes = 256 << 10

	bomb := gzipped(t, make([]byte, 64<<20)) // 64 MiB of zeros in ~64 KiB
	if len(bomb) > int(cfg.MaxBodyBytes) {
		t.Fatalf("bomb is %d bytes, over the body cap; the test would not reach the decompressor", len(bomb))
	}
	zbomb := zstded(t, make([]byte, 64<<20)) // one frame declaring a 64 MiB window
	var streamed bytes.Buffer                // small window: only the output cap stops it
	zw, err := zstd.NewWriter(&streamed, zstd.WithWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zeros)
	}
	zw.Close()
	zbomb2 := streamed.Bytes()
	if len(zbomb) > int(cfg.MaxBodyBytes) || len(zbomb2) > int(cfg.MaxBodyBytes) {
		t.Fatalf("zstd bombs are %d and %d bytes, over the body cap", len(zbomb), len(zbomb2))
	}
	huge := pmetric.NewMetrics()
	addGauge(newResource(huge, svc), "g", "", t0ns, 1, map[string]any{"blob": strings.Repeat("v", 128<<10)})
	valid := protoBody(t, sampleMetrics())

	cases := []struct {
		name         string
		method       string
		ct, ce       string
		body         io.Reader
		status       int
		msg          string
		statusFormat string // "" for text/plain answers
	}{
		{"gzip bomb", "", contentTypeProtobuf, "gzip", bytes.NewReader(bomb), 413, "max_decompressed_bytes", contentTypeProtobuf},
		{"zstd bomb, big window", "", contentTypeJSON, "zstd", bytes.NewReader(zbomb), 413, "zstd frame needs more than max_decompressed_bytes", contentTypeJSON},
		{"zstd bomb, small window", "", contentTypeProtobuf, "zstd", bytes.NewReader(zbomb2), 413, "body decompresses beyond max_decompressed_bytes", contentTypeProtobuf},
		{"not zstd", "", contentTypeProtobuf, "zstd", bytes.NewReader(valid), 400, "zstd", contentTypeProtobuf},
		{"body over cap with Content-Length", "", contentTypeProtobuf, "", bytes.NewReader(protoBody(t, huge)), 413, "max_body_bytes", contentTypeProtobuf},
		{"body over cap, chunked", "", contentTypeJSON, "", io.MultiReader(strings.NewReader("{"), bytes.NewReader(make([]byte, 128<<10))), 413, "max_body_bytes", contentTypeJSON},
		{"malformed protobuf", "", contentTypeProtobuf, "", strings.NewReader("\xff\xff\xff\xff not protobuf"), 400, "cannot decode application/x-protobuf", contentTypeProtobuf},
		{"malformed JSON", "", contentTypeJSON, "", strings.NewReader(`{"resourceMetrics": [`), 400, "cannot decode application/json", contentTypeJSON},
		{"not gzip", "", contentTypeProtobuf, "gzip", bytes.NewReader(valid), 400, "gzip", contentTypeProtobuf},
		{"truncated gzip", "", contentTypeProtobuf, "gzip", bytes.NewReader(gzipped(t, valid)[:40]), 400, "gzip", contentTypeProtobuf},
		{"wrong content type", "", "text/plain", "", bytes.NewReader(valid), 415, "unsupported media type", ""},
		{"no content type", "", "", "", bytes.NewReader(valid), 415, "unsupported media type", ""},
		{"unsupported encoding", "", contentTypeProtobuf, "br", bytes.NewReader(valid), 415, "unsupported content encoding", ""},
		{"GET", http.MethodGet, contentTypeProtobuf, "", nil, 405, "method not allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			url := startHTTP(t, cfg, rec)
			var a httpAnswer
			if tc.method == http.MethodGet {
				resp, err := http.Get(url + "/v1/metrics")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				a = httpAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
				if resp.Header.Get("Allow") != http.MethodPost {
					t.Errorf("Allow = %q", resp.Header.Get("Allow"))
				}
			} else {
				a = post(t, url+"/v1/metrics", tc.ct, tc.ce, tc.body)
			}
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body %q", a.status, tc.status, a.body)
			}
			if tc.statusFormat != "" {
				st := decodeStatus(t, a)
				if codes.Code(st.Code) != codes.InvalidArgument || !strings.Contains(st.Message, tc.msg) {
					t.Fatalf("status %v %q, want InvalidArgument containing %q", codes.Code(st.Code), st.Message, tc.msg)
				}
			} else if !strings.Contains(string(a.body), tc.msg) {
				t.Fatalf("body %q lacks %q", a.body, tc.msg)
			}
			if n := len(rec.series()); n != 0 {
				t.Fatalf("%d series stored from a refused request", n)
			}
		})
	}
}

func TestHTTPHugeAttributeWithinCapIsStoredVerbatim(t *testing.T) {
	rec := &recorder{}
	url := startHTTP(t, DefaultConfig(), rec)
	md := pmetric.NewMetrics()
	big := strings.Repeat("é", 1<<20) // 2 MiB of UTF-8
	addGauge(newResource(md, nil), "g", "", t0ns, 1, map[string]any{"blob": big})
	a := post(t, url+"/v1/metrics", contentTypeProtobuf, "gzip", bytes.NewReader(gzipped(t, protoBody(t, md))))
	if a.status != http.StatusOK {
		t.Fatalf("status %d body %q", a.status, a.body)
	}
	got := rec.series()
	if len(got) != 1 || got[0].Labels.Get("blob") != big {
		t.Fatalf("huge value not stored verbatim")
	}
}

func TestHTTPStoreRejectsHugeLabelValues(t *testing.T) {
	// A store with a label length limit refuses the series as invalid: the
	// client hears about it in partial_success, not as a failure.
	rec := &recorder{respond: func(b []actastore.SeriesSamples) (actastore.AppendResult, error) {
		for _, s := range b {
			if len(s.Labels.Get("blob")) > 4096 {
				return actastore.AppendResult{SamplesRejected: len(s.Samples), Errors: []error{
					errors.Join(actastore.ErrInvalidSeries, errors.New("label blob: value longer than 4096 bytes"))}}, nil
			}
		}
		return actastore.AppendResult{}, nil
	}}
	url := startHTTP(t, DefaultConfig(), rec)
	md := pmetric.NewMetrics()
	addGauge(newResource(md, nil), "g", "", t0ns, 1, map[string]any{"blob": strings.Repeat("v", 8192)})
	a := post(t, url+"/v1/metrics", contentTypeJSON, "", bytes.NewReader(jsonBody(t, md)))
	ps := decodeResponse(t, a).PartialSuccess()
	if a.status != 200 || ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), "value longer than 4096 bytes") {
		t.Fatalf("status %d partial %d %q", a.status, ps.RejectedDataPoints(), ps.ErrorMessage())
	}
}

func TestHTTPEmptyRequest(t *testing.T) {
	rec := &recorder{}
	url := startHTTP(t, DefaultConfig(), rec)
	a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(nil))
	if a.status != http.StatusOK {
		t.Fatalf("status %d", a.status)
	}
	if ps := decodeResponse(t, a).PartialSuccess(); ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
		t.Fatalf("partial success on an empty request: %d %q", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if len(rec.batches) != 0 {
		t.Fatalf("an empty request reached the store")
	}
}

// The store must see samples, never the decoded request: check the handler
// does not hand it aliases of its pooled body buffer.
func TestHTTPBatchesSurviveBufferReuse(t *testing.T) {
	rec := &recorder{}
	url := startHTTP(t, DefaultConfig(), rec)
	for i := range 20 {
		md := pmetric.NewMetrics()
		addGauge(newResource(md, nil), "g", "", t0ns+uint64(i)*1e9, float64(i), map[string]any{"i": strings.Repeat(string(rune('a'+i)), 100)})
		if a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(protoBody(t, md))); a.status != 200 {
			t.Fatal(a.status)
		}
	}
	for i, s := range rec.series() {
		if want := strings.Repeat(string(rune('a'+i)), 100); s.Labels.Get("i") != want {
			t.Fatalf("series %d label changed after its request: %q", i, s.Labels.Get("i"))
		}
	}
}

var discardLogger = slog.New(slog.DiscardHandler)

func TestHTTPWaitsForASlotThenAnswers503(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConcurrent = 1
	rec := &recorder{}
	rcv, err := New(cfg, rec, discardLogger, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rcv.acquire(context.Background()); err != nil { // the only slot is busy
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/metrics", bytes.NewReader(protoBody(t, sampleMetrics())))
	req.Header.Set("Content-Type", contentTypeProtobuf)
	w := httptest.NewRecorder()
	rcv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("status %d Retry-After %q, want 503 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	if len(rec.series()) != 0 {
		t.Fatal("stored without a slot")
	}

	// Once the slot is free the same request goes through.
	rcv.release()
	req = httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(protoBody(t, sampleMetrics())))
	req.Header.Set("Content-Type", contentTypeProtobuf)
	w = httptest.NewRecorder()
	rcv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d after release", w.Code)
	}
	diffLines(t, "stored", formatSeries(rec.series()), sampleWant)
}
