package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPromtoolChecksMonitoring runs Prometheus's own promtool over the
// alerting rules shipped in monitoring/alerts.yml, and over every PromQL
// expression of the Grafana dashboard (monitoring/dashboard.json) wrapped as
// a recording rule, so both are valid to the tool operators load them with.
func TestPromtoolChecksMonitoring(t *testing.T) {
	promtool := promtoolBinary(t)
	check := func(file string) {
		t.Helper()
		out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool check rules %s: %v\n%s", file, err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	}
	check(filepath.Join("..", "monitoring", "alerts.yml"))

	raw, err := os.ReadFile(filepath.Join("..", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$__rate_interval", "5m", "$job", ".+")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n++
			q, _ := json.Marshal(fill.Replace(tg.Expr)) // a JSON string is a YAML string
			fmt.Fprintf(&b, "      - record: dashboard:expr_%d\n        expr: %s\n", n, q)
		}
	}
	if n < 20 {
		t.Fatalf("%d dashboard expressions", n)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	check(file)
}
