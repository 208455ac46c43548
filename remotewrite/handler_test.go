package remotewrite

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// staleNaN is Prometheus's stale marker: a NaN with a specific payload that
// must survive bit for bit.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

func TestWriteV1Stores(t *testing.T) {
	app := &memAppender{}
	srv := newServer(t, app)
	body := testkit.RW1(
		prompb.TimeSeries{Labels: testkit.Labels("__name__", "up", "job", "a"), Samples: []prompb.Sample{{Value: 1, Timestamp: 10}, {Value: staleNaN, Timestamp: 20}}},
		series("__name__", "down", "job", "b"),
	)
	a := post(t, srv.URL, "application/x-protobuf", "snappy", body)
	if a.code != http.StatusNoContent {
		t.Fatalf("status %d: %s", a.code, a.body)
	}
	if a.written != "" {
		t.Errorf("1.0 answer carries 2.0 header %q", a.written)
	}
	if len(app.series) != 2 {
		t.Fatalf("stored %d series, want 2", len(app.series))
	}
	s := app.series[0]
	if !labelsEqual(s.Labels, lbls("__name__", "up", "job", "a")) || len(s.Samples) != 2 ||
		s.Samples[0] != (actastore.Sample{T: 10, V: 1}) || s.Samples[1].T != 20 ||
		math.Float64bits(s.Samples[1].V) != 0x7ff0000000000002 {
		t.Errorf("stored %v %v", s.Labels, s.Samples)
	}
}

func TestWriteV2StoresAndReportsWritten(t *testing.T) {
	app := &memAppender{}
	srv := newServer(t, app)
	req := v2Req([]string{"__name__", "up", "job", "a"}, []string{"__name__", "up", "job", "b"})
	// A histogram and an exemplar go to the store in the same Commit and
	// are reported written.
	req.Timeseries[0].Histograms = []writev2.Histogram{{Timestamp: 5, Count: &writev2.Histogram_CountInt{CountInt: 1}}}
	req.Timeseries[0].Exemplars = []writev2.Exemplar{{Value: 1, Timestamp: 5}}
	req.Timeseries[1].Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: 0}
	a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(req))
	if a.code != http.StatusNoContent {
		t.Fatalf("status %d: %s", a.code, a.body)
	}
	if a.written != "2" || a.header.Get(headerHistogramsWritten) != "1" || a.header.Get(headerExemplarsWritten) != "1" {
		t.Errorf("written headers %q/%q/%q, want 2/1/1", a.written, a.header.Get(headerHistogramsWritten), a.header.Get(headerExemplarsWritten))
	}
	if len(app.series) != 2 || !labelsEqual(app.series[1].Labels, lbls("__name__", "up", "job", "b")) ||
		app.series[1].Samples[0] != (actastore.Sample{T: 1001, V: 1}) {
		t.Errorf("stored %+v", app.series)
	}
}

// Symbols may follow the series in the byte stream; the decoder must not care.
func TestWriteV2SymbolsAfterSeries(t *testing.T) {
	app := &memAppender{}
	srv := newServer(t, app)
	var b []byte
	ts := protowire.AppendTag(nil, 1, protowire.BytesType)
	ts = protowire.AppendBytes(ts, []byte{1, 2}) // packed refs 1, 2
	smp := protowire.AppendTag(nil, 1, protowire.Fixed64Type)
	smp = protowire.AppendFixed64(smp, math.Float64bits(2.5))
	smp = protowire.AppendTag(smp, 2, protowire.VarintType)
	smp = protowire.AppendVarint(smp, 77)
	ts = protowire.AppendTag(ts, 2, protowire.BytesType)
	ts = protowire.AppendBytes(ts, smp)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	for _, s := range []string{"", "__name__", "late"} {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	a := post(t, srv.URL, ctV2, "snappy", snappy.Encode(nil, b))
	if a.code != http.StatusNoContent || len(app.series) != 1 ||
		!labelsEqual(app.series[0].Labels, lbls("__name__", "late")) || app.series[0].Samples[0] != (actastore.Sample{T: 77, V: 2.5}) {
		t.Fatalf("status %d %s, stored %+v", a.code, a.body, app.series)
	}
}

func TestPartialWriteStoresValidSeries(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		app := &memAppender{}
		srv := newServer(t, app)
		var a answer
		if v2 {
			a = post(t, srv.URL, ctV2, "snappy", testkit.RW2(v2Req(
				[]string{"__name__", "good", "a", "1"}, []string{"job", "x"}, []string{"__name__", "good", "a", "2"})))
		} else {
			a = post(t, srv.URL, ctV1, "snappy", testkit.RW1(
				series("__name__", "good", "a", "1"), series("job", "x"), series("__name__", "good", "a", "2")))
		}
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "series 1") || !strings.Contains(a.body, "missing __name__") ||
			!strings.Contains(a.body, "1 of 3 samples rejected") {
			t.Errorf("v2=%v: status %d body %q", v2, a.code, a.body)
		}
		if v2 && a.written != "2" {
			t.Errorf("v2 partial: written header %q, want 2", a.written)
		}
		if len(app.series) != 2 {
			t.Errorf("v2=%v: stored %d series, want the 2 valid ones", v2, len(app.series))
		}
	}
}

