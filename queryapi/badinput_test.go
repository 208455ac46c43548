package queryapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// TestBadInput sends each bad request and requires Prometheus's answer:
// the status, the error envelope and its errorType, and the message (e2e's
// TestQueryAPIAgainstPrometheus sends the same to a real Prometheus).
func TestBadInput(t *testing.T) {
	f := newFixture()
	st, _ := openStores(t, f, actastore.Options{MaxQuerySeries: 5})
	o := testOptions()
	o.MaxSamples = 100
	o.EnableAdmin = true
	srv, _ := serve(t, &deletingStore{Store: &slowStore{Store: st}}, o)
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	end := "1767229200"
	for _, c := range []struct {
		name, method, path, form string
		code                     int
		typ, msg                 string
	}{
		{"invalid PromQL", "GET", "/api/v1/query", q("query", "sum(up"), 400, "bad_data",
			`invalid parameter "query": 1:7: parse error: unclosed left parenthesis`},
		{"invalid PromQL in a POST form", "POST", "/api/v1/query_range", q("query", "rate(up)", "start", "0", "end", "60", "step", "15"), 400, "bad_data",
			`invalid parameter "query": 1:6: parse error: expected type range vector in call to function "rate", got instant vector`},
		{"unknown function", "GET", "/api/v1/query", q("query", "no_such_fn(up)"), 400, "bad_data",
			`invalid parameter "query": 1:1: parse error: unknown function with name "no_such_fn"`},
		{"bad time", "GET", "/api/v1/query", q("query", "up", "time", "yesterday"), 400, "bad_data",
			`invalid parameter "time": invalid time value for 'time': cannot parse "yesterday" to a valid timestamp`},
		{"bad start", "GET", "/api/v1/query_range", q("query", "up", "start", "x", "end", end, "step", "15"), 400, "bad_data",
			`invalid parameter "start": cannot parse "x" to a valid timestamp`},
		{"end before start", "GET", "/api/v1/query_range", q("query", "up", "start", end, "end", "1767225600", "step", "15"), 400, "bad_data",
			`invalid parameter "end": end timestamp must not be before start time`},
		{"zero step", "GET", "/api/v1/query_range", q("query", "up", "start", "1767225600", "end", end, "step", "0"), 400, "bad_data",
			`invalid parameter "step": zero or negative query resolution step widths are not accepted. Try a positive integer`},
		{"more than 11,000 points", "GET", "/api/v1/query_range", q("query", "up", "start", "1767225600", "end", end, "step", "0.3"), 400, "bad_data",
			`exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)`},
		{"range vector in a range query", "GET", "/api/v1/query_range", q("query", "up[1m]", "start", "1767225600", "end", end, "step", "15"), 400, "bad_data",
			`invalid parameter "query": invalid expression type "range vector" for range query, must be Scalar or instant Vector`},
		{"bad timeout", "GET", "/api/v1/query", q("query", "up", "timeout", "soon"), 400, "bad_data",
			`invalid parameter "timeout": cannot parse "soon" to a valid duration`},
		{"bad limit", "GET", "/api/v1/query", q("query", "up", "limit", "-1"), 400, "bad_data",
			`invalid parameter "limit": limit must be non-negative`},
		{"unknown matcher type", "GET", "/api/v1/series", q("match[]", `{job~"api"}`), 400, "bad_data",
			`invalid parameter "match[]": 1:5: parse error: unexpected character inside braces: '~'`},
		{"series without match[]", "GET", "/api/v1/series", "", 400, "bad_data", `no match[] parameter provided`},
		{"matcher matching everything", "GET", "/api/v1/series", q("match[]", `{job=~".*"}`), 400, "bad_data",
			`invalid parameter "match[]": match[] must contain at least one non-empty matcher`},
		{"labels: bad start", "GET", "/api/v1/labels", q("start", "then"), 400, "bad_data",
			`invalid parameter "start": invalid time value for 'start': cannot parse "then" to a valid timestamp`},
		{"exemplars: end before start", "GET", "/api/v1/query_exemplars", q("query", "up", "start", "10", "end", "5"), 400, "bad_data",
			`end timestamp must not be before start timestamp`},
		{"delete_series without match[]", "POST", "/api/v1/admin/tsdb/delete_series", "", 400, "bad_data", `no match[] parameter provided`},
		{"tsdb: bad limit", "GET", "/api/v1/status/tsdb", q("limit", "0"), 400, "bad_data", `limit must be a positive number`},
		{"too many samples", "GET", "/api/v1/query", q("query", `qa_temperature_celsius{instance="a:9100"}[1h]`, "time", end), 422, "execution",
			`query processing would load too many samples into memory in query execution`},
		{"the store's series limit", "GET", "/api/v1/query", q("query", `qa_requests_total`, "time", end), 422, "execution",
			`expanding series: selecting series: actastore: query limit exceeded: 9 series match, limit 5 (the store's per-selector limits remote_read.max_series_per_query and remote_read.max_samples_per_query)`},
		{"timeout", "GET", "/api/v1/query", q("query", `qa_requests_total{code="200",slow=""}`, "time", end, "timeout", "0.05"), 503, "timeout",
			`query timed out in expression evaluation`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := send(t, srv, c.method, c.path, c.form)
			var r struct {
				Status, ErrorType, Error string
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatalf("%d %s: not JSON: %v", code, body, err)
			}
			if code != c.code || r.Status != "error" || r.ErrorType != c.typ || c.msg != "" && r.Error != c.msg {
				t.Errorf("%d %s\nwant %d errorType %q error %q", code, body, c.code, c.typ, c.msg)
			}
		})
	}
	// Nothing the bad requests did changed the data.
	code, body, _ := send(t, srv, "GET", "/api/v1/query", q("query", `count(up)`, "time", end))
	if code != 200 || !strings.Contains(body, `"value":[1767229200,"3"]`) {
		t.Errorf("count(up) after the bad requests: %d %s", code, body)
	}
}

