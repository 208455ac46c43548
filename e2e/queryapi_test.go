package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// querySampleLimit is --query.max-samples of Prometheus #1 and
// query.max_samples of acta-remote: low enough that one bad request
// exceeds it on both (422), high enough for every corpus query.
const querySampleLimit = 20000

// TestQueryAPIAgainstPrometheus has a real Prometheus scrape itself and the
// corpus target (qaTarget: counters, gauges, classic and native histograms,
// series that come and go, exemplars) every second and remote-write it all
// (Remote-Write 2.0) to acta-remote, then asks both Prometheus's HTTP API the
// same questions and compares the answers as JSON text:
//
//   - every expression of queryapi/testdata/corpus.promql as instant queries
//     at five times and range queries at two steps; floats compare exactly
//     (the API writes the shortest text that parses back to the same bits),
//     except where Prometheus's evaluation depends on the order its storage
//     lists series in (sums over series), which is series creation order in
//     Prometheus's head and label order in the store: there a relative
//     difference up to 1e-12 is accepted and counted;
//   - series, labels and label values (without a range: equal; with a
//     range: acta-remote's exact answer must be within Prometheus's, whose
//     head answers at block granularity), metadata, exemplars, the
//     cardinality lists of /api/v1/status/tsdb (metadata: of the families
//     the target still exposes; Prometheus answers from its targets' caches);
//   - bad requests: the same status and the same body.
func TestQueryAPIAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	began := time.Now()
	tmp := t.TempDir()
	promBin := prometheusBinary(t)
	addrs := distinctAddrs(t, 2)
	be := newBackend(t, tmp, addrs[0])
	be.owner = t
	if be.name == "acta-remote" {
		cfg := filepath.Join(tmp, "acta-remote.yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("query:\n  max_samples: %d\n  default_subquery_step: 1s\n", querySampleLimit)), 0o644); err != nil {
			t.Fatal(err)
		}
		be.args = append(be.args, "--config", cfg)
	}
	target := startQATarget(t)
	vars := map[string]string{"PrometheusAddr": addrs[1], "ActaRemoteAddr": be.addr, "TargetAddr": target}
	cfg := renderConfig(t, "prometheus-writer-query.yml", filepath.Join(tmp, "prometheus-writer-query.yml"), vars)
	be.start(t)
	start := time.Now().Truncate(time.Second).Add(time.Second)
	p1 := startProcess(t, t, "prometheus1", filepath.Join(tmp, "prometheus1.log"), promBin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(tmp, "prometheus1-tsdb"),
		"--web.listen-address="+addrs[1],
		"--storage.remote.flush-deadline=30s",
		"--enable-feature=exemplar-storage,metadata-wal-records",
		fmt.Sprintf("--query.max-samples=%d", querySampleLimit),
	)
	waitReady(t, p1, "http://"+addrs[1]+"/-/ready", 2*time.Minute)
	prom := "http://" + addrs[1]
	acta := "http://" + be.addr
	hold(t, start.Add(qaRunLength+2*time.Second), be.proc, p1)
	end := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	// The corpus looks 5 s past a query's time (offset -5s).
	waitQueueSent(t, prom, "acta-qa", end.Add(6*time.Second), 90*time.Second)
	dataAt := time.Now()

	// Exemplars first: acta-remote keeps the newest 32 per series, and the
	// target adds one a second.
	t.Run("metadata exemplars tsdb", func(t *testing.T) { compareExtras(t, prom, acta, end) })
	t.Run("corpus", func(t *testing.T) { compareQueryCorpus(t, prom, acta, start, end) })
	t.Run("series and labels", func(t *testing.T) { compareLookups(t, prom, acta, start, end) })
	t.Run("bad requests", func(t *testing.T) { compareBadRequests(t, prom, acta, start, end) })
	t.Logf("wall time: %s (Prometheus scraping %s, comparisons %s)",
		time.Since(began).Round(time.Second), qaRunLength, time.Since(dataAt).Round(time.Second))

	if err := p1.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("prometheus#1 on SIGTERM: %v", err)
	}
	if err := be.proc.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("%s on SIGTERM: %v, want exit 0", be.name, err)
	}
	checkLog(t, be.logPath)
}

