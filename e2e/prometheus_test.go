package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// Remote-write queue names in testdata/prometheus-writer.yml and the rw label
// value each one adds to what it sends.
var rwQueues = []struct{ name, rw string }{
	{"acta-rw1", "1.0"},
	{"acta-rw2", "2.0"},
}

// check is one query asked of both Prometheus servers. expr builds the PromQL
// from a selector function, so that the reader side can add rw="..." to every
// selector while the writer side asks its own TSDB without it.
type check struct {
	name string
	expr func(sel func(matchers ...string) string) string
	// raw: an instant query at the range end of a range selector covering the
	// whole run, which returns every stored sample untouched. Otherwise a range
	// query with a 1 s step, which goes through PromQL's evaluation.
	raw bool
}

var checks = []check{
	{name: "every raw sample of every series", raw: true,
		expr: func(sel func(...string) string) string { return sel(`__name__=~".+"`) }},
	{name: "up",
		expr: func(sel func(...string) string) string { return sel(`__name__="up"`) }},
	{name: "prometheus_tsdb_head_series",
		expr: func(sel func(...string) string) string { return sel(`__name__="prometheus_tsdb_head_series"`) }},
	{name: "rate(prometheus_http_requests_total[1m])",
		expr: func(sel func(...string) string) string {
			return "rate(" + sel(`__name__="prometheus_http_requests_total"`) + "[1m])"
		}},
	{name: "count({__name__=~\".+\"})",
		expr: func(sel func(...string) string) string { return "count(" + sel(`__name__=~".+"`) + ")" }},
	{name: "histogram_quantile over prometheus_http_request_duration_seconds",
		expr: func(sel func(...string) string) string {
			return "histogram_quantile(0.9, sum by (le, handler) (rate(" +
				sel(`__name__="prometheus_http_request_duration_seconds_bucket"`) + "[30s])))"
		}},
}

// selector returns a selector function that adds extra matchers to each one.
func selector(extra ...string) func(...string) string {
	return func(ms ...string) string {
		return "{" + strings.Join(append(append([]string{}, ms...), extra...), ",") + "}"
	}
}

// answers are one Prometheus's results for checks over [start, end].
type answers struct {
	start, end time.Time
	results    [][]series // indexed like checks
}

func ask(ctx context.Context, api promAPI, start, end time.Time, sel func(...string) string) (answers, error) {
	a := answers{start: start, end: end}
	for _, c := range checks {
		q := c.expr(sel)
		var (
			res []series
			err error
		)
		if c.raw {
			// One minute of slack before the first scrape; nothing is there.
			window := end.Sub(start) + time.Minute
			res, err = api.query(ctx, fmt.Sprintf("%s[%dms]", q, window.Milliseconds()), end)
		} else {
			res, err = api.queryRange(ctx, q, start, end, time.Second)
		}
		if err != nil {
			return a, err
		}
		a.results = append(a.results, res)
	}
	return a, nil
}

// backend is the remote-write receiver and remote-read server under test.
type backend struct {
	name    string
	addr    string
	dataDir string
	logPath string
	bin     string
	args    []string
	// validate checks the files written, once the backend has stopped.
	validate func(t *testing.T)
	proc     *process
	owner    *testing.T // the test the backend's processes live as long as
}

func (b *backend) start(t *testing.T) {
	t.Helper()
	b.proc = startProcess(t, b.owner, b.name, b.logPath, b.bin, b.args...)
	waitReady(t, b.proc, "http://"+b.addr+"/-/ready", 2*time.Minute)
}

