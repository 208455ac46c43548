package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const unitPath = "../deploy/systemd/acta-remote.service"

// unitService returns the [Service] keys of a systemd unit file (a key set
// twice keeps its last value).
func unitService(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is not key=value", path, line)
			}
			keys[k] = v
		}
	}
	return keys
}

// underRoot maps the absolute paths of a command line into root: the test
// installs files where the operations doc says, below a scratch root.
func underRoot(root, cmdline string) []string {
	f := strings.Fields(cmdline)
	for i, a := range f {
		if strings.HasPrefix(a, "/") {
			f[i] = filepath.Join(root, a)
		}
	}
	return f
}

// A new user's path through README.md and docs/operations.md: install the
// binary and `acta-remote config default` where the unit file expects them,
// run the unit's ExecStartPre and ExecStart lines as written (paths below a
// scratch root; systemd does not run in this container), point the README's
// Prometheus remote_write snippet at it, see Prometheus's samples arrive
// through the query API, stop it as systemd does (KillSignal within
// TimeoutStopSec, exit 0), start it again and find every sample. Where
// systemd-analyze exists, the unit file must verify without a warning.
func TestSystemdUnitWithPrometheus(t *testing.T) {
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ops, unit) {
		t.Fatalf("docs/operations.md does not hold %s verbatim: the doc a user copies must be the unit tested", unitPath)
	}
	svc := unitService(t, unitPath)
	for _, k := range []string{"ExecStartPre", "ExecStart", "WorkingDirectory", "KillSignal", "TimeoutStopSec", "User"} {
		if svc[k] == "" {
			t.Fatalf("unit has no %s", k)
		}
	}
	if svc["KillSignal"] != "SIGTERM" {
		t.Fatalf("KillSignal=%s: the server flushes on SIGTERM", svc["KillSignal"])
	}
	stopTimeout, err := time.ParseDuration(strings.Replace(svc["TimeoutStopSec"], "min", "m", 1))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v", svc["TimeoutStopSec"], err)
	}

	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	start := underRoot(root, svc["ExecStart"])
	bin, cfgPath := start[0], ""
	for i, a := range start {
		if a == "--config" && i+1 < len(start) {
			cfgPath = start[i+1]
		}
	}
	if cfgPath == "" {
		t.Fatalf("ExecStart %q names no --config", svc["ExecStart"])
	}
	workDir := filepath.Join(root, svc["WorkingDirectory"])
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(cfgPath), workDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	built := buildActaRemote(t, tmp, false)
	if err := os.Rename(built, bin); err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, root, unit)

	// The operator's config: the printed default with the listen addresses
	// this test can have (9201 and 4317 may be taken on a shared machine).
	def, err := exec.Command(bin, "config", "default").Output()
	if err != nil {
		t.Fatal(err)
	}
	addr, grpcAddr := freeAddr(t), freeAddr(t)
	cfg := strings.Replace(string(def), "listen: 127.0.0.1:9201", "listen: "+addr, 1)
	cfg = strings.Replace(cfg, "listen_address: 127.0.0.1:4317", "listen_address: "+grpcAddr, 1)
	if cfg == string(def) || !strings.Contains(cfg, addr) || !strings.Contains(cfg, grpcAddr) {
		t.Fatal("default config's listen addresses not found")
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	run := func(name string) *process {
		pre := underRoot(root, svc["ExecStartPre"])
		c := exec.Command(pre[0], pre[1:]...)
		c.Dir = workDir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("ExecStartPre: %v\n%s", err, out)
		}
		p := startProcessIn(t, t, name, filepath.Join(tmp, "acta-remote.log"), workDir, start[0], start[1:]...)
		waitReady(t, p, "http://"+addr+"/-/ready", time.Minute)
		return p
	}
	svcProc := run("acta-remote.service")

	// The README's Prometheus snippet, pointed at this server; Prometheus
	// scrapes itself every second.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile("(?s)```yaml\n(remote_write:.*?)```").FindSubmatch(readme)
	if snippet == nil {
		t.Fatal("README.md has no ```yaml block starting with remote_write:")
	}
	promAddr := freeAddr(t)
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: prometheus\n    static_configs: [{targets: [%q]}]\n%s",
		promAddr, strings.ReplaceAll(string(snippet[1]), "127.0.0.1:9201", addr))
	promCfgPath := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(promCfgPath, []byte(promCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, t, "prometheus", filepath.Join(tmp, "prometheus.log"), prometheusBinary(t),
		"--config.file="+promCfgPath, "--storage.tsdb.path="+filepath.Join(tmp, "tsdb"), "--web.listen-address="+promAddr)
	waitReady(t, prom, "http://"+promAddr+"/-/ready", 2*time.Minute)

	// Samples arrive: up{job="prometheus"} has at least 5 samples here.
	q := `count_over_time(up{job="prometheus"}[10m])`
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := instantValue(t, addr, q, time.Now())
		if n, err := strconv.Atoi(got); err == nil && n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q after 90 s: Prometheus's samples did not arrive", q, got)
		}
		time.Sleep(time.Second)
	}
	if err := prom.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	// Asked at one moment before and after the restart: the samples of up
	// and the number of series.
	at := time.Now()
	series := `count({__name__=~".+"})`
	before, beforeSeries := instantValue(t, addr, q, at), instantValue(t, addr, series, at)

	// systemctl stop: KillSignal, then up to TimeoutStopSec for exit 0.
	if err := svcProc.stop(syscall.SIGTERM, stopTimeout); err != nil {
		t.Fatalf("stop as systemd does: %v, want exit 0 within %s", err, stopTimeout)
	}
	if fi, err := os.Stat(filepath.Join(workDir, "data")); err != nil || !fi.IsDir() {
		t.Fatalf("no data directory in WorkingDirectory/data: %v", err)
	}
	svcProc = run("acta-remote.service (restarted)")
	if after := instantValue(t, addr, q, at); after != before {
		t.Errorf("after restart %s = %q, before %q", q, after, before)
	}
	if after := instantValue(t, addr, series, at); after != beforeSeries {
		t.Errorf("after restart %s = %q, before %q", series, after, beforeSeries)
	}
	t.Logf("%s = %s and %s = %s before and after a restart", q, before, series, beforeSeries)
	if err := svcProc.stop(syscall.SIGTERM, stopTimeout); err != nil {
		t.Fatal(err)
	}
}

// instantValue is the value of a one-series PromQL answer from the query
// API, "" for an empty one.
func instantValue(t *testing.T, addr, q string, at time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	form := url.Values{"query": {q}, "time": {fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000)}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1/query", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", q, resp.StatusCode, body)
	}
	m := regexp.MustCompile(`"value":\[[0-9.]+,"([^"]+)"\]`).FindSubmatch(body)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// verifyUnit runs systemd-analyze verify on the unit installed under root
// (with the system's own units beside it, for the targets it names): any
// line it prints is a mistake in the unit file.
func verifyUnit(t *testing.T, root string, unit []byte) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: unit file not verified")
		return
	}
	sysUnits := "/usr/lib/systemd/system"
	if _, err := os.Stat(filepath.Join(sysUnits, "multi-user.target")); err != nil {
		t.Logf("no %s/multi-user.target: unit file not verified", sysUnits)
		return
	}
	dst := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "acta-remote.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", sysUnits, filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", sysUnits, err, out)
	}
	out, err := exec.Command(sa, "verify", "--root="+root, "acta-remote.service").CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
