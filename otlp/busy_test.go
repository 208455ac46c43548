package otlp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/apistatus"
	"github.com/gorilla/mux"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// With every slot taken for longer than max_queue_wait, OTLP/HTTP answers
// 429 with Retry-After and gRPC UNAVAILABLE (retryable), promptly, and
// nothing reaches the store.
func TestBusySlots(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConcurrent = 1
	cfg.MaxQueueWait = 30 * time.Millisecond
	rec := &recorder{}
	rcv, err := New(cfg, rec, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	router := mux.NewRouter()
	rcv.RegisterRoutes(router)
	srv := httptest.NewServer(router)
	defer srv.Close()
	if err := rcv.acquire(context.Background()); err != nil { // the one slot, held
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.Post(srv.URL+"/v1/metrics", contentTypeProtobuf, bytes.NewReader(protoBody(t, sampleMetrics())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("busy HTTP export: %d Retry-After %q, want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("429 after %s", took)
	}
	g := &grpcMetrics{r: rcv}
	_, gerr := g.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()))
	if status.Code(gerr) != codes.Unavailable || !strings.Contains(gerr.Error(), "otlp.max_concurrent") {
		t.Errorf("busy gRPC export: %v, want UNAVAILABLE naming otlp.max_concurrent", gerr)
	}
	if !errors.Is(rcv.acquire(context.Background()), apistatus.ErrBusy) {
		t.Error("acquire with the slot held: want ErrBusy")
	}
	rcv.release()
	if n := len(rec.series()); n != 0 {
		t.Errorf("%d series stored by refused requests", n)
	}
	resp, err = http.Post(srv.URL+"/v1/metrics", contentTypeProtobuf, bytes.NewReader(protoBody(t, sampleMetrics())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("export after release: %d", resp.StatusCode)
	}
}
