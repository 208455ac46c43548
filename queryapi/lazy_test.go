package queryapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/route"
)

// TestRouterBuiltOnFirstRequest: New builds nothing of Prometheus's API
// (its OpenAPI rendering took a core from the reads just after a start);
// the first request builds it once, requests meanwhile wait for it, and
// one whose client goes away while it waits gets 499.
func TestRouterBuiltOnFirstRequest(t *testing.T) {
	var builds atomic.Int32
	release := make(chan struct{})
	lr := &lazyRouter{built: make(chan struct{}), build: func() *route.Router {
		builds.Add(1)
		<-release
		r := route.New()
		r.Get("/x", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "built") })
		return r
	}}
	srv := httptest.NewServer(lr)
	defer srv.Close()
	time.Sleep(20 * time.Millisecond)
	if n := builds.Load(); n != 0 {
		t.Fatalf("%d builds before any request, want 0", n)
	}

	// A request canceled while the router is built answers 499.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	lr.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/x", nil))
	if rec.Code != 499 {
		t.Fatalf("canceled request during the build: %d %s, want 499", rec.Code, rec.Body)
	}

	var wg sync.WaitGroup
	bodies := make([]string, 4)
	for i := range bodies {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/x")
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i] = resp.Status + " " + string(b)
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	for i, b := range bodies {
		if b != "200 OK built" {
			t.Errorf("request %d: %q, want \"200 OK built\"", i, b)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
}
