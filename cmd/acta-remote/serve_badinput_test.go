package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// badCase is one kind of bad input sent to the real router. Bad series are
// all named bad*, so the test can check that none of them was stored.
type badCase struct {
	endpoint string // column in the table: "remote write", "remote read", "OTLP/HTTP", "query API", "any"
	what     string // the bad input, as the table says it
	method   string // default POST
	path     string
	header   map[string]string
	body     []byte
	code     int
	says     string // the answer contains this (the table quotes it)
	auth     bool   // send to the router with auth on
}

func rwHeaders(ct string) map[string]string {
	return map[string]string{"Content-Type": ct, "Content-Encoding": "snappy"}
}

func tsOf(kv ...string) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: testkit.Labels(kv...), Samples: []prompb.Sample{{Timestamp: 1000, Value: 1}}}
}

// rr is testkit.ReadRequest in the order the table reads best.
func rr(qs []*prompb.Query, types ...prompb.ReadRequest_ResponseType) []byte {
	return testkit.ReadRequest(types, qs...)
}

func rq(mint, maxt int64, ms ...*prompb.LabelMatcher) *prompb.Query {
	return &prompb.Query{StartTimestampMs: mint, EndTimestampMs: maxt, Matchers: ms}
}

func lm(t prompb.LabelMatcher_Type, name, value string) *prompb.LabelMatcher {
	return &prompb.LabelMatcher{Type: t, Name: name, Value: value}
}

func otlpGauge(name string, delta bool) []byte { return otlpPoint(name, delta, 1_000_000_000) }

// otlpPoint is one gauge (or delta sum) data point at ts ns.
func otlpPoint(name string, delta bool, ts uint64) []byte {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	var dp pmetric.NumberDataPoint
	if delta {
		s := m.SetEmptySum()
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		dp = s.DataPoints().AppendEmpty()
	} else {
		dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
	}
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.SetDoubleValue(1)
	b, _ := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	return b
}

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func zstdOf(b []byte) []byte {
	e, _ := zstd.NewWriter(nil)
	return e.EncodeAll(b, nil)
}

// badInputConfig keeps every limit small so each is cheap to hit.
func badInputConfig(dir string) *config.Config {
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Storage.MaxSeries = 40
	cfg.RemoteWrite.MaxBodyBytes = 64 << 10
	cfg.RemoteWrite.MaxDecodedBytes = 256 << 10
	cfg.RemoteWrite.MaxSeriesPerRequest = 30
	cfg.RemoteWrite.MaxLabelsPerSeries = 8
	cfg.RemoteWrite.MaxLabelNameLength = 32
	cfg.RemoteWrite.MaxLabelValueLength = 64
	cfg.RemoteRead.MaxBodyBytes = 4 << 10
	cfg.RemoteRead.MaxDecodedBytes = 16 << 10
	cfg.RemoteRead.MaxSeriesPerQuery = 5
	cfg.RemoteRead.MaxSamplesPerQuery = 100
	cfg.OTLP.MaxBodyBytes = 64 << 10
	cfg.OTLP.MaxDecompressedBytes = 128 << 10
	cfg.OTLP.GRPC.Enabled = false
	return cfg
}

