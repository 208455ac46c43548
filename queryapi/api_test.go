package queryapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

func testOptions() Options {
	return Options{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		MaxConcurrent: 4, MaxQueueWait: time.Second,
		BuildInfo:        promVersion("1.2.3"),
		Flags:            map[string]string{"query.lookback-delta": "5m"},
		StorageRetention: "15d",
		Logger:           slog.New(slog.DiscardHandler),
	}
}

// serve mounts the API's routes on a gorilla/mux router, as the server
// does, behind a real HTTP server, and returns Prometheus's Go client for it.
func serve(t testing.TB, st Store, o Options) (*httptest.Server, promv1.API) {
	t.Helper()
	r := mux.NewRouter()
	for _, rt := range New(st, o).Routes() {
		r.Handle(rt.Path, rt.Handler)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return srv, promv1.NewAPI(c)
}

// deletingStore is the store with a DeleteSeries that records its calls:
// the store's own deletion is not written yet (see SeriesDeleter), and
// this checks what the endpoint hands it.
type deletingStore struct {
	Store
	mu    sync.Mutex
	calls []string
}

func (d *deletingStore) DeleteSeries(_ context.Context, mint, maxt int64, ms ...*labels.Matcher) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, fmt.Sprintf("%d %d %v", mint, maxt, ms))
	return 1, nil
}

var ctx = context.Background()

func at(ms int64) time.Time { return time.UnixMilli(ms) }