// The store's sentinels map to statuses in one place (StatusOf).
func TestStoreErrors(t *testing.T) {
	f := func(storeErr error, perSeries []error, wantCode int, wantRetryAfter bool, wantMsg string) {
		t.Helper()
		app := &memAppender{err: storeErr, errs: perSeries}
		srv := newServer(t, app)
		a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(v2Req([]string{"__name__", "m"})))
		if a.code != wantCode || (a.header.Get("Retry-After") != "") != wantRetryAfter || !strings.Contains(a.body, wantMsg) {
			t.Errorf("store error %v/%v: got %d retry-after=%q %q; want %d %v %q", storeErr, perSeries,
				a.code, a.header.Get("Retry-After"), a.body, wantCode, wantRetryAfter, wantMsg)
		}
		if a.written == "" {
			t.Errorf("store error %v: no written header on a 2.0 answer", storeErr)
		}
	}
	f(actastore.ErrOverloaded, nil, http.StatusServiceUnavailable, true, "overloaded")
	f(fmt.Errorf("wal: %w", actastore.ErrClosed), nil, http.StatusServiceUnavailable, true, "closed")
	f(errors.New("disk on fire"), nil, http.StatusInternalServerError, false, "disk on fire")
	f(fmt.Errorf("%w: storage.max_series=10", actastore.ErrTooManySeries), nil, http.StatusBadRequest, false, "max_series")
	f(nil, []error{fmt.Errorf("series {__name__=\"m\"}: %w", actastore.ErrOutOfOrder)}, http.StatusBadRequest, false, "out-of-order")
	f(nil, []error{fmt.Errorf("%w: limit storage.max_series=1", actastore.ErrTooManySeries)}, http.StatusBadRequest, false, "storage.max_series=1")
}

