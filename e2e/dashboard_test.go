package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// The dashboard's variables as Grafana would fill them for this run: the
// job Prometheus scrapes acta-remote under, and a rate window of a few
// scrape intervals (Grafana's $__rate_interval with a 1 s scrape and a
// 5 s step).
const (
	dashboardJob          = "acta-remote"
	dashboardRateInterval = "20s"
)

// panelQuery is one target of monitoring/dashboard.json.
type panelQuery struct {
	panel, legend, expr string
}

func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	raw, err := os.ReadFile("../monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []panelQuery
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			e := strings.ReplaceAll(tg.Expr, "$__rate_interval", dashboardRateInterval)
			e = strings.ReplaceAll(e, `=~"$job"`, `=~"`+dashboardJob+`"`)
			out = append(out, panelQuery{p.Title, tg.LegendFormat, e})
		}
	}
	return out
}

// TestDashboardOnARealRun renders the dashboard against a real run: a
// Prometheus scrapes acta-remote's /metrics every second and remote-writes
// everything it scrapes (its own metrics too) to acta-remote, while this
// test asks acta-remote PromQL and remote-read queries. Then every panel's
// query is evaluated through acta-remote's own query API (acta-remote as
// Grafana's data source, holding its own metrics), as Grafana would at one
// moment. Every query must succeed, and the panels this load must move
// must show a positive value. ACTA_DASHBOARD_MD=file writes the values as
// a Markdown table (the closing note's "screenshot").
func TestDashboardOnARealRun(t *testing.T) {
	tmp := t.TempDir()
	bin := buildActaRemote(t, tmp, false)
	addr, promAddr := freeAddr(t), freeAddr(t)
	cfgPath := filepath.Join(tmp, "acta.yml")
	cfg := fmt.Sprintf(`listen: %s
data_dir: %s
storage:
  max_head_age: 5s
rotation:
  interval: 5s
otlp:
  grpc:
    enabled: false
`, addr, filepath.Join(tmp, "data"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	acta := startProcess(t, t, "acta-remote", filepath.Join(tmp, "acta-remote.log"), bin, "serve", "--config", cfgPath)
	waitReady(t, acta, "http://"+addr+"/-/ready", time.Minute)

	promCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: %s
    static_configs: [{targets: [%q]}]
  - job_name: prometheus
    static_configs: [{targets: [%q]}]
remote_write:
  - url: http://%s/api/v1/write
    queue_config: {batch_send_deadline: 1s}
`, dashboardJob, addr, promAddr, addr)
	promCfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(promCfgPath, []byte(promCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, t, "prometheus", filepath.Join(tmp, "prometheus.log"), prometheusBinary(t),
		"--config.file="+promCfgPath, "--storage.tsdb.path="+filepath.Join(tmp, "tsdb"), "--web.listen-address="+promAddr)
	waitReady(t, prom, "http://"+promAddr+"/-/ready", 2*time.Minute)

	// Query load for the query panels: PromQL and remote read, once a second.
	api := promAPI{name: "acta-remote", base: "http://" + addr}
	ctx := context.Background()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := api.query(ctx, `sum(rate(prometheus_http_requests_total[30s]))`, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := remoteReadSamples(ctx, api.base, time.Now().Add(-time.Minute).UnixMilli(), time.Now().UnixMilli(),
			prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "up"}); err != nil {
			t.Fatal(err)
		}
		hold(t, time.Now().Add(time.Second), acta, prom)
	}

	at := time.Now()
	var md strings.Builder
	md.WriteString("| Panel | Query | Value at " + at.UTC().Format(time.TimeOnly) + " UTC |\n|---|---|---|\n")
	values := map[string][]float64{}
	for _, q := range dashboardQueries(t) {
		res, err := api.query(ctx, q.expr, at)
		if err != nil {
			t.Errorf("panel %q: %s: %v", q.panel, q.expr, err)
			continue
		}
		var cells []string
		for _, s := range res {
			for _, smp := range s.samples {
				v, _ := strconv.ParseFloat(smp.v, 64)
				values[q.expr] = append(values[q.expr], v)
				ls := ""
				if len(s.labels) > 0 {
					ls = labelsString(s.labels) + " "
				}
				cells = append(cells, ls+humanValue(v))
			}
		}
		sort.Strings(cells)
		if len(cells) == 0 {
			cells = []string{"(no data)"}
		}
		fmt.Fprintf(&md, "| %s | `%s` | %s |\n", q.panel, strings.ReplaceAll(q.expr, "|", `\|`), strings.Join(cells, "<br>"))
	}
	t.Logf("dashboard at %s:\n%s", at.UTC().Format(time.RFC3339), md.String())
	if p := os.Getenv("ACTA_DASHBOARD_MD"); p != "" {
		if err := os.WriteFile(p, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// What this run must show: samples coming in, requests and their
	// latency, WAL fsyncs, a head, flushes, memory, disk, series, queries.
	positive := []string{
		"acta_store_samples_appended_total", "acta_http_requests_total", "acta_http_request_duration_seconds_bucket",
		"acta_store_wal_fsync_duration_seconds_bucket", "acta_store_wal_bytes", "acta_store_head_series",
		"acta_store_head_bytes", "process_resident_memory_bytes", "acta_store_flush_duration_seconds_bucket",
		"acta_store_filesystem_free_bytes", "acta_store_series{", "acta_remote_read_duration_seconds_count",
		"acta_rotation_last_run_timestamp_seconds",
	}
	for _, m := range positive {
		found := false
		for expr, vs := range values {
			if !strings.Contains(expr, m) {
				continue
			}
			found = true
			if len(vs) == 0 || !(slicesMax(vs) > 0) {
				t.Errorf("%s: %v, want a positive value on this run", expr, vs)
			}
		}
		if !found {
			t.Errorf("no panel query uses %s", m)
		}
	}
	if err := prom.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("prometheus: %v", err)
	}
	if err := acta.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("acta-remote: %v", err)
	}
}

func slicesMax(vs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range vs {
		m = math.Max(m, v)
	}
	return m
}

// humanValue prints a panel value the way a reader scans it.
func humanValue(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 1<<30:
		return fmt.Sprintf("%.2f Gi", v/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.2f Mi", v/(1<<20))
	case a >= 1e4:
		return fmt.Sprintf("%.0f", v)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}