func badCases() []badCase {
	w := func(what string, h map[string]string, body []byte, code int, says string) badCase {
		return badCase{endpoint: "remote write", what: what, path: "/api/v1/write", header: h, body: body, code: code, says: says}
	}
	r := func(what string, body []byte, code int, says string) badCase {
		return badCase{endpoint: "remote read", what: what, path: "/api/v1/read", header: rwHeaders("application/x-protobuf"), body: body, code: code, says: says}
	}
	o := func(what string, h map[string]string, body []byte, code int, says string) badCase {
		return badCase{endpoint: "OTLP/HTTP", what: what, path: "/v1/metrics", header: h, body: body, code: code, says: says}
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	q := func(what, path, body string, code int, says string) badCase {
		return badCase{endpoint: "query API", what: what, path: path, header: form, body: []byte(body), code: code, says: says}
	}
	pb := map[string]string{"Content-Type": "application/x-protobuf"}
	withEnc := func(enc string) map[string]string {
		return map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": enc}
	}
	h1 := rwHeaders(testkit.ContentTypeRW1)
	manyLabels := []string{"__name__", "bad_labels"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		manyLabels = append(manyLabels, n, "1")
	}
	tooMany := make([]prompb.TimeSeries, 31)
	for i := range tooMany {
		tooMany[i] = tsOf("__name__", "bad_many", "i", fmt.Sprint(i))
	}
	card := make([]prompb.TimeSeries, 30)
	for i := range card {
		card[i] = tsOf("__name__", "card", "i", fmt.Sprint(i))
	}
	zeros := make([]byte, 300<<10)
	return []badCase{
		w("GET instead of POST", nil, nil, 405, "wants POST").withMethod(http.MethodGet),
		w("no Content-Type", map[string]string{"Content-Encoding": "snappy"}, testkit.RW1(tsOf("__name__", "bad_ct")), 415, "missing Content-Type"),
		w("Content-Type text/plain", rwHeaders("text/plain"), testkit.RW1(tsOf("__name__", "bad_ct")), 415, `"text/plain"`),
		w("unknown proto= message", rwHeaders("application/x-protobuf;proto=foo.Bar"), testkit.RW1(tsOf("__name__", "bad_ct")), 415, `"foo.Bar"`),
		w("no Content-Encoding", map[string]string{"Content-Type": testkit.ContentTypeRW1}, testkit.RW1(tsOf("__name__", "bad_enc")), 415, "want snappy"),
		w("Content-Encoding gzip", withEncCT(testkit.ContentTypeRW1, "gzip"), testkit.RW1(tsOf("__name__", "bad_enc")), 415, `"gzip"`),
		w("body over max_body_bytes", h1, make([]byte, 64<<10+1), 413, "limit 65536"),
		w("snappy header declares more than max_decoded_bytes", h1, snappy.Encode(nil, make([]byte, 256<<10+1)), 413, "snappy declares 262145 decoded bytes, limit 262144"),
		w("empty body", h1, nil, 400, "snappy"),
		w("not snappy at all", h1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 400, "bad snappy block header"),
		w("corrupt snappy stream", h1, append(snappy.Encode(nil, []byte("hello world, hello world"))[:4], 0xff, 0xff), 400, "bad snappy"),
		w("truncated protobuf", h1, snappy.Encode(nil, []byte{0x0a, 0x20, 0x0a}), 400, "malformed protobuf"),
		w("wrong protobuf wire type", h1, snappy.Encode(nil, []byte{0x08, 0x01}), 400, "wrong wireType = 0"),
		w("more series than max_series_per_request", h1, testkit.RW1(tooMany...), 413, "max_series_per_request"),
		// Not bad any more: the store sorts a label set sent unsorted (issue 23).
		w("labels not sorted: stored sorted", h1, testkit.RW1(tsOf("job", "a", "__name__", "ok_sort")), 204, ""),
		w("duplicate label name", h1, testkit.RW1(tsOf("__name__", "bad_dup", "a", "1", "a", "2")), 400, `duplicate label name "a"`),
		w("empty label name", h1, testkit.RW1(tsOf("", "x", "__name__", "bad_empty")), 400, "empty name"),
		w("label name not UTF-8", h1, testkit.RW1(tsOf("__name__", "bad_utf8", "\xff", "v")), 400, "is not UTF-8"),
		w("label value not UTF-8", h1, testkit.RW1(tsOf("__name__", "bad_utf8\xfe")), 400, "is not UTF-8"),
		w("no __name__", h1, testkit.RW1(tsOf("job", "bad_noname")), 400, "missing __name__"),
		w("no labels", h1, testkit.RW1(tsOf()), 400, "has no labels"),
		w("more labels than max_labels_per_series", h1, testkit.RW1(tsOf(manyLabels...)), 400, "max_labels_per_series=8"),
		w("label name over max_label_name_length", h1, testkit.RW1(tsOf("__name__", "bad_len", strings.Repeat("n", 33), "v")), 400, "max_label_name_length=32"),
		w("label value over max_label_value_length", h1, testkit.RW1(tsOf("__name__", "bad_len", "v", strings.Repeat("v", 65))), 400, "max_label_value_length=64"),
		w("series without samples", h1, testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "bad_nosamples")}), 400, "has no samples"),
		w("2.0 symbol reference out of range", rwHeaders(testkit.ContentTypeRW2), testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "bad_v2"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 9}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "labels_refs[1] = 9 out of range"),
		w("2.0 odd labels_refs", rwHeaders(testkit.ContentTypeRW2), testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "bad_v2"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 1}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}), 400, "odd length 3"),
		w("2.0 metadata reference out of range", rwHeaders(testkit.ContentTypeRW2), testkit.RW2(&writev2.Request{Symbols: []string{"", "__name__", "bad_v2"},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}, Metadata: writev2.Metadata{HelpRef: 40}}}}), 400, "out of range"),
		w("conflicting duplicate sample (same timestamp, other value)", h1, testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "ok_base"),
			Samples: []prompb.Sample{{Timestamp: 1000, Value: 2}}}), 400, "duplicate"),
		w("sample 11 minutes ahead of the server's clock", h1, testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "bad_future"),
			Samples: []prompb.Sample{{Timestamp: time.Now().Add(11 * time.Minute).UnixMilli(), Value: 1}}}), 400, "ahead of the server's clock"),
		w("nanosecond timestamp sent as milliseconds", h1, testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "bad_ns"),
			Samples: []prompb.Sample{{Timestamp: time.Now().UnixNano(), Value: 1}}}), 400, "out of bounds"),
		w("negative timestamp", h1, testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "bad_negative"),
			Samples: []prompb.Sample{{Timestamp: -1000, Value: 1}}}), 400, "below the oldest timestamp accepted, 0"),
		w("partial write: one valid, one invalid series", h1, testkit.RW1(tsOf("__name__", "ok_partial"), tsOf("job", "bad_partial")), 400, "stored 1 samples of 1 valid series"),

		r("GET instead of POST", nil, 405, "wants POST").withMethod(http.MethodGet),
		r("body over max_body_bytes", make([]byte, 4<<10+1), 413, "limit 4096"),
		r("snappy header declares more than max_decoded_bytes", snappy.Encode(nil, make([]byte, 16<<10+1)), 413, "limit 16384"),
		r("not snappy", []byte{0xff, 0xff, 0xff, 0xff, 0xff}, 400, "bad snappy block header"),
		r("malformed ReadRequest protobuf", snappy.Encode(nil, []byte{0x0a, 0x30, 0x08}), 400, "malformed ReadRequest"),
		r("query without matchers", rr([]*prompb.Query{rq(0, 1)}), 400, "has no matchers"),
		r("start after end", rr([]*prompb.Query{rq(9, 1, lm(prompb.LabelMatcher_EQ, "__name__", "ok_base"))}), 400, "start 9 ms after end 1 ms"),
		r("invalid regular expression", rr([]*prompb.Query{rq(0, 1, lm(prompb.LabelMatcher_RE, "__name__", "a("))}), 400, "missing closing )"),
		r("unknown matcher type", rr([]*prompb.Query{rq(0, 1, lm(7, "__name__", "x"))}), 400, "unknown type 7"),
		r("only unsupported response types", rr([]*prompb.Query{rq(0, 1, lm(prompb.LabelMatcher_EQ, "__name__", "x"))}, 9), 400, "none of the accepted response types"),
		r("more series than max_series_per_query", rr([]*prompb.Query{rq(math.MinInt64, math.MaxInt64, lm(prompb.LabelMatcher_EQ, "__name__", "rd"))}), 422, "max_series_per_query"),
		r("more samples than max_samples_per_query", rr([]*prompb.Query{rq(math.MinInt64, math.MaxInt64, lm(prompb.LabelMatcher_RE, "i", "[0-4]"), lm(prompb.LabelMatcher_EQ, "__name__", "rd"))}), 422, "max_samples_per_query"),

		o("GET instead of POST", nil, nil, 405, "supported: [POST]").withMethod(http.MethodGet),
		o("Content-Type text/plain", map[string]string{"Content-Type": "text/plain"}, otlpGauge("bad_otlp", false), 415, "unsupported media type"),
		o("Content-Encoding br", withEnc("br"), otlpGauge("bad_otlp", false), 415, "unsupported content encoding"),
		o("body over max_body_bytes", pb, make([]byte, 64<<10+1), 413, "max_body_bytes 65536"),
		o("gzip bomb over max_decompressed_bytes", withEnc("gzip"), gzipOf(zeros), 413, "max_decompressed_bytes 131072"),
		o("zstd bomb over max_decompressed_bytes", withEnc("zstd"), zstdOf(zeros), 413, "max_decompressed_bytes"),
		o("corrupt gzip", withEnc("gzip"), []byte("not gzip at all"), 400, "gzip"),
		o("malformed protobuf", pb, []byte{0x0a, 0x30, 0x0a}, 400, "cannot decode"),
		o("malformed JSON", map[string]string{"Content-Type": "application/json"}, []byte(`{"resourceMetrics": [`), 400, "cannot decode"),
		o("delta temporality sum (rejected in partial_success)", pb, otlpGauge("bad_delta", true), 200, `delta temporality refused: otlp.delta_temporality is "reject"`),
		o("data point at time_unix_nano 0 (rejected in partial_success)", pb, otlpPoint("bad_ts0", false, 0), 200, "time_unix_nano is 0 (not set)"),

		q("invalid PromQL", "/api/v1/query", "query=sum(rd", 400, `"errorType":"bad_data","error":"invalid parameter \"query\": 1:7: parse error: unclosed left parenthesis"`),
		q("end before start", "/api/v1/query_range", "query=rd&start=60&end=0&step=15", 400, `"errorType":"bad_data","error":"invalid parameter \"end\": end timestamp must not be before start time"`),
		q("more than 11,000 points", "/api/v1/query_range", "query=rd&start=0&end=12000&step=1", 400, `"errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries.`),
		q("unknown matcher type", "/api/v1/series", "match[]={i~%221%22}", 400, `"errorType":"bad_data","error":"invalid parameter \"match[]\": 1:3: parse error: unexpected character inside braces: '~'"`),
		q("more series than remote_read.max_series_per_query", "/api/v1/query", "query=rd&time=30", 422, `"errorType":"execution","error":"expanding series: selecting series: actastore: query limit exceeded: 10 series match, limit 5`),
		q("delete_series with query.admin_api_enabled off", "/api/v1/admin/tsdb/delete_series", "match[]=rd", 500, `{"status":"error","errorType":"unavailable","error":"admin APIs disabled"}`),
		{endpoint: "any", what: "PromQL query without credentials (auth on)", path: "/api/v1/query", header: form, body: []byte("query=rd"), code: 401, says: "missing or invalid credentials", auth: true},
		{endpoint: "any", what: "no credentials (auth on)", path: "/api/v1/write", header: h1, body: testkit.RW1(tsOf("__name__", "bad_auth")), code: 401, says: "missing or invalid credentials", auth: true},
		{endpoint: "any", what: "wrong bearer token (auth on)", path: "/api/v1/read", header: map[string]string{"Authorization": "Bearer nope"}, body: rr(nil), code: 401, says: "missing or invalid credentials", auth: true},
		{endpoint: "any", what: "wrong basic password on OTLP (auth on)", path: "/v1/metrics", header: map[string]string{"Content-Type": "application/x-protobuf", "Authorization": "Basic dTpw"}, body: otlpGauge("bad_auth", false), code: 401, says: "missing or invalid credentials", auth: true},
		{endpoint: "any", what: "/metrics without credentials (auth on)", method: http.MethodGet, path: "/metrics", code: 401, says: "missing or invalid credentials", auth: true},

		// Last: it fills the cardinality budget.
		w("new series beyond storage.max_series", h1, testkit.RW1(card...), 400, "storage.max_series"),
	}
}