func TestBadInputs(t *testing.T) {
	app := &memAppender{}
	srv := newServer(t, app)
	good := testkit.RW1(series("__name__", "m"))
	big := make([]byte, testLimits.MaxDecodedBytes+1)
	tooMany := make([]prompb.TimeSeries, testLimits.MaxSeriesPerRequest+1)
	for i := range tooMany {
		tooMany[i] = series("__name__", "m", "i", fmt.Sprint(i))
	}
	raw := func(b []byte) []byte { return snappy.Encode(nil, b) }
	cases := []struct {
		name     string
		method   string
		ct, enc  string
		body     []byte
		code     int
		contains string
	}{
		{"GET", http.MethodGet, ctV1, "snappy", good, 405, "POST"},
		{"no content type", "", "", "snappy", good, 415, "missing Content-Type"},
		{"text/plain", "", "text/plain", "snappy", good, 415, `"text/plain"`},
		{"unknown proto", "", "application/x-protobuf;proto=foo.Bar", "snappy", good, 415, `"foo.Bar"`},
		{"unparsable content type", "", "application/x-protobuf;;;=", "snappy", good, 415, "cannot parse"},
		{"no encoding", "", ctV1, "", good, 415, "want snappy"},
		{"gzip encoding", "", ctV1, "gzip", good, 415, `"gzip"`},
		{"body over limit", "", ctV1, "snappy", make([]byte, testLimits.MaxBodyBytes+1), 413, "limit 65536"},
		{"decoded length over limit", "", ctV1, "snappy", raw(big), 413, "snappy declares 262145 decoded bytes, limit 262144"},
		{"empty body", "", ctV1, "snappy", nil, 400, "snappy"},
		{"garbage snappy header", "", ctV1, "snappy", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 400, "bad snappy block header"},
		{"corrupt snappy data", "", ctV1, "snappy", append(raw([]byte("hello world, hello world"))[:4], 0xff, 0xff), 400, "bad snappy"},
		{"truncated protobuf", "", ctV1, "snappy", raw(mustSlice(snappyDecode(good), -3)), 400, "malformed protobuf"},
		{"wrong wire type", "", ctV1, "snappy", raw([]byte{0x08, 0x01}), 400, "malformed protobuf: WriteRequest: proto: wrong wireType = 0 for field Timeseries"},
		{"bad sample wire type", "", ctV1, "snappy", raw(protoSeries(t, []byte{0x12, 0x02, 0x08, 0x01})), 400, "malformed protobuf: WriteRequest: proto: wrong wireType = 0 for field Value"},
		{"too many series", "", ctV1, "snappy", testkit.RW1(tooMany...), 413, "max_series_per_request"},
		// Unsorted labels, a name twice and invalid UTF-8 are the store's
		// to refuse: TestRealStoreLabelRules.
		{"empty label name", "", ctV1, "snappy", testkit.RW1(series("", "x", "__name__", "m")), 400, "empty name"},
		{"missing __name__", "", ctV1, "snappy", testkit.RW1(series("job", "a")), 400, "missing __name__"},
		{"no labels", "", ctV1, "snappy", testkit.RW1(series()), 400, "has no labels"},
		{"only empty values", "", ctV1, "snappy", testkit.RW1(series("__name__", "")), 400, "has no labels"},
		{"too many labels", "", ctV1, "snappy", testkit.RW1(series("__name__", "m", "a", "1", "b", "1", "c", "1", "d", "1", "e", "1", "f", "1", "g", "1", "h", "1")), 400, "max_labels_per_series=8"},
		{"label name too long", "", ctV1, "snappy", testkit.RW1(series("__name__", "m", strings.Repeat("n", 33), "v")), 400, "max_label_name_length=32"},
		{"label value too long", "", ctV1, "snappy", testkit.RW1(series("__name__", strings.Repeat("v", 65))), 400, "max_label_value_length=64"},
		{"no samples", "", ctV1, "snappy", testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "m")}), 400, "has no samples"},
		{"v2 symbol ref out of range", "", ctV2, "snappy", testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "m"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 9}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "labels_refs[1] = 9 out of range, request has 3 symbols"},
		{"v2 odd labels_refs", "", ctV2, "snappy", testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "m"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "odd length 3"},
		{"v2 metadata ref out of range", "", ctV2, "snappy", testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "m"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}},
				Metadata: writev2.Metadata{HelpRef: 40}}}}), 400, "series 0: metadata reference out of range: metadata help_ref 40 outside of symbols table (size 3)"},
		{"v2 malformed symbols", "", ctV2, "snappy", raw([]byte{0x22, 0x05, 'a'}), 400, "malformed protobuf"},
		{"v2 no labels", "", ctV2, "snappy", testkit.RW2(v2Req([]string{})), 400, "has no labels"},
		// A 1.0 body under the 2.0 type: Request reserves 1.0's field numbers,
		// so it decodes as an empty request (spec: deterministic interop).
		{"v1 body as v2", "", ctV2, "snappy", good, 204, ""},
	}
	for _, c := range cases {
		method := c.method
		if method == "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, srv.URL, bytes.NewReader(c.body))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		if c.enc != "" {
			req.Header.Set("Content-Encoding", c.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(buf.String(), c.contains) {
			t.Errorf("%s: got %d %q, want %d containing %q", c.name, resp.StatusCode, strings.TrimSpace(buf.String()), c.code, c.contains)
		}
	}
	if len(app.series) != 0 {
		t.Errorf("bad inputs stored %d series: %v", len(app.series), app.series)
	}
	// A 2.0 request refused for its encoding still says nothing was written.
	if a := post(t, srv.URL, ctV2, "gzip", good); a.code != 415 || a.written != "0" {
		t.Errorf("2.0 with gzip: %d, written %q; want 415 with written 0", a.code, a.written)
	}
}

func snappyDecode(b []byte) []byte {
	d, err := snappy.Decode(nil, b)
	if err != nil {
		panic(err)
	}
	return d
}

