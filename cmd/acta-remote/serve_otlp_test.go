package main

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// TestServeOTLP checks the wiring: an OTLP/HTTP gauge sent to the binary
// comes back through Prometheus remote read with its exact value.
func TestServeOTLP(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "acta.yaml")
	if err := os.WriteFile(cfgFile, []byte(e2eConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "--config", cfgFile, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"))

	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "e2e")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("otlp_e2e_gauge")
	ts := time.UnixMilli(1_750_000_123_000)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(ts))
	dp.SetDoubleValue(42.125)
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/metrics", "/api/v1/otlp/v1/metrics"} {
		if a := testkit.Post(t, p.url+path, map[string]string{"Content-Type": "application/x-protobuf"}, body); a.Code != http.StatusOK {
			t.Fatalf("OTLP export to %s: %d %q", path, a.Code, a.Body)
		}
	}
	for _, streamed := range []bool{false, true} {
		got := read(t, p.url, "otlp_e2e_gauge", streamed)
		if len(got) != 1 {
			t.Fatalf("streamed=%v: %d series %v, want 1", streamed, len(got), got)
		}
		for k, ss := range got {
			// Sent twice (two paths): the exact duplicate is stored once.
			if len(ss) != 1 || ss[0].T != ts.UnixMilli() || math.Float64bits(ss[0].V) != math.Float64bits(42.125) {
				t.Errorf("streamed=%v: %s = %v, want one sample (%d, 42.125)", streamed, k, ss, ts.UnixMilli())
			}
		}
	}
	p.stop(t, syscall.SIGTERM)
}