// TestClientDrivesEveryEndpoint drives every mounted endpoint with
// Prometheus's Go API client (client_golang api/prometheus/v1), so the JSON
// shapes are proven against a real client, and checks the values against
// the fixture.
func TestClientDrivesEveryEndpoint(t *testing.T) {
	f := newFixture()
	st, _ := openStores(t, f, actastore.Options{})
	_, c := serve(t, st, testOptions())

	t.Run("query vector", func(t *testing.T) {
		ts := fixT0 + 1800*1000
		v, warn, _, err := c.Query(ctx, `qa_requests_total{instance="a:9100"}`, at(ts))
		if err != nil || len(warn) > 0 {
			t.Fatal(err, warn)
		}
		vec := v.(model.Vector)
		if len(vec) != 3 {
			t.Fatalf("got %d samples, want 3: %v", len(vec), vec)
		}
		for _, smp := range vec {
			want := latest(f, smp.Metric, ts)
			if math.Float64bits(float64(smp.Value)) != math.Float64bits(want) || int64(smp.Timestamp) != ts {
				t.Errorf("%v = %v @%d, want %v @%d", smp.Metric, smp.Value, smp.Timestamp, want, ts)
			}
		}
	})
	t.Run("query histogram", func(t *testing.T) {
		ts := fixT0 + 600*1000
		v, _, _, err := c.Query(ctx, `qa_native_queue`, at(ts))
		if err != nil {
			t.Fatal(err)
		}
		vec := v.(model.Vector)
		if len(vec) != 1 || vec[0].Histogram == nil {
			t.Fatalf("got %v, want one histogram sample", vec)
		}
		want := latestHist(f, "qa_native_queue", ts)
		h := vec[0].Histogram
		if float64(h.Count) != want.Count || float64(h.Sum) != want.Sum || len(h.Buckets) != 4 {
			t.Errorf("histogram %v, want count %v sum %v and 4 buckets (zero + 3)", h, want.Count, want.Sum)
		}
	})
	t.Run("query_range", func(t *testing.T) {
		r := promv1.Range{Start: at(fixT0), End: at(fixT0 + 600_000), Step: time.Minute}
		v, _, _, err := c.QueryRange(ctx, `qa_slow_gauge`, r)
		if err != nil {
			t.Fatal(err)
		}
		m := v.(model.Matrix)
		if len(m) != 1 || len(m[0].Values) != 11 {
			t.Fatalf("got %v, want one series of 11 points", m)
		}
		for _, p := range m[0].Values {
			if want := latest(f, m[0].Metric, int64(p.Timestamp)); float64(p.Value) != want {
				t.Errorf("@%d: %v, want %v", p.Timestamp, p.Value, want)
			}
		}
		// A histogram range.
		v, _, _, err = c.QueryRange(ctx, `rate(qa_native_seconds{job="api"}[1m])`, r)
		if err != nil {
			t.Fatal(err)
		}
		if m := v.(model.Matrix); len(m) != 2 || len(m[0].Histograms) != 10 || len(m[1].Histograms) != 10 {
			t.Errorf("got %v, want 2 series of 10 histograms (the first step has no earlier sample to rate)", m)
		}
	})
	t.Run("query stats and limit", func(t *testing.T) {
		v, warn, _, err := c.Query(ctx, `qa_requests_total`, at(fixT0+1800_000), promv1.WithLimit(2))
		if err != nil {
			t.Fatal(err)
		}
		if len(v.(model.Vector)) != 2 || len(warn) != 1 || !strings.Contains(warn[0], "truncated") {
			t.Errorf("limit 2: %d samples, warnings %q", len(v.(model.Vector)), warn)
		}
	})
	t.Run("series", func(t *testing.T) {
		all, _, _, err := c.Series(ctx, []string{`qa_pod_memory_bytes`}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := podsOf(all); got != "pod-0 pod-1 pod-2 pod-3 pod-4 pod-5" {
			t.Errorf("series without range: %s", got)
		}
		// pod-p lives from scrape 40p to 40p+60: scrapes 100..110 see
		// pods 1 and 2 only (pod-1's stale marker at 100 is a sample too).
		some, _, _, err := c.Series(ctx, []string{`qa_pod_memory_bytes`}, at(fixT0+100*fixStep), at(fixT0+110*fixStep))
		if err != nil {
			t.Fatal(err)
		}
		if got := podsOf(some); got != "pod-1 pod-2" {
			t.Errorf("series in scrapes 100..110: %s, want pod-1 pod-2", got)
		}
		two, _, _, err := c.Series(ctx, []string{`up{instance="a:9100"}`, `qa_slow_gauge`}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(two) != 2 || two[0]["__name__"] != "qa_slow_gauge" || two[1]["__name__"] != "up" {
			t.Errorf("two match[]: %v", two)
		}
	})
	t.Run("labels", func(t *testing.T) {
		names, _, _, err := c.LabelNames(ctx, nil, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint([]model.LabelName(names)); got != "[__name__ code instance job le pod]" {
			t.Errorf("label names %s", got)
		}
		names, _, _, err = c.LabelNames(ctx, []string{`{job="kube"}`}, time.Time{}, time.Time{})
		if err != nil || fmt.Sprint([]model.LabelName(names)) != "[__name__ job pod]" {
			t.Errorf("label names of job=kube: %v %v", names, err)
		}
		vals, _, _, err := c.LabelValues(ctx, "pod", nil, at(fixT0+100*fixStep), at(fixT0+110*fixStep))
		if err != nil || fmt.Sprint([]model.LabelValue(vals)) != "[pod-1 pod-2]" {
			t.Errorf("pod values in scrapes 100..110: %v %v", vals, err)
		}
		vals, _, _, err = c.LabelValues(ctx, "instance", []string{`qa_native_seconds`}, time.Time{}, time.Time{})
		if err != nil || fmt.Sprint([]model.LabelValue(vals)) != "[a:9100 b:9100 gone]" {
			t.Errorf("instance values of qa_native_seconds: %v %v", vals, err)
		}
		vals, warn, _, err := c.LabelValues(ctx, "__name__", nil, time.Time{}, time.Time{}, promv1.WithLimit(3))
		if err != nil || len(vals) != 3 || len(warn) != 1 {
			t.Errorf("3 metric names: %v %v %v", vals, warn, err)
		}
	})
	t.Run("metadata", func(t *testing.T) {
		md, err := c.Metadata(ctx, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(md) != len(f.meta) {
			t.Errorf("metadata of %d families, want %d: %v", len(md), len(f.meta), md)
		}
		for _, m := range f.meta {
			got := md[m.Name]
			if len(got) != 1 || string(got[0].Type) != string(m.Type) || got[0].Help != m.Help || got[0].Unit != m.Unit {
				t.Errorf("metadata of %s: %v, want %+v", m.Name, got, m.Metadata)
			}
		}
		one, err := c.Metadata(ctx, "qa_latency_seconds", "")
		if err != nil || len(one) != 1 || one["qa_latency_seconds"][0].Unit != "seconds" {
			t.Errorf("metadata of qa_latency_seconds: %v %v", one, err)
		}
		none, err := c.Metadata(ctx, "no_such_metric", "")
		if err != nil || len(none) != 0 {
			t.Errorf("metadata of an unknown metric: %v %v", none, err)
		}
		two, err := c.Metadata(ctx, "", "2")
		if err != nil || len(two) != 2 {
			t.Errorf("metadata limit 2: %v %v", two, err)
		}
	})
	t.Run("exemplars", func(t *testing.T) {
		res, err := c.QueryExemplars(ctx, `qa_requests_total{code=~"200|500"}`, at(fixT0), at(fixT0+fixDuration))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 {
			t.Fatalf("exemplars of %d series, want 2: %v", len(res), res)
		}
		for i, want := range f.exemplars {
			if res[i].SeriesLabels["code"] != model.LabelValue(want.Labels.Get("code")) || len(res[i].Exemplars) != len(want.Exemplars) {
				t.Errorf("series %d: %v, want %s with %d exemplars", i, res[i], want.Labels, len(want.Exemplars))
				continue
			}
			for j, e := range res[i].Exemplars {
				w := want.Exemplars[j]
				if string(e.Labels["trace_id"]) != w.Labels.Get("trace_id") || float64(e.Value) != w.Value || int64(e.Timestamp) != w.T {
					t.Errorf("exemplar %d of %s: %v, want %v", j, want.Labels, e, w)
				}
			}
		}
		// A range holding none: an empty list.
		res, err = c.QueryExemplars(ctx, `qa_requests_total`, at(fixT0-10_000), at(fixT0-1))
		if err != nil || res == nil || len(res) != 0 {
			t.Errorf("no exemplars: %v %v", res, err)
		}
	})
	t.Run("status", func(t *testing.T) {
		bi, err := c.Buildinfo(ctx)
		if err != nil || bi.Version != "1.2.3" || bi.GoVersion == "" {
			t.Errorf("buildinfo %+v %v", bi, err)
		}
		ri, err := c.Runtimeinfo(ctx)
		if err != nil || ri.StorageRetention != "15d" || ri.GOMAXPROCS < 1 || ri.StartTime.IsZero() || !ri.ReloadConfigSuccess {
			t.Errorf("runtimeinfo %+v %v", ri, err)
		}
		fl, err := c.Flags(ctx)
		if err != nil || fl["query.lookback-delta"] != "5m" {
			t.Errorf("flags %v %v", fl, err)
		}
		// The client hands back data's JSON text, quotes and all.
		pretty, err := c.FormatQuery(ctx, `sum(rate(x[5m]))by(job)`)
		if err != nil || pretty != `"sum by (job) (rate(x[5m]))"` {
			t.Errorf("format_query: %q %v", pretty, err)
		}
	})
	t.Run("stats and lookback_delta", func(t *testing.T) {
		srv, _ := serve(t, st, testOptions())
		code, body, _ := send(t, srv, "GET", "/api/v1/query", "query=qa_slow_gauge&time=1767225620&stats=all")
		if code != 200 || !strings.Contains(body, `"stats":{"timings":{`) || !strings.Contains(body, `"totalQueryableSamples":1`) {
			t.Errorf("stats=all: %d %s", code, body)
		}
		// qa_slow_gauge's samples are 60 s apart: with a 10 s lookback an
		// instant 20 s after one finds nothing, with the default 5m it does.
		code, body, _ = send(t, srv, "GET", "/api/v1/query", "query=qa_slow_gauge&time=1767225680&lookback_delta=10s")
		if code != 200 || body != `{"status":"success","data":{"resultType":"vector","result":[]}}` {
			t.Errorf("lookback_delta 10s: %d %s", code, body)
		}
		code, body, _ = send(t, srv, "GET", "/api/v1/query", "query=qa_slow_gauge&time=1767225680")
		if code != 200 || !strings.Contains(body, `"value":[1767225680,"1.5"]`) {
			t.Errorf("default lookback: %d %s", code, body)
		}
	})
	t.Run("parse_query", func(t *testing.T) {
		srv, _ := serve(t, st, testOptions())
		checkAnswer(t, srv, "GET", "/api/v1/parse_query", "query=up%7Bjob%3D%22api%22%7D",
			200, `{"status":"success","data":{"anchored":false,"matchers":[{"name":"job","type":"=","value":"api"},{"name":"__name__","type":"=","value":"up"}],"name":"up","offset":0,"offsetExpr":null,"smoothed":false,"startOrEnd":null,"timestamp":null,"type":"vectorSelector"}}`)
	})
	t.Run("tsdb", func(t *testing.T) {
		res, err := c.TSDB(ctx, promv1.WithLimit(3))
		if err != nil {
			t.Fatal(err)
		}
		numSeries := len(f.floats) + len(f.hists)
		if res.HeadStats.NumSeries != numSeries {
			t.Errorf("numSeries %d, want %d", res.HeadStats.NumSeries, numSeries)
		}
		want := cardinality(f, 3)
		for name, pair := range map[string][2][]promv1.Stat{
			"seriesCountByMetricName":     {res.SeriesCountByMetricName, want.metrics},
			"labelValueCountByLabelName":  {res.LabelValueCountByLabelName, want.values},
			"memoryInBytesByLabelName":    {res.MemoryInBytesByLabelName, want.bytes},
			"seriesCountByLabelValuePair": {res.SeriesCountByLabelValuePair, want.pairs},
		} {
			if fmt.Sprint(pair[0]) != fmt.Sprint(pair[1]) {
				t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
			}
		}
		if res.HeadStats.NumLabelPairs != want.numPairs {
			t.Errorf("numLabelPairs %d, want %d", res.HeadStats.NumLabelPairs, want.numPairs)
		}
	})
	// The client reports a 500 without its body: read the answers raw.
	t.Run("delete_series disabled", func(t *testing.T) {
		err := c.DeleteSeries(ctx, []string{`up`}, time.Time{}, time.Time{})
		var apiErr *promv1.Error
		if !errors.As(err, &apiErr) || apiErr.Type != promv1.ErrServer {
			t.Errorf("delete_series with the admin API off: %v, want a server error", err)
		}
		srv, _ := serve(t, st, testOptions())
		checkAnswer(t, srv, "POST", "/api/v1/admin/tsdb/delete_series", "match[]=up",
			500, `{"status":"error","errorType":"unavailable","error":"admin APIs disabled"}`)
	})
	t.Run("delete_series enabled", func(t *testing.T) {
		o := testOptions()
		o.EnableAdmin = true
		ds := &deletingStore{Store: st}
		_, c := serve(t, ds, o)
		if err := c.DeleteSeries(ctx, []string{`up{instance="c:9100"}`, `qa_slow_gauge`}, at(fixT0), at(fixT0+60_000)); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteSeries(ctx, []string{`qa_pod_memory_bytes`}, time.Time{}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		want := []string{
			fmt.Sprintf(`%d %d [instance="c:9100" __name__="up"]`, fixT0, fixT0+60_000),
			fmt.Sprintf(`%d %d [__name__="qa_slow_gauge"]`, fixT0, fixT0+60_000),
			fmt.Sprintf(`%d %d [__name__="qa_pod_memory_bytes"]`, minTimeMs, maxTimeMs),
		}
		if !slices.Equal(ds.calls, want) {
			t.Errorf("DeleteSeries calls:\n%s\nwant\n%s", strings.Join(ds.calls, "\n"), strings.Join(want, "\n"))
		}
	})
}

// latest is the fixture's newest float sample of the series at or before
// ts, within the lookback.
func latest(f *fixture, m model.Metric, ts int64) float64 {
	for _, s := range f.floats {
		if s.Labels.String() != labelsOf(m).String() {
			continue
		}
		v := math.NaN()
		for _, smp := range s.Samples {
			if smp.T <= ts && smp.T > ts-5*60_000 {
				v = smp.V
			}
		}
		return v
	}
	return math.NaN()
}

func latestHist(f *fixture, name string, ts int64) (h struct{ Count, Sum float64 }) {
	for _, s := range f.hists {
		if s.Labels.Get("__name__") != name {
			continue
		}
		for _, x := range s.Histograms {
			if x.T <= ts {
				h.Count, h.Sum = x.FH.Count, x.FH.Sum
			}
		}
	}
	return h
}

func labelsOf(m model.Metric) labels.Labels {
	b := labels.NewScratchBuilder(len(m))
	for k, v := range m {
		b.Add(string(k), string(v))
	}
	b.Sort()
	return b.Labels()
}

func podsOf(ls []model.LabelSet) string {
	var pods []string
	for _, l := range ls {
		pods = append(pods, string(l["pod"]))
	}
	sort.Strings(pods)
	return strings.Join(pods, " ")
}

type cardinalityWant struct {
	metrics, values, bytes, pairs []promv1.Stat
	numPairs                      int
}

// cardinality counts the fixture's label index the way Prometheus's head
// postings statistics do, independently of the code under test.
func cardinality(f *fixture, limit int) cardinalityWant {
	pairs := map[string]map[string]uint64{}
	var all []labels.Labels
	for _, s := range f.floats {
		all = append(all, s.Labels)
	}
	for _, s := range f.hists {
		all = append(all, s.Labels)
	}
	for _, ls := range all {
		ls.Range(func(l labels.Label) {
			if pairs[l.Name] == nil {
				pairs[l.Name] = map[string]uint64{}
			}
			pairs[l.Name][l.Value]++
		})
	}
	var w cardinalityWant
	for n, vals := range pairs {
		w.values = append(w.values, promv1.Stat{Name: n, Value: uint64(len(vals))})
		w.numPairs += len(vals)
		var size uint64
		for v, c := range vals {
			if n == "__name__" {
				w.metrics = append(w.metrics, promv1.Stat{Name: v, Value: c})
			}
			w.pairs = append(w.pairs, promv1.Stat{Name: n + "=" + v, Value: c})
			size += labels.SizeOfLabels(n, v, c) // Prometheus's definition
		}
		w.bytes = append(w.bytes, promv1.Stat{Name: n, Value: size})
	}
	cut := func(s []promv1.Stat) []promv1.Stat {
		sort.Slice(s, func(i, j int) bool {
			if s[i].Value != s[j].Value {
				return s[i].Value > s[j].Value
			}
			return s[i].Name < s[j].Name
		})
		return s[:min(limit, len(s))]
	}
	w.metrics, w.values, w.bytes, w.pairs = cut(w.metrics), cut(w.values), cut(w.bytes), cut(w.pairs)
	return w
}

// checkAnswer sends one request (form is a query string for GET, a form
// body for POST) and requires the status and the exact body.
func checkAnswer(t *testing.T, srv *httptest.Server, method, path, form string, code int, body string) {
	t.Helper()
	gotCode, gotBody, _ := send(t, srv, method, path, form)
	if gotCode != code || gotBody != body {
		t.Errorf("%s %s %s: %d %s\nwant %d %s", method, path, form, gotCode, gotBody, code, body)
	}
}

func send(t *testing.T, srv *httptest.Server, method, path, form string) (int, string, http.Header) {
	t.Helper()
	var req *http.Request
	var err error
	if method == http.MethodGet {
		req, err = http.NewRequest(method, srv.URL+path+"?"+form, nil)
	} else {
		req, err = http.NewRequest(method, srv.URL+path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}
