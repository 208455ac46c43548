package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
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
	rcv, err := otlp.New(otlpOptions(cfg.OTLP), store, log, reg)
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

// /debug/pprof/ serves Go's profiles when debug.pprof is on (the default),
// behind the same auth as the data, and nothing when it is off.
func TestRouterPprof(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	store, err := actastore.Open(cfg.DataDir, storeOptions(cfg, log, newRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rcv, err := otlp.New(otlpOptions(cfg.OTLP), store, log, newRegistry())
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("pprof-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.Config{BearerTokenFile: tok}, log)
	if err != nil {
		t.Fatal(err)
	}
	get := func(srv *httptest.Server, path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	f := func(srv *httptest.Server, path, token string, code int, contains string) {
		t.Helper()
		if c, body := get(srv, path, token); c != code || !strings.Contains(body, contains) {
			t.Errorf("GET %s: %d %.200q, want %d containing %q", path, c, body, code, contains)
		}
	}

	if !cfg.Debug.Pprof {
		t.Fatal("debug.pprof is off by default; docs/configuration.md says on")
	}
	guarded := httptest.NewServer(newRouter(cfg, store, rcv, log, newRegistry(), authn))
	defer guarded.Close()
	f(guarded, "/debug/pprof/", "", 401, "missing or invalid credentials")
	f(guarded, "/debug/pprof/heap?debug=1", "wrong", 401, "missing or invalid credentials")
	f(guarded, "/debug/pprof/", "pprof-token", 200, "goroutine")
	f(guarded, "/debug/pprof/goroutine?debug=1", "pprof-token", 200, "goroutine profile: total")
	f(guarded, "/debug/pprof/heap?debug=1", "pprof-token", 200, "heap profile:")
	f(guarded, "/debug/pprof/cmdline", "pprof-token", 200, "")
	if c, body := get(guarded, "/debug/pprof/profile?seconds=1", "pprof-token"); c != 200 || len(body) == 0 {
		t.Errorf("CPU profile: %d, %d bytes", c, len(body))
	}

	cfg.Debug.Pprof = false
	off := httptest.NewServer(newRouter(cfg, store, rcv, log, newRegistry(), nil))
	defer off.Close()
	f(off, "/debug/pprof/", "", 404, "")
	f(off, "/debug/pprof/heap", "", 404, "")
}
