package remotewrite

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// blockingAppender holds every Append until release is closed.
type blockingAppender struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAppender) Commit(_ context.Context, batch *actastore.Batch) (actastore.Result, error) {
	b.entered <- struct{}{}
	<-b.release
	var res actastore.Result
	res.Samples.Written, _, _, _ = batch.Len()
	return res, nil
}

// With every slot taken, a write is answered 503 with Retry-After after
// max_queue_wait (not queued without bound), and the message names the
// config key; once slots free up writes succeed again.
func TestWriteBusySlots(t *testing.T) {
	for _, wait := range []time.Duration{0, 30 * time.Millisecond} {
		app := &blockingAppender{entered: make(chan struct{}, 8), release: make(chan struct{})}
		lim := testLimits
		lim.MaxConcurrent = 2
		lim.MaxQueueWait = wait
		srv := httptest.NewServer(New(app, lim, slog.New(slog.DiscardHandler), nil))
		body := testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", "busy"), Samples: []prompb.Sample{{Timestamp: 1, Value: 1}}})
		post := func() (int, string, string) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
			req.Header.Set("Content-Type", ctV1)
			req.Header.Set("Content-Encoding", "snappy")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			msg, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("Retry-After"), string(msg)
		}
		done := make(chan int, 2)
		for range 2 {
			go func() { c, _, _ := post(); done <- c }()
		}
		<-app.entered
		<-app.entered
		start := time.Now()
		code, ra, msg := post()
		took := time.Since(start)
		if code != http.StatusServiceUnavailable || ra != "1" || !strings.Contains(msg, "all 2 request slots") ||
			!strings.Contains(msg, "(config remote_write.max_concurrent)") {
			t.Errorf("wait %s: busy write: %d Retry-After %q %q", wait, code, ra, msg)
		}
		if took > wait+2*time.Second {
			t.Errorf("wait %s: 503 took %s", wait, took)
		}
		close(app.release)
		for range 2 {
			if c := <-done; c != http.StatusNoContent {
				t.Errorf("wait %s: held write: %d", wait, c)
			}
		}
		if c, _, msg := post(); c != http.StatusNoContent {
			t.Errorf("wait %s: write after the slots freed: %d %q", wait, c, msg)
		}
		srv.Close()
	}
}
