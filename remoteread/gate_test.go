package remoteread

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
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

// With max_concurrent 1 a second read waits for the first to finish.
func TestReadConcurrencyLimit(t *testing.T) {
	bq := &blockingQuerier{release: make(chan struct{}), inner: openStore(t)}
	rl := readLimits
	rl.MaxConcurrent = 1
	srv := httptest.NewServer(New(bq, rl, slog.New(slog.DiscardHandler), nil))
	defer srv.Close()
	body := readReq(nil, q(0, 1, m(prompb.LabelMatcher_EQ, "__name__", "x")))
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