// waitQueueSent waits until the named remote-write queue of the Prometheus
// at base has sent a sample newer than end.
func waitQueueSent(t *testing.T, base, queue string, end time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := scrapeMetric(context.Background(), base, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds", `remote_name="`+queue+`"`)
		if err == nil && len(v) == 1 && int64(v[0]) > end.Unix() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s has not sent past %s within %s (%v %v)", queue, end.UTC().Format(time.TimeOnly), timeout, v, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// answer is one API answer, raw.
type answer struct {
	code      int
	status    string
	errorType string
	err       string
	data      json.RawMessage
	warnings  []string
	infos     []string
	body      string
}

func askAPI(base, method, path string, params url.Values) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var req *http.Request
	var err error
	if method == http.MethodGet {
		req, err = http.NewRequestWithContext(ctx, method, base+path+"?"+params.Encode(), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(params.Encode()))
		if req != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return answer{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, body: strings.TrimSpace(string(body))}
	var r struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
		Warnings  []string        `json:"warnings"`
		Infos     []string        `json:"infos"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return a, fmt.Errorf("HTTP %d, not JSON: %.200q", resp.StatusCode, body)
	}
	a.status, a.errorType, a.err, a.data, a.warnings, a.infos = r.Status, r.ErrorType, r.Error, r.Data, r.Warnings, r.Infos
	return a, nil
}

// readQueryCorpus reads queryapi/testdata/corpus.promql of the parent module.
func readQueryCorpus(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "queryapi", "testdata", "corpus.promql"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// orderSensitive: the expression adds up floats of several series, whose
// order is the storage's (see the test's doc).
var orderSensitive = regexp.MustCompile(`\b(sum|avg|stddev|stdvar)\b`)

func compareQueryCorpus(t *testing.T, prom, acta string, start, end time.Time) {
	exprs := readQueryCorpus(t)
	if len(exprs) < 150 {
		t.Errorf("corpus has %d expressions, want at least 150", len(exprs))
	}
	span := end.Sub(start)
	instants := []time.Time{start.Add(20 * time.Second), start.Add(span / 2), start.Add(span*3/4 + 500*time.Millisecond), end.Add(-10 * time.Second), end}
	type req struct {
		path   string
		params url.Values
	}
	var exact, approx, failedAlike, nonEmpty, asked int
	var approxExprs []string
	for _, e := range exprs {
		var reqs []req
		for _, ts := range instants {
			reqs = append(reqs, req{"/api/v1/query", url.Values{"query": {e}, "time": {promTime(ts)}}})
		}
		reqs = append(reqs,
			req{"/api/v1/query_range", url.Values{"query": {e}, "start": {promTime(start)}, "end": {promTime(end)}, "step": {"1"}}},
			req{"/api/v1/query_range", url.Values{"query": {e}, "start": {promTime(start.Add(7 * time.Second))}, "end": {promTime(end)}, "step": {"7"}}})
		for _, r := range reqs {
			asked++
			want, err := askAPI(prom, http.MethodGet, r.path, r.params)
			if err != nil {
				t.Fatalf("prometheus: %s %v: %v", r.path, r.params, err)
			}
			got, err := askAPI(acta, http.MethodPost, r.path, r.params)
			if err != nil {
				t.Fatalf("acta-remote: %s %v: %v", r.path, r.params, err)
			}
			what := fmt.Sprintf("%s %s", r.path, r.params.Encode())
			if want.status != "success" || got.status != "success" {
				if got.code != want.code || got.body != want.body {
					t.Errorf("%s:\n  acta-remote %d %s\n  prometheus  %d %s", what, got.code, got.body, want.code, want.body)
				}
				failedAlike++
				continue
			}
			if strings.Join(got.warnings, "|") != strings.Join(want.warnings, "|") || strings.Join(got.infos, "|") != strings.Join(want.infos, "|") {
				t.Errorf("%s: warnings %q infos %q, want %q %q", what, got.warnings, got.infos, want.warnings, want.infos)
			}
			w, g := normalizeData(t, want.data), normalizeData(t, got.data)
			if !strings.Contains(w, `"result":[]`) {
				nonEmpty++
			}
			switch {
			case w == g:
				exact++
			case orderSensitive.MatchString(e) && sameWithin(t, w, g, 1e-12):
				approx++
				approxExprs = append(approxExprs, e)
			default:
				t.Errorf("%s:\n  acta-remote %s\n  prometheus  %s", what, clip(g), clip(w))
			}
		}
	}
	t.Logf("%d expressions, %d queries: %d equal as JSON text, %d equal within 1e-12 (series summed in another order), %d failing alike; %d non-empty",
		len(exprs), asked, exact, approx, failedAlike, nonEmpty)
	if len(approxExprs) > 0 {
		t.Logf("order-dependent sums: %s", strings.Join(uniq(approxExprs), "; "))
	}
	if nonEmpty < asked/2 {
		t.Errorf("only %d of %d answers are non-empty: the comparison proves little", nonEmpty, asked)
	}
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// normalizeData re-encodes a query's data canonically; an instant vector's
// samples are sorted by their labels, since the engine's order follows map
// iteration for some functions (in Prometheus too).
func normalizeData(t *testing.T, data json.RawMessage) string {
	t.Helper()
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("data %.200s: %v", data, err)
	}
	if d.ResultType == "vector" {
		var items []json.RawMessage
		if err := json.Unmarshal(d.Result, &items); err != nil {
			t.Fatal(err)
		}
		key := func(m json.RawMessage) string {
			var x struct {
				Metric map[string]string `json:"metric"`
			}
			json.Unmarshal(m, &x)
			return labelsString(x.Metric)
		}
		sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
		b, _ := json.Marshal(items)
		d.Result = b
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// sameWithin compares two JSON documents of the same shape, numbers in
// strings (the API's sample values) within a relative tolerance.
func sameWithin(t *testing.T, a, b string, tol float64) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	var walk func(x, y any) bool
	walk = func(x, y any) bool {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok || len(xv) != len(yv) {
				return false
			}
			for k := range xv {
				if !walk(xv[k], yv[k]) {
					return false
				}
			}
			return true
		case []any:
			yv, ok := y.([]any)
			if !ok || len(xv) != len(yv) {
				return false
			}
			for i := range xv {
				if !walk(xv[i], yv[i]) {
					return false
				}
			}
			return true
		case string:
			ys, ok := y.(string)
			if !ok {
				return false
			}
			if xv == ys {
				return true
			}
			fx, err1 := strconv.ParseFloat(xv, 64)
			fy, err2 := strconv.ParseFloat(ys, 64)
			return err1 == nil && err2 == nil && math.Abs(fx-fy) <= tol*math.Max(math.Abs(fx), math.Abs(fy))
		default:
			return x == y
		}
	}
	return walk(x, y)
}

// compareLookups compares /api/v1/series, /api/v1/labels and
// /api/v1/label/<name>/values.
func compareLookups(t *testing.T, prom, acta string, start, end time.Time) {
	qa := `{__name__=~"qa_.+"}`
	recent := url.Values{"start": {promTime(end.Add(-15 * time.Second))}, "end": {promTime(end)}}
	with := func(v url.Values, kv ...string) url.Values {
		out := url.Values{}
		for k, vs := range v {
			out[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	all := url.Values{}
	type lookup struct {
		path   string
		params url.Values
		subset bool // acta-remote's answer must be within Prometheus's (bounded range)
	}
	lookups := []lookup{
		{"/api/v1/series", with(all, "match[]", qa), false},
		{"/api/v1/series", with(all, "match[]", `qa_requests_total`, "match[]", `qa_native_seconds`), false},
		{"/api/v1/series", with(recent, "match[]", qa), false},
		{"/api/v1/series", with(recent, "match[]", `qa_pod_memory_bytes`), false},
		{"/api/v1/labels", with(all, "match[]", qa), false},
		{"/api/v1/labels", with(recent, "match[]", `qa_pod_memory_bytes`), true},
		{"/api/v1/label/__name__/values", with(all, "match[]", qa), false},
		{"/api/v1/label/pod/values", all, false},
		{"/api/v1/label/pod/values", recent, true},
		{"/api/v1/label/instance/values", with(all, "match[]", `qa_native_seconds`), false},
		{"/api/v1/label/code/values", with(all, "match[]", "qa_requests_total", "limit", "2"), false},
	}
	for _, l := range lookups {
		want, err := askAPI(prom, http.MethodGet, l.path, l.params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := askAPI(acta, http.MethodGet, l.path, l.params)
		if err != nil {
			t.Fatal(err)
		}
		what := l.path + " " + l.params.Encode()
		if want.status != "success" || got.status != "success" {
			t.Errorf("%s: acta-remote %d %s, prometheus %d %s", what, got.code, got.body, want.code, want.body)
			continue
		}
		w, g := itemSet(t, want.data), itemSet(t, got.data)
		if len(w) == 0 {
			t.Errorf("%s: prometheus answers nothing: the comparison proves nothing", what)
		}
		var missing, extra []string
		for k := range w {
			if !g[k] {
				missing = append(missing, k)
			}
		}
		for k := range g {
			if !w[k] {
				extra = append(extra, k)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		if len(extra) > 0 || len(missing) > 0 && !l.subset {
			t.Errorf("%s: acta-remote lacks %q and has %q more than prometheus", what, missing, extra)
		} else {
			t.Logf("%s: %d items (prometheus %d)", what, len(g), len(w))
		}
	}
}

// itemSet is a series or label answer's items as a set of canonical strings.
func itemSet(t *testing.T, data json.RawMessage) map[string]bool {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatalf("%.200s: %v", data, err)
	}
	out := map[string]bool{}
	for _, it := range items {
		var m map[string]string
		if json.Unmarshal(it, &m) == nil {
			out[labelsString(m)] = true
			continue
		}
		out[string(it)] = true
	}
	return out
}

// compareExtras compares metadata, exemplars and the cardinality lists.
func compareExtras(t *testing.T, prom, acta string, end time.Time) {
	// qa_pod_memory_bytes is left out: its pods are gone by now, and
	// Prometheus lists the metadata its targets expose at the moment,
	// acta-remote the latest it stored.
	for _, fam := range []string{"qa_requests_total", "qa_temperature_celsius", "qa_latency_seconds", "qa_native_seconds", "qa_native_queue", "qa_slow_gauge"} {
		v := url.Values{"metric": {fam}}
		want, err1 := askAPI(prom, http.MethodGet, "/api/v1/metadata", v)
		got, err2 := askAPI(acta, http.MethodGet, "/api/v1/metadata", v)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if string(got.data) != string(want.data) || want.status != "success" || string(want.data) == "{}" {
			t.Errorf("metadata of %s: acta-remote %s, prometheus %s", fam, got.body, want.body)
		}
	}
	// Exemplars of the last 10 s: with the seconds since, fewer per series
	// than either keeps (acta-remote: the newest 32).
	v := url.Values{"query": {`qa_requests_total`}, "start": {promTime(end.Add(-10 * time.Second))}, "end": {promTime(end)}}
	want, err1 := askAPI(prom, http.MethodGet, "/api/v1/query_exemplars", v)
	got, err2 := askAPI(acta, http.MethodGet, "/api/v1/query_exemplars", v)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if string(got.data) != string(want.data) || want.status != "success" || strings.Count(string(want.data), "trace_id") < 16 {
		t.Errorf("exemplars: acta-remote %s\nprometheus %s", clip(got.body), clip(want.body))
	} else {
		t.Logf("exemplars: %d bytes of JSON, equal", len(got.data))
	}
	// Cardinality: the corpus metrics' series counts (Prometheus's own
	// metrics gain series while the test queries it).
	cards := func(base string) map[string]string {
		a, err := askAPI(base, http.MethodGet, "/api/v1/status/tsdb", url.Values{"limit": {"10000"}})
		if err != nil || a.status != "success" {
			t.Fatalf("%s status/tsdb: %v %s", base, err, a.body)
		}
		var d struct {
			SeriesCountByMetricName []struct {
				Name  string `json:"name"`
				Value uint64 `json:"value"`
			} `json:"seriesCountByMetricName"`
		}
		if err := json.Unmarshal(a.data, &d); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range d.SeriesCountByMetricName {
			if strings.HasPrefix(s.Name, "qa_") {
				out[s.Name] = fmt.Sprint(s.Value)
			}
		}
		return out
	}
	w, g := cards(prom), cards(acta)
	if fmt.Sprint(w) != fmt.Sprint(g) || len(w) < 7 {
		t.Errorf("seriesCountByMetricName of qa_*: acta-remote %v, prometheus %v", g, w)
	}
}

// compareBadRequests sends bad requests to both and requires the same
// status and body.
func compareBadRequests(t *testing.T, prom, acta string, start, end time.Time) {
	s, e := promTime(start), promTime(end)
	for _, c := range []struct {
		method, path string
		params       url.Values
	}{
		{"GET", "/api/v1/query", url.Values{"query": {"sum(up"}}},
		{"POST", "/api/v1/query", url.Values{"query": {"rate(up)"}}},
		{"GET", "/api/v1/query", url.Values{"query": {"up"}, "time": {"yesterday"}}},
		{"GET", "/api/v1/query", url.Values{"query": {"up"}, "timeout": {"soon"}}},
		{"GET", "/api/v1/query", url.Values{"query": {"up"}, "limit": {"-1"}}},
		{"GET", "/api/v1/query", url.Values{"query": {"up"}, "lookback_delta": {"x"}}},
		{"GET", "/api/v1/query", url.Values{"query": {`{__name__=~".+"}[1m]`}, "time": {e}}}, // over query.max_samples: 422
		{"GET", "/api/v1/query_range", url.Values{"query": {"up"}, "start": {e}, "end": {s}, "step": {"1"}}},
		{"GET", "/api/v1/query_range", url.Values{"query": {"up"}, "start": {s}, "end": {e}, "step": {"0.001"}}},
		{"GET", "/api/v1/query_range", url.Values{"query": {"up"}, "start": {s}, "end": {e}, "step": {"0"}}},
		{"GET", "/api/v1/query_range", url.Values{"query": {"up[1m]"}, "start": {s}, "end": {e}, "step": {"1"}}},
		{"POST", "/api/v1/query_range", url.Values{"query": {"up"}, "start": {"x"}, "end": {e}, "step": {"1"}}},
		{"GET", "/api/v1/series", url.Values{"match[]": {`{job~"qa"}`}}},
		{"GET", "/api/v1/series", url.Values{}},
		{"GET", "/api/v1/series", url.Values{"match[]": {`{job=~".*"}`}}},
		{"GET", "/api/v1/labels", url.Values{"start": {"then"}}},
		{"GET", "/api/v1/label/job/values", url.Values{"match[]": {`up{`}}},
		{"GET", "/api/v1/query_exemplars", url.Values{"query": {"up"}, "start": {e}, "end": {s}}},
		{"GET", "/api/v1/status/tsdb", url.Values{"limit": {"0"}}},
		{"POST", "/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {"up"}}},
	} {
		want, err1 := askAPI(prom, c.method, c.path, c.params)
		got, err2 := askAPI(acta, c.method, c.path, c.params)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got.code != want.code || got.body != want.body || want.status != "error" {
			t.Errorf("%s %s %s:\n  acta-remote %d %s\n  prometheus  %d %s", c.method, c.path, c.params.Encode(), got.code, got.body, want.code, want.body)
		} else {
			t.Logf("%s %s %s: both %d %s", c.method, c.path, c.params.Encode(), got.code, got.body)
		}
	}
}