// slowStore makes a Select with a matcher on label "slow" (slow="" matches
// every series, none has it) take 300 ms before the store runs it, and the
// store then finds the context expired: a query outlasting its timeout.
type slowStore struct{ *actastore.Store }

func (s *slowStore) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	for _, m := range ms {
		if m.Name == "slow" {
			time.Sleep(300 * time.Millisecond)
		}
	}
	return s.Store.Select(ctx, mint, maxt, ms...)
}

// gatedStore holds every Select until the gate opens: a request that keeps
// its query slot for as long as the test wants.
type gatedStore struct {
	*actastore.Store
	gate    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (g *gatedStore) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	g.once.Do(func() { close(g.entered) })
	<-g.gate
	return g.Store.Select(ctx, mint, maxt, ms...)
}

// TestBusySlots: with every query slot taken, a request waits
// max_queue_wait and gets 429 with Retry-After in Prometheus's envelope;
// endpoints that read no data (buildinfo) still answer; once the slot
// frees, queries run again.
func TestBusySlots(t *testing.T) {
	st, _ := openStores(t, newFixture(), actastore.Options{})
	g := &gatedStore{Store: st, gate: make(chan struct{}), entered: make(chan struct{})}
	o := testOptions()
	o.MaxConcurrent, o.MaxQueueWait = 1, 200*time.Millisecond
	srv, _ := serve(t, g, o)
	done := make(chan int)
	go func() {
		code, _, _ := send(t, srv, "GET", "/api/v1/query", "query=up&time=1767229200")
		done <- code
	}()
	<-g.entered
	start := time.Now()
	code, body, h := send(t, srv, "GET", "/api/v1/query_range", "query=up&start=1767225600&end=1767229200&step=60")
	waited := time.Since(start)
	want := `{"status":"error","errorType":"unavailable","error":"too many concurrent requests: all 1 request slots stayed busy for 200ms (config query.max_concurrent)"}`
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || body != want {
		t.Errorf("busy: %d Retry-After %q %s\nwant 429 Retry-After 1 %s", code, h.Get("Retry-After"), body, want)
	}
	if waited < 200*time.Millisecond {
		t.Errorf("refused after %s, want after max_queue_wait 200ms", waited)
	}
	if code, body, _ := send(t, srv, "GET", "/api/v1/status/buildinfo", ""); code != 200 || !strings.Contains(body, `"version":"1.2.3"`) {
		t.Errorf("buildinfo while busy: %d %s", code, body)
	}
	close(g.gate)
	if code := <-done; code != 200 {
		t.Errorf("the query holding the slot: %d", code)
	}
	if code, _, _ := send(t, srv, "GET", "/api/v1/query", "query=up&time=1767229200"); code != 200 {
		t.Errorf("after the slot freed: %d", code)
	}
}
