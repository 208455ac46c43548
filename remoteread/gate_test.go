package remoteread

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// blockingQuerier counts Selects and holds each until released.
type blockingQuerier struct {
	calls   atomic.Int32
	release chan struct{}
	inner   actastore.Querier
}

func (b *blockingQuerier) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	b.calls.Add(1)
	<-b.release
	return b.inner.Select(ctx, mint, maxt, ms...)
}

// With max_concurrent 1 a second read waits for the first to finish
// (within max_queue_wait).
func TestReadConcurrencyLimit(t *testing.T) {
	bq := &blockingQuerier{release: make(chan struct{}), inner: openStore(t)}
	rl := readLimits
	rl.MaxConcurrent = 1
	rl.MaxQueueWait = 10 * time.Second
	srv := httptest.NewServer(New(bq, rl, slog.New(slog.DiscardHandler), nil))
	defer srv.Close()
	body := testkit.ReadRequest(nil, q(0, 1, m(prompb.LabelMatcher_EQ, "__name__", "x")))
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(srv.URL, "application/x-protobuf", bytes.NewReader(body))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for bq.calls.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // give the second request time to (wrongly) get in
	if n := bq.calls.Load(); n != 1 {
		t.Fatalf("%d queries running with max_concurrent 1", n)
	}
	close(bq.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("status %d, want 200", code)
		}
	}
	if n := bq.calls.Load(); n != 2 {
		t.Errorf("%d queries ran, want 2", n)
	}
}

// A read that finds every slot busy for max_queue_wait gets 429 with
// Retry-After and a message naming the limit, promptly.
func TestReadConcurrencyBusy(t *testing.T) {
	bq := &blockingQuerier{release: make(chan struct{}), inner: openStore(t)}
	rl := readLimits
	rl.MaxConcurrent = 1
	rl.MaxQueueWait = 50 * time.Millisecond
	srv := httptest.NewServer(New(bq, rl, slog.New(slog.DiscardHandler), nil))
	defer srv.Close()
	body := testkit.ReadRequest(nil, q(0, 1, m(prompb.LabelMatcher_EQ, "__name__", "x")))
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.URL, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for bq.calls.Load() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	resp, err := http.Post(srv.URL, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(msg), "all 1 request slots stayed busy for 50ms (config remote_read.max_concurrent)") {
		t.Errorf("busy read: %d Retry-After %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	if took > 2*time.Second {
		t.Errorf("busy read answered after %s, want about 50ms", took)
	}
	close(bq.release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("first read: %d", code)
	}
}