// TestPrometheusRemoteWriteAndRead runs real Prometheus servers against
// acta-remote: Prometheus #1 scrapes itself every second and remote-writes
// everything twice (Remote-Write 1.0 and 2.0, told apart by an rw label);
// Prometheus #2 has no data of its own and reads acta-remote through
// remote_read. The same PromQL asked of both must give the same series and the
// same sample timestamps and float bits: after 30+ s of writing, after a
// SIGKILL of acta-remote while Prometheus keeps writing, and after a graceful
// restart. Finally every .acta file must pass `acta-remote validate --level full`.
func TestPrometheusRemoteWriteAndRead(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	ctx := context.Background()
	tmp := t.TempDir()
	promBin := prometheusBinary(t)

	addrs := distinctAddrs(t, 3)
	be := newBackend(t, tmp, addrs[0])
	be.owner = t
	prom1 := promAPI{name: "prometheus#1 (own TSDB)", base: "http://" + addrs[1]}
	prom2 := promAPI{name: "prometheus#2 (remote read from " + be.name + ")", base: "http://" + addrs[2]}

	vars := map[string]string{"PrometheusAddr": addrs[1], "ActaRemoteAddr": be.addr}
	writerCfg := renderConfig(t, "prometheus-writer.yml", filepath.Join(tmp, "prometheus-writer.yml"), vars)
	readerCfg := renderConfig(t, "prometheus-reader.yml", filepath.Join(tmp, "prometheus-reader.yml"), vars)

	be.start(t)
	startPrometheus := func(name, cfg, addr string) *process {
		p := startProcess(t, t, name, filepath.Join(tmp, name+".log"), promBin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(tmp, name+"-tsdb"),
			"--web.listen-address="+addr,
			// Bounds how long a stopping Prometheus keeps trying to send.
			"--storage.remote.flush-deadline=30s",
		)
		waitReady(t, p, "http://"+addr+"/-/ready", 2*time.Minute)
		return p
	}
	p2 := startPrometheus("prometheus2", readerCfg, addrs[2])
	// Whole seconds, so the 1 s step of range queries lands on the same grid.
	start := time.Now().Truncate(time.Second)
	p1 := startPrometheus("prometheus1", writerCfg, addrs[1])
	t.Logf("%s on %s (data %s), prometheus#1 on %s, prometheus#2 on %s", be.name, be.addr, be.dataDir, addrs[1], addrs[2])

	// checkpoint waits until both queues of #1 have sent past end, then asks
	// #1 for the expected answers, and compares #2's answers for each rw label,
	// retrying for up to patience because remote write is asynchronous.
	checkpoint := func(t *testing.T, end time.Time, patience time.Duration) answers {
		t.Helper()
		waitSent(t, prom1.base, end, 90*time.Second)
		want, err := ask(ctx, prom1, start, end, selector())
		if err != nil {
			t.Fatal(err)
		}
		// The writer's own answers must not be empty, or the comparison proves nothing.
		for i, c := range checks {
			if len(want.results[i]) == 0 {
				t.Fatalf("prometheus#1 has no result for %q over [%s, %s]", c.name, start, end)
			}
		}
		raw := want.results[0]
		t.Logf("range [%s, %s]: prometheus#1 has %d series, %d raw samples", start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), len(raw), countSamples(raw))
		compareEventually(t, prom2, want, patience)
		return want
	}

	t.Run("write 30s then read", func(t *testing.T) {
		hold(t, start.Add(33*time.Second), be.proc, p1, p2)
		// A few seconds behind now, so every scrape up to end is in the TSDB.
		checkpoint(t, time.Now().Add(-3*time.Second).Truncate(time.Second), 60*time.Second)
		checkNoFailedSends(t, prom1.base)
	})

	t.Run("SIGKILL while Prometheus writes, restart", func(t *testing.T) {
		if err := be.proc.stop(syscall.SIGKILL, 10*time.Second); err == nil {
			t.Fatalf("%s exited 0 on SIGKILL?", be.name)
		}
		// Prometheus gets connection errors now and retries (they are recoverable).
		hold(t, time.Now().Add(2*time.Second), p1, p2)
		be.start(t)
		hold(t, time.Now().Add(12*time.Second), be.proc, p1, p2)
		// Backoff after the failed sends is at most max_backoff (5 s).
		checkpoint(t, time.Now().Add(-3*time.Second).Truncate(time.Second), 60*time.Second)
		checkNoFailedSends(t, prom1.base)
	})

	t.Run("graceful stop, restart, read again", func(t *testing.T) {
		want := checkpoint(t, time.Now().Add(-2*time.Second).Truncate(time.Second), 60*time.Second)
		checkNoFailedSends(t, prom1.base)
		logBackendCounters(t, "http://"+be.addr)
		// Prometheus first: stopping it flushes its queues to the backend, and
		// the other way round it would wait out its flush deadline on exit.
		if err := p1.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("prometheus#1 on SIGTERM: %v", err)
		}
		if err := be.proc.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v, want exit 0", be.name, err)
		}
		be.start(t)
		compareEventually(t, prom2, want, 20*time.Second)
		// Everything the backend holds, for the disk-use figure below.
		stored := 0
		window := time.Since(start) + time.Minute
		if res, err := prom2.query(ctx, fmt.Sprintf(`{__name__=~".+"}[%dms]`, window.Milliseconds()), time.Now()); err != nil {
			t.Error(err)
		} else {
			stored = countSamples(res)
		}
		if err := p2.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("prometheus#2 on SIGTERM: %v", err)
		}
		if err := be.proc.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v, want exit 0", be.name, err)
		}
		checkLog(t, be.logPath)
		if be.validate != nil {
			be.validate(t)
		}
		logDiskUse(t, be.dataDir, stored)
	})
}