func mustSlice(b []byte, cut int) []byte { return b[:len(b)+cut] }

// protoSeries wraps raw TimeSeries field bytes, after a valid __name__ label.
func protoSeries(t *testing.T, extra []byte) []byte {
	lb := protowire.AppendTag(nil, 1, protowire.BytesType)
	lb = protowire.AppendString(lb, "__name__")
	lb = protowire.AppendTag(lb, 2, protowire.BytesType)
	lb = protowire.AppendString(lb, "m")
	ts := protowire.AppendTag(nil, 1, protowire.BytesType)
	ts = protowire.AppendBytes(ts, lb)
	ts = append(ts, extra...)
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, ts)
}

func TestMetricsCountOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := New(&memAppender{}, testLimits, slog.New(slog.DiscardHandler), reg)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := testkit.RW1(
		series("__name__", "ok"),
		series("job", "x"),
		series("", "1", "__name__", "m"),
		prompb.TimeSeries{Labels: testkit.Labels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}, {Timestamp: 2}}},
	)
	if a := post(t, srv.URL, ctV1, "snappy", body); a.code != http.StatusBadRequest {
		t.Fatalf("status %d %s", a.code, a.body)
	}
	f := func(name string, c prometheus.Collector, want float64) {
		t.Helper()
		if got := testutil.ToFloat64(c); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	f("samples written", h.m.samplesWritten, 1)
	f("samples rejected invalid_series", h.m.samplesRejected.WithLabelValues("invalid_series"), 2)
	f("series rejected invalid_series", h.m.seriesRejected.WithLabelValues("invalid_series"), 2)
	f("series appended", h.m.seriesAppended, 2) // "ok" and the histogram series "h"
	f("1.0 requests", h.m.requests.WithLabelValues("1.0"), 1)
}

// A 2.0 series' metadata is stored under its metric family: the series of
// a classic histogram, a gauge histogram or a summary drop their suffixes,
// as 1.0 names the family and Prometheus's /api/v1/metadata lists it.
func TestWriteV2MetadataByFamily(t *testing.T) {
	app := &memAppender{}
	srv := newServer(t, app)
	cases := []struct {
		name string
		typ  writev2.Metadata_MetricType
		want string
	}{
		{"lat_seconds_bucket", writev2.Metadata_METRIC_TYPE_HISTOGRAM, "lat_seconds"},
		{"lat_seconds_sum", writev2.Metadata_METRIC_TYPE_HISTOGRAM, "lat_seconds"},
		{"lat_seconds_count", writev2.Metadata_METRIC_TYPE_HISTOGRAM, "lat_seconds"},
		{"native_seconds", writev2.Metadata_METRIC_TYPE_HISTOGRAM, "native_seconds"},
		{"queue_bucket", writev2.Metadata_METRIC_TYPE_GAUGEHISTOGRAM, "queue"},
		{"queue_gsum", writev2.Metadata_METRIC_TYPE_GAUGEHISTOGRAM, "queue"},
		{"rpc_seconds", writev2.Metadata_METRIC_TYPE_SUMMARY, "rpc_seconds"},
		{"rpc_seconds_count", writev2.Metadata_METRIC_TYPE_SUMMARY, "rpc_seconds"},
		{"requests_total", writev2.Metadata_METRIC_TYPE_COUNTER, "requests_total"},
		{"pool_count", writev2.Metadata_METRIC_TYPE_GAUGE, "pool_count"},
		{"_sum", writev2.Metadata_METRIC_TYPE_SUMMARY, "_sum"},
	}
	var sets [][]string
	for _, c := range cases {
		sets = append(sets, []string{"__name__", c.name})
	}
	req := v2Req(sets...)
	for i, c := range cases {
		req.Timeseries[i].Metadata = writev2.Metadata{Type: c.typ}
	}
	if a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(req)); a.code != http.StatusNoContent {
		t.Fatalf("status %d: %s", a.code, a.body)
	}
	if len(app.meta) != len(cases) {
		t.Fatalf("stored %d metadata, want %d", len(app.meta), len(cases))
	}
	for i, c := range cases {
		if app.meta[i].Name != c.want {
			t.Errorf("metadata of series %s stored for %q, want %q", c.name, app.meta[i].Name, c.want)
		}
	}
}
