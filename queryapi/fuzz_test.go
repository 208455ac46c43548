package queryapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/acta-remote/acta-remote/actastore"
)

// FuzzQueryAPI sends arbitrary PromQL, times, steps and matchers to the
// data endpoints over a store holding the test fixture. Whatever comes in,
// the answer is Prometheus's JSON envelope with one of its statuses (or
// its empty 204 for exemplars of an expression without selectors), never
// a panic, and success only with 200.
func FuzzQueryAPI(f *testing.F) {
	st, err := actastore.Open(f.TempDir(), actastore.Options{MaxQuerySeries: 1000, MaxQuerySamples: 1_000_000})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	newFixture().writeStore(f, st)
	o := testOptions()
	o.Timeout, o.MaxSamples = 2*time.Second, 1_000_000
	r := mux.NewRouter()
	for _, rt := range New(st, o).Routes() {
		r.Handle(rt.Path, rt.Handler)
	}
	paths := []string{"/api/v1/query", "/api/v1/query_range", "/api/v1/series", "/api/v1/labels",
		"/api/v1/label/instance/values", "/api/v1/query_exemplars", "/api/v1/metadata", "/api/v1/status/tsdb", "/api/v1/format_query"}
	f.Add(uint8(0), `rate(qa_requests_total[1m])`, "1767226800", "", "")
	f.Add(uint8(1), `sum by (le) (rate(qa_latency_seconds_bucket[2m]))`, "1767225600", "1767229200", "60")
	f.Add(uint8(1), `histogram_quantile(0.9, rate(qa_native_seconds[1m]))`, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00.5Z", "15s")
	f.Add(uint8(2), `{__name__=~"qa_.+",pod!=""}`, "0", "1767229200", "")
	f.Add(uint8(3), `up{job="api"}`, "-1e9", "1e10", "")
	f.Add(uint8(4), `qa_native_seconds`, "", "", "")
	f.Add(uint8(5), `qa_requests_total{code=~"5.."}`, "1767225600", "1767229200", "")
	f.Add(uint8(7), `x`, "", "", "3")
	f.Add(uint8(1), `max_over_time(qa_temperature_celsius[1h:1s])`, "1767225600", "1767229200", "0.5")
	f.Add(uint8(0), "label_replace(up, \"a\", \"$1\", \"instance\", \"(.*\")", "NaN", "", "")
	f.Fuzz(func(t *testing.T, which uint8, q, start, end, step string) {
		path := paths[int(which)%len(paths)]
		v := url.Values{"query": {q}, "match[]": {q}, "start": {start}, "end": {end}, "step": {step}, "time": {start}, "limit": {step}, "metric": {q}}
		// GET: label values, metadata and status/tsdb take no POST (405,
		// as in Prometheus); the others read the same parameters either way.
		req := httptest.NewRequest(http.MethodGet, path+"?"+v.Encode(), nil)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if rec.Code == http.StatusNoContent && rec.Body.Len() == 0 {
			return // Prometheus's answer to exemplars of a query without selectors
		}
		var resp struct {
			Status    string `json:"status"`
			ErrorType string `json:"errorType"`
			Error     string `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%s %v: %d, not JSON: %.300q", path, v, rec.Code, rec.Body.Bytes())
		}
		switch {
		case rec.Code == http.StatusOK && resp.Status == "success":
		case resp.Status == "error" && resp.ErrorType != "" && resp.Error != "" &&
			(rec.Code == 400 || rec.Code == 422 || rec.Code == 503):
		default:
			t.Fatalf("%s %v: %d %.300s", path, v, rec.Code, rec.Body.Bytes())
		}
	})
}
