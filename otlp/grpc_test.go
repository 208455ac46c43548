package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/apistatus"
)

// startGRPC serves a Receiver's MetricsService on a loopback port and
// returns a client for it.
func startGRPC(t *testing.T, cfg Config, app actastore.Appender) pmetricotlp.GRPCClient {
	t.Helper()
	cfg.GRPC.ListenAddress = "127.0.0.1:0"
	rcv, err := New(cfg, app, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewGRPCServer(rcv)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := rcv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pmetricotlp.NewGRPCClient(conn)
}

func TestGRPCExport(t *testing.T) {
	rec := &recorder{}
	client := startGRPC(t, DefaultConfig(), rec)
	md := sampleMetrics()
	addExpHistogram(md.ResourceMetrics().At(0).ScopeMetrics().At(0), "native", pmetric.AggregationTemporalityCumulative, t0ns)

	// gzip, as the Collector's otlp exporter sends by default.
	resp, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md), grpc.UseCompressor(gzip.Name))
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.PartialSuccess()
	if ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
		t.Fatalf("partial success %d %q", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	diffLines(t, "stored", formatSeries(rec.series()), sampleWant)
	if len(rec.extras) != 1 || len(rec.extras[0].Histograms) != 1 {
		t.Fatalf("native histograms stored: %v", rec.extras)
	}
}

// TestGRPCDeltaConvert: deltas over gRPC are converted like those over
// HTTP (the processor rewrites the decoded request in place), exemplars
// kept.
func TestGRPCDeltaConvert(t *testing.T) {
	rec := &recorder{}
	cfg := DefaultConfig()
	cfg.DeltaTemporality = DeltaConvert
	client := startGRPC(t, cfg, rec)
	for i, v := range []int64{3, 2} {
		md := pmetric.NewMetrics()
		c := addDeltaMetric(newResource(md, svc), "c", "", pmetric.MetricTypeSum, true)
		dp := deltaSumPoint(c, dStart+uint64(i)*(dT1-dStart), dT1+uint64(i)*10e9, v, nil)
		addExemplar(dp.Exemplars(), dT1+uint64(i)*10e9-1e9, float64(v), byte(i))
		resp, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md), grpc.UseCompressor(gzip.Name))
		if err != nil || resp.PartialSuccess().RejectedDataPoints() != 0 {
			t.Fatalf("export %d: %v %q", i+1, err, resp.PartialSuccess().ErrorMessage())
		}
	}
	var got []string
	for _, l := range formatSeries(rec.series()) {
		if strings.HasPrefix(l, `{__name__="c_total"`) {
			got = append(got, l)
		}
	}
	diffLines(t, "stored", got, []string{
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000000123 3`,
		`{__name__="c_total", instance="pod-1", job="shop/checkout"} 1700000010123 5`,
	})
	var ex []string
	for _, s := range rec.extras {
		for _, e := range s.Exemplars {
			ex = append(ex, fmt.Sprintf("%s %d %v %s", s.Labels.Get("__name__"), e.T, e.Value, e.Labels.Get("trace_id")[:2]))
		}
	}
	diffLines(t, "exemplars", ex, []string{"c_total 1699999999123 3 00", "c_total 1700000009123 2 01"})
}

func TestGRPCOverloadedIsUnavailableWithRetryInfo(t *testing.T) {
	client := startGRPC(t, DefaultConfig(), &recorder{respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
		return actastore.AppendResult{}, actastore.ErrOverloaded
	}})
	_, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()))
	st := status.Convert(err)
	if st.Code() != codes.Unavailable {
		t.Fatalf("code %v (%v), want Unavailable", st.Code(), err)
	}
	var delay time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			delay = ri.RetryDelay.AsDuration()
		}
	}
	if delay != apistatus.RetryAfter {
		t.Fatalf("RetryInfo delay %v, want %v", delay, apistatus.RetryAfter)
	}
}

func TestGRPCStoreTimeoutIsRetryable(t *testing.T) {
	client := startGRPC(t, DefaultConfig(), &recorder{respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
		return actastore.AppendResult{}, context.DeadlineExceeded
	}})
	_, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()))
	if st := status.Convert(err); st.Code() != codes.Unavailable {
		t.Fatalf("a store timeout should be retryable, got %v", err)
	}
}

func TestGRPCInternalError(t *testing.T) {
	client := startGRPC(t, DefaultConfig(), &recorder{respond: func([]actastore.SeriesSamples) (actastore.AppendResult, error) {
		return actastore.AppendResult{}, errors.New("disk on fire")
	}})
	_, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()))
	if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "disk on fire") {
		t.Fatalf("got %v, want Internal naming the cause", err)
	}
}

func TestGRPCMessageOverCap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxDecompressedBytes = 64 << 10
	rec := &recorder{}
	client := startGRPC(t, cfg, rec)
	md := pmetric.NewMetrics()
	addGauge(newResource(md, nil), "g", "", t0ns, 1, map[string]any{"blob": strings.Repeat("z", 1<<20)})
	// Compressed it is tiny; the cap applies to the decompressed message.
	_, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md), grpc.UseCompressor(gzip.Name))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted {
		t.Fatalf("code %v (%v), want ResourceExhausted", st.Code(), err)
	}
	if len(rec.series()) != 0 {
		t.Fatal("an over-cap message was stored")
	}
}

func TestGRPCDisabled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GRPC.Enabled = false
	rcv, err := New(cfg, &recorder{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewGRPCServer(rcv)
	if srv != nil || err != nil {
		t.Fatalf("got %v, %v; want nil, nil", srv, err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	srv.Stop(context.Background())
	if srv.Addr() != nil {
		t.Fatal("Addr of a disabled server")
	}
}