// newBackend sets up acta-remote, or with ACTA_E2E_BACKEND=prometheus a third
// Prometheus as a reference receiver, which checks the harness itself.
func newBackend(t *testing.T, tmp, addr string) *backend {
	t.Helper()
	dataDir := filepath.Join(tmp, "backend-data")
	switch kind := os.Getenv("ACTA_E2E_BACKEND"); kind {
	case "", "acta-remote":
		bin := buildActaRemote(t, tmp, false)
		serveBin := bin
		if os.Getenv("ACTA_E2E_RACE") == "1" {
			// Real Prometheus traffic is concurrent in ways unit tests rarely
			// are. Only the server gets -race: validating ~1,700 files with a
			// race-built binary took 15 min instead of 10 s.
			serveBin = buildActaRemote(t, tmp, true)
		}
		b := &backend{
			name: "acta-remote", addr: addr, dataDir: dataDir, bin: serveBin,
			logPath: filepath.Join(tmp, "acta-remote.log"),
			args:    []string{"serve", "--listen", addr, "--data-dir", dataDir},
		}
		b.validate = func(t *testing.T) { validateActaFiles(t, bin, dataDir) }
		return b
	case "prometheus":
		cfg := filepath.Join(tmp, "receiver.yml")
		if err := os.WriteFile(cfg, []byte("global: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return &backend{
			name: "prometheus-receiver", addr: addr, dataDir: dataDir, bin: prometheusBinary(t),
			logPath: filepath.Join(tmp, "prometheus-receiver.log"),
			args: []string{
				"--config.file=" + cfg, "--storage.tsdb.path=" + dataDir, "--web.listen-address=" + addr,
				"--web.enable-remote-write-receiver",
				"--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest",
				"--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request",
			},
		}
	default:
		t.Fatalf("ACTA_E2E_BACKEND=%q: want acta-remote or prometheus", kind)
		return nil
	}
}

// renderConfig fills testdata/name with vars and writes it to dst.
func renderConfig(t *testing.T, name, dst string, vars map[string]string) string {
	t.Helper()
	tmpl, err := template.New(name).Option("missingkey=error").ParseFiles(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, vars); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func distinctAddrs(t *testing.T, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		if a := freeAddr(t); !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// hold waits until deadline, failing early if any of the processes exits.
func hold(t *testing.T, deadline time.Time, procs ...*process) {
	t.Helper()
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if !p.running() {
				t.Fatalf("%s exited unexpectedly (%v); log %s:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 40))
			}
		}
		time.Sleep(min(200*time.Millisecond, time.Until(deadline)))
	}
}

// waitSent waits until every remote-write queue of the Prometheus at base has
// successfully sent a sample newer than end. (The gauge is in whole seconds.)
func waitSent(t *testing.T, base string, end time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		behind := ""
		for _, q := range rwQueues {
			v, err := scrapeMetric(context.Background(), base, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds", `remote_name="`+q.name+`"`)
			switch {
			case err != nil:
				behind += fmt.Sprintf(" %s: %v;", q.name, err)
			case len(v) != 1:
				behind += fmt.Sprintf(" %s: %d highest-sent gauges;", q.name, len(v))
			case int64(v[0]) <= end.Unix():
				behind += fmt.Sprintf(" %s sent up to %s;", q.name, time.Unix(int64(v[0]), 0).UTC().Format(time.TimeOnly))
			}
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			failed := describeSends(base)
			t.Fatalf("remote write has not reached %s within %s:%s\n%s", end.UTC().Format(time.TimeOnly), timeout, behind, failed)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// describeSends summarises prometheus#1's remote-write counters for a failure message.
func describeSends(base string) string {
	var b strings.Builder
	for _, m := range []string{"samples_total", "samples_failed_total", "samples_retried_total", "samples_dropped_total", "samples_pending", "metadata_failed_total"} {
		for _, q := range rwQueues {
			v, err := scrapeMetric(context.Background(), base, "prometheus_remote_storage_"+m, `remote_name="`+q.name+`"`)
			fmt.Fprintf(&b, "  prometheus_remote_storage_%s{remote_name=%q} = %v %v\n", m, q.name, v, errOrEmpty(err))
		}
	}
	return b.String()
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkNoFailedSends asserts Prometheus dropped nothing as unsendable: a
// non-recoverable answer (4xx, or a 2.0 answer without the written-count
// headers) would lose data silently on the writer's side.
func checkNoFailedSends(t *testing.T, base string) {
	t.Helper()
	for _, m := range []string{"samples_failed_total", "metadata_failed_total"} {
		for _, q := range rwQueues {
			v, err := scrapeMetric(context.Background(), base, "prometheus_remote_storage_"+m, `remote_name="`+q.name+`"`)
			if err != nil {
				t.Errorf("cannot read %s of %s: %v", m, q.name, err)
				continue
			}
			// A 2.0 queue sends metadata inside the write request and has no
			// metadata counters of its own.
			if len(v) == 0 && m == "metadata_failed_total" {
				continue
			}
			if len(v) != 1 || v[0] != 0 {
				t.Errorf("prometheus_remote_storage_%s{remote_name=%q} = %v, want [0]\n%s", m, q.name, v, describeSends(base))
			}
		}
	}
}

// compareEventually asks prom2 the checks for each rw label until its answers
// equal want or patience runs out, then reports the last differences.
func compareEventually(t *testing.T, prom2 promAPI, want answers, patience time.Duration) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for attempt := 1; ; attempt++ {
		problems := compareOnce(prom2, want)
		if len(problems) == 0 {
			if attempt > 1 {
				t.Logf("prometheus#2 agreed with prometheus#1 after %d attempts", attempt)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("prometheus#2 (remote read) disagrees with prometheus#1 over [%s, %s] after %d attempts in %s:\n%s",
				want.start.UTC().Format(time.TimeOnly), want.end.UTC().Format(time.TimeOnly), attempt, patience, strings.Join(problems, "\n"))
			return
		}
		time.Sleep(2 * time.Second)
	}
}

func compareOnce(prom2 promAPI, want answers) []string {
	var problems []string
	for _, q := range rwQueues {
		got, err := ask(context.Background(), prom2, want.start, want.end, selector(`rw="`+q.rw+`"`))
		if err != nil {
			problems = append(problems, fmt.Sprintf("rw=%s: %v", q.rw, err))
			continue
		}
		for i, c := range checks {
			for _, d := range diffSeries(want.results[i], got.results[i], "rw", q.rw, 5) {
				problems = append(problems, fmt.Sprintf("rw=%s %s: %s", q.rw, c.name, d))
			}
		}
	}
	return problems
}

// validateActaFiles runs `acta-remote validate --level full` on every .acta
// file under dataDir and requires exit 0 from each.
func validateActaFiles(t *testing.T, bin, dataDir string) {
	t.Helper()
	files := findFiles(t, dataDir, ".acta")
	if len(files) == 0 {
		t.Errorf("no .acta files under %s after a graceful shutdown", dataDir)
		return
	}
	// The validate command is written separately; until it exists, say so
	// instead of failing the end-to-end test on it.
	help, _ := exec.Command(bin, "help").CombinedOutput()
	if !strings.Contains(string(help), "validate") {
		t.Logf("acta-remote has no validate command yet; not validating %d .acta files", len(files))
		return
	}
	start := time.Now()
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
		next     = make(chan string)
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				out, err := exec.Command(bin, "validate", "--level", "full", f).CombinedOutput()
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v\n%s", f, err, out))
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	t.Logf("validated %d .acta files in %s", len(files), time.Since(start).Round(time.Millisecond))
	if len(failures) > 0 {
		t.Errorf("%d of %d .acta files fail `acta-remote validate --level full`; first ones:\n%s",
			len(failures), len(files), strings.Join(failures[:min(len(failures), 5)], "\n"))
	}
}

// logDiskUse reports what the data directory costs on disk: allocated blocks
// (what du counts), not apparent sizes.
func logDiskUse(t *testing.T, dir string, samples int) {
	t.Helper()
	var files int
	var allocated, apparent int64
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files++
		apparent += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		return nil
	})
	if samples > 0 {
		t.Logf("data dir: %d files, %d bytes allocated (%.1f B/sample), %d bytes apparent (%.1f B/sample) for %d samples",
			files, allocated, float64(allocated)/float64(samples), apparent, float64(apparent)/float64(samples), samples)
	}
}

// logBackendCounters logs the backend's own counters (names containing
// "remote_" and ending in _total), so a passing run also shows which protocol
// paths carried the data. Diagnostic only: the names are the server's business.
func logBackendCounters(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Logf("backend /metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		name, _, _ := strings.Cut(l, "{")
		name, _, _ = strings.Cut(name, " ")
		if strings.Contains(name, "remote_") && strings.HasSuffix(name, "_total") && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	t.Logf("backend counters since its last start:\n  %s", strings.Join(lines, "\n  "))
}

// checkLog fails on a panic or data race report in a log and shows the
// error-level lines, which are not failures by themselves (a client hanging
// up mid-request is logged, for one).
func checkLog(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	var errs []string
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "panic:"), strings.HasPrefix(l, "fatal error:"), strings.Contains(l, "WARNING: DATA RACE"):
			t.Errorf("%s: %s", path, l)
		case strings.Contains(l, "level=ERROR"), strings.Contains(l, `"level":"ERROR"`):
			errs = append(errs, l)
		}
	}
	if len(errs) > 0 {
		t.Logf("%d error lines in %s; first ones:\n%s", len(errs), path, strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
}
