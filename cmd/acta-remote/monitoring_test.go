package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// The dashboard (monitoring/dashboard.json) and the alerting rules
// (monitoring/alerts.yml) must only use metrics the server exports, and
// every metric the server exports must have a help text and be in
// docs/metrics.md.

const (
	dashboardFile = "../../monitoring/dashboard.json"
	alertsFile    = "../../monitoring/alerts.yml"
	metricsDoc    = "../../docs/metrics.md"
)

// exportedFamilies runs the server's router over a real store, sends it a
// write of every kind, a remote read and a PromQL query, so every metric
// vector has a child, and returns what /metrics exports.
func exportedFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	dir := t.TempDir()
	cfg := badInputConfig(dir)
	srv := startRouter(t, cfg)
	defer srv.stop()
	store := srv.store
	now := time.Now().UnixMilli()
	ts := prompb.TimeSeries{Labels: testkit.Labels("__name__", "mon_test"), Samples: []prompb.Sample{{Timestamp: now, Value: 1}},
		Exemplars: []prompb.Exemplar{{Labels: testkit.Labels("trace_id", "t"), Value: 1, Timestamp: now}}}
	if code, _ := bpPost(http.DefaultClient, srv.URL, testkit.RW1(ts)); code != http.StatusNoContent {
		t.Fatalf("write: %d", code)
	}
	if code, _ := bpPost(http.DefaultClient, srv.URL, testkit.RW1(tsOf("job", "no_name"))); code != http.StatusBadRequest {
		t.Fatalf("bad write: %d", code)
	}
	if err := store.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Maintain(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		body := rr([]*prompb.Query{rq(math.MinInt64, math.MaxInt64, lm(prompb.LabelMatcher_EQ, "__name__", "mon_test"))}, typ)
		testkit.Post(t, srv.URL+"/api/v1/read", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, body)
	}
	if resp, err := http.Get(srv.URL + "/api/v1/query?" + url.Values{"query": {"mon_test"}}.Encode()); err == nil {
		resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// queriesOf returns the PromQL of every dashboard target and alerting
// rule, with Grafana's variables filled in.
func queriesOf(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	fill := strings.NewReplacer("$__rate_interval", "5m", "$job", ".+")
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = fill.Replace(tg.Expr)
		}
	}
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", alertsFile, errs)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	return out
}

func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	fams := exportedFamilies(t)
	qs := queriesOf(t)
	if len(qs) < 20 {
		t.Fatalf("%d queries in the dashboard and rules, expected more", len(qs))
	}
	p := parser.NewParser(parser.Options{})
	for where, q := range qs {
		expr, err := p.ParseExpr(q)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, q, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			if name == "up" { // made by the scrape, not the server
				return nil
			}
			if fams[name] != nil {
				return nil
			}
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				if base, ok := strings.CutSuffix(name, suf); ok && fams[base] != nil &&
					(fams[base].GetType() == dto.MetricType_HISTOGRAM || fams[base].GetType() == dto.MetricType_SUMMARY) {
					return nil
				}
			}
			t.Errorf("%s uses %s, which the server does not export", where, name)
			return nil
		})
	}
}

func TestEveryMetricHasHelpAndIsDocumented(t *testing.T) {
	fams := exportedFamilies(t)
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, f := range fams {
		if strings.TrimSpace(f.GetHelp()) == "" {
			t.Errorf("%s has no help text", name)
		}
		if strings.HasPrefix(name, "acta_") {
			names = append(names, name)
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s is not in %s", name, filepath.Base(metricsDoc))
			}
		}
	}
	sort.Strings(names)
	if len(names) < 40 || !slices.Contains(names, "acta_store_wal_errors_total") {
		t.Errorf("only %d acta_ metrics exported: %v", len(names), names)
	}
	if os.Getenv("ACTA_LIST_METRICS") != "" {
		for _, n := range names {
			var ls []string
			if ms := fams[n].GetMetric(); len(ms) > 0 {
				for _, l := range ms[0].GetLabel() {
					ls = append(ls, l.GetName())
				}
			}
			fmt.Printf("%s\t%s\t%s\t%s\n", n, fams[n].GetType(), strings.Join(ls, ","), fams[n].GetHelp())
		}
	}
}
