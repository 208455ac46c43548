package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
)

func TestRouter(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	log := slog.New(slog.DiscardHandler)
	reg := newRegistry()
	store, err := actastore.Open(cfg.DataDir, storeOptions(cfg, log, reg))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rcv, err := otlp.New(cfg.OTLP, store, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRouter(cfg, store, rcv, log, reg, nil)
	srv := httptest.NewServer(rt)
	defer srv.Close()

	get := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	f := func(method, path string, code int, contains string) {
		t.Helper()
		if c, body := get(method, path); c != code || !strings.Contains(body, contains) {
			t.Errorf("%s %s: %d %.200q, want %d containing %q", method, path, c, body, code, contains)
		}
	}
	f("GET", "/-/ready", 503, "not ready")
	rt.ready.Store(true)
	f("GET", "/-/ready", 200, "ready")
	f("GET", "/-/healthy", 200, "healthy")
	f("GET", "/api/v1/write", 405, "POST")
	f("GET", "/api/v1/read", 405, "POST")
	f("GET", "/v1/metrics", 405, "")
	f("GET", "/nope", 404, "")
	// The query API, one handler label per endpoint; the engine's metrics.
	f("GET", "/api/v1/query?query=1%2B1&time=10", 200, `{"status":"success","data":{"resultType":"scalar","result":[10,"2"]}}`)
	f("POST", "/api/v1/labels", 200, `{"status":"success","data":[]}`)
	f("GET", "/api/v1/label/job/values", 200, `{"status":"success","data":[]}`)
	f("DELETE", "/api/v1/query", 405, "")
	f("GET", "/api/v1/status/buildinfo", 200, `"goVersion":"go`)
	f("GET", "/api/v1/status/flags", 200, `"query.lookback-delta":"5m0s"`)
	f("GET", "/metrics", 200, `acta_http_requests_total{code="200",handler="query"} 1`)
	f("GET", "/metrics", 200, `acta_http_requests_total{code="200",handler="label_values"} 1`)
	f("GET", "/metrics", 200, "prometheus_engine_query_duration_seconds")
	f("GET", "/metrics", 200, `acta_http_requests_total{code="405",handler="write"} 1`)
	// What the store registers is served too.
	f("GET", "/metrics", 200, "acta_store_")
	f("GET", "/metrics", 200, "go_goroutines")
}
