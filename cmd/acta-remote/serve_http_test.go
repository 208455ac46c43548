package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
	"github.com/acta-remote/acta-remote/otlp"
)

// testRouter is the server's real router over a real store in
// cfg.DataDir (a registry and a silent logger of its own), served by
// httptest: what the tests of the HTTP surface run against, without the
// binary.
type testRouter struct {
	*httptest.Server
	cfg   *config.Config
	store *actastore.Store
	rcv   *otlp.Receiver
	log   *slog.Logger
	rt    *router
	once  sync.Once
}

// startRouter opens the store and serves the router; stop runs at the
// test's end if the test did not call it.
func startRouter(t testing.TB, cfg *config.Config) *testRouter {
	t.Helper()
	s := &testRouter{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	reg := newRegistry()
	var err error
	if s.store, err = actastore.Open(cfg.DataDir, storeOptions(cfg, s.log, reg)); err != nil {
		t.Fatal(err)
	}
	if s.rcv, err = otlp.New(otlpOptions(cfg.OTLP), s.store, s.log, reg); err != nil {
		s.store.Close()
		t.Fatal(err)
	}
	s.rt = newRouter(cfg, s.store, s.rcv, s.log, reg, nil)
	s.Server = httptest.NewServer(s.rt)
	t.Cleanup(s.stop)
	return s
}

// stop closes the server, then the store; calls after the first do nothing.
func (s *testRouter) stop() { s.once.Do(func() { s.Server.Close(); s.store.Close() }) }

// another serves a second router over the same store and receiver, with a
// fresh registry and authn (nil: no auth), until the test ends. It reads
// s.cfg as it is when called.
func (s *testRouter) another(t testing.TB, authn *auth.Authenticator) *httptest.Server {
	srv := httptest.NewServer(newRouter(s.cfg, s.store, s.rcv, s.log, newRegistry(), authn))
	t.Cleanup(srv.Close)
	return srv
}

func TestRouter(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	srv := startRouter(t, cfg)

	f := func(method, path string, code int, contains string) {
		t.Helper()
		if a := testkit.Send(t, method, srv.URL+path, nil, nil); a.Code != code || !strings.Contains(string(a.Body), contains) {
			t.Errorf("%s %s: %d %.200q, want %d containing %q", method, path, a.Code, a.Body, code, contains)
		}
	}
	f("GET", "/-/ready", 503, "not ready")
	srv.rt.ready.Store(true)
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
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	srv := startRouter(t, cfg)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("pprof-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.Config{BearerTokenFile: tok}, srv.log)
	if err != nil {
		t.Fatal(err)
	}
	get := func(srv *httptest.Server, path, token string) testkit.Answer {
		t.Helper()
		h := map[string]string{}
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		return testkit.Send(t, http.MethodGet, srv.URL+path, h, nil)
	}
	f := func(srv *httptest.Server, path, token string, code int, contains string) {
		t.Helper()
		if a := get(srv, path, token); a.Code != code || !strings.Contains(string(a.Body), contains) {
			t.Errorf("GET %s: %d %.200q, want %d containing %q", path, a.Code, a.Body, code, contains)
		}
	}

	if !cfg.Debug.Pprof {
		t.Fatal("debug.pprof is off by default; docs/configuration.md says on")
	}
	guarded := srv.another(t, authn)
	f(guarded, "/debug/pprof/", "", 401, "missing or invalid credentials")
	f(guarded, "/debug/pprof/heap?debug=1", "wrong", 401, "missing or invalid credentials")
	f(guarded, "/debug/pprof/", "pprof-token", 200, "goroutine")
	f(guarded, "/debug/pprof/goroutine?debug=1", "pprof-token", 200, "goroutine profile: total")
	f(guarded, "/debug/pprof/heap?debug=1", "pprof-token", 200, "heap profile:")
	f(guarded, "/debug/pprof/cmdline", "pprof-token", 200, "")
	if a := get(guarded, "/debug/pprof/profile?seconds=1", "pprof-token"); a.Code != 200 || len(a.Body) == 0 {
		t.Errorf("CPU profile: %d, %d bytes", a.Code, len(a.Body))
	}

	cfg.Debug.Pprof = false
	off := srv.another(t, nil)
	f(off, "/debug/pprof/", "", 404, "")
	f(off, "/debug/pprof/heap", "", 404, "")
}