func (c badCase) withMethod(m string) badCase { c.method = m; return c }

func withEncCT(ct, enc string) map[string]string {
	return map[string]string{"Content-Type": ct, "Content-Encoding": enc}
}

// TestBadInputsTable sends every kind of bad input in badCases to the real
// router over a real store and checks the status and the message. Nothing
// named bad* may be stored. ACTA_BAD_INPUTS_MD=file writes the table as
// Markdown (docs/api.md, "Bad inputs").
func TestBadInputsTable(t *testing.T) {
	dir := t.TempDir()
	cfg := badInputConfig(dir)
	open := startRouter(t, cfg)
	store := open.store
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret-token"), 0o600)
	authn, err := auth.New(auth.Config{BearerTokenFile: tok}, open.log)
	if err != nil {
		t.Fatal(err)
	}
	guarded := open.another(t, authn)

	// Data the read cases select: 10 series of 30 samples, and the base
	// series the duplicate case conflicts with.
	base := []prompb.TimeSeries{tsOf("__name__", "ok_base")}
	for i := range 10 {
		s := prompb.TimeSeries{Labels: testkit.Labels("__name__", "rd", "i", fmt.Sprint(i))}
		for k := range 30 {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: int64(k) * 1000, Value: float64(k)})
		}
		base = append(base, s)
	}
	if code, _ := bpPost(http.DefaultClient, open.URL, testkit.RW1(base...)); code != http.StatusNoContent {
		t.Fatalf("seeding data: %d", code)
	}

	cases := badCases()
	var md strings.Builder
	md.WriteString("| # | Endpoint | Bad input | Status | The answer says |\n|---|---|---|---|---|\n")
	for i, c := range cases {
		url := open.URL
		if c.auth {
			url = guarded.URL
		}
		method := c.method
		if method == "" {
			method = http.MethodPost
		}
		a := testkit.Send(t, method, url+c.path, c.header, bytes.NewReader(c.body))
		if a.Code != c.code || !bytes.Contains(a.Body, []byte(c.says)) {
			t.Errorf("%s: %s: got %d %.300q, want %d containing %q", c.endpoint, c.what, a.Code, a.Body, c.code, c.says)
		}
		if c.code == 401 && a.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %s: 401 without WWW-Authenticate", c.endpoint, c.what)
		}
		says := "`" + strings.ReplaceAll(c.says, "|", `\|`) + "`"
		if c.says == "" {
			says = "(no body: accepted)"
		}
		fmt.Fprintf(&md, "| %d | %s | %s | %d | %s |\n", i+1, c.endpoint, c.what, c.code, says)
	}
	if len(cases) < 40 {
		t.Errorf("only %d kinds of bad input", len(cases))
	}

	count := func(m ...*labels.Matcher) (series, samples int) {
		ss := store.Select(context.Background(), math.MinInt64, math.MaxInt64, m...)
		defer ss.Close()
		for ss.Next() {
			series++
			it := ss.At().Iterator()
			for it.Next() {
				samples++
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return
	}
	if n, _ := count(labels.MustNewMatcher(labels.MatchRegexp, "__name__", "bad.*")); n != 0 {
		t.Errorf("%d series of bad inputs were stored", n)
	}
	// What partial answers promised is there: the valid half of the partial
	// write, the base sample unchanged, and the series under the cardinality
	// limit (40 minus the 13 that existed: ok_base, 10 rd, ok_sort,
	// ok_partial).
	if _, n := count(labels.MustNewMatcher(labels.MatchEqual, "__name__", "ok_partial")); n != 1 {
		t.Errorf("partial write: %d samples of its valid series stored, want 1", n)
	}
	ss := store.Select(context.Background(), 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "ok_base"))
	for ss.Next() {
		it := ss.At().Iterator()
		for it.Next() {
			if ts, v := it.At(); v != 1 {
				t.Errorf("ok_base changed by the conflicting duplicate: %d %v", ts, v)
			}
		}
	}
	ss.Close()
	// One series per Select: the store enforces remote_read.max_series_per_query (5).
	card := 0
	for i := range 30 {
		n, _ := count(labels.MustNewMatcher(labels.MatchEqual, "__name__", "card"), labels.MustNewMatcher(labels.MatchEqual, "i", fmt.Sprint(i)))
		card += n
	}
	if card != 40-13 {
		t.Errorf("cardinality: %d card series stored, want %d", card, 40-13)
	}
	if p := os.Getenv("ACTA_BAD_INPUTS_MD"); p != "" {
		if err := os.WriteFile(p, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
