package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
// acta-remote: Prometheus #1 scrapes itself and a target served by the test
// (special float values; taken away mid-run, so stale markers follow) every
// second and remote-writes everything twice (Remote-Write 1.0 and 2.0, told
// apart by an rw label);
// Prometheus #2 has no data of its own and reads acta-remote through
// remote_read. The same PromQL asked of both must give the same series and the
// same sample timestamps and float bits: after 30+ s of writing, after a
// SIGKILL of acta-remote while Prometheus keeps writing, and after a graceful
// restart. Finally every .acta file must pass `acta-remote validate --level full`.
func TestPrometheusRemoteWriteAndRead(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	r := startRig(t, "prometheus-writer.yml")

	t.Run("write 30s then read", func(t *testing.T) {
		r.hold(t, r.start.Add(15*time.Second))
		r.stopTarget() // its series get stale markers from the next scrape on
		r.hold(t, r.start.Add(33*time.Second))
		// A few seconds behind now, so every scrape up to end is in the TSDB.
		want := r.checkpoint(t, time.Now().Add(-3*time.Second).Truncate(time.Second), 60*time.Second)
		checkSpecialValues(t, want.results[0])
		checkNoFailedSends(t, r.prom1.base)
	})

	t.Run("SIGKILL while Prometheus writes, restart", func(t *testing.T) {
		if err := r.be.proc.stop(syscall.SIGKILL, 10*time.Second); err == nil {
			t.Fatalf("%s exited 0 on SIGKILL?", r.be.name)
		}
		// Prometheus gets connection errors now and retries (they are recoverable).
		hold(t, time.Now().Add(2*time.Second), r.p1, r.p2)
		r.be.start(t)
		r.hold(t, time.Now().Add(12*time.Second))
		// Backoff after the failed sends is at most max_backoff (5 s).
		r.checkpoint(t, time.Now().Add(-3*time.Second).Truncate(time.Second), 60*time.Second)
		checkNoFailedSends(t, r.prom1.base)
	})

	t.Run("graceful stop, restart, read again", func(t *testing.T) {
		want := r.checkpoint(t, time.Now().Add(-2*time.Second).Truncate(time.Second), 60*time.Second)
		checkNoFailedSends(t, r.prom1.base)
		logBackendCounters(t, "http://"+r.be.addr)
		r.stopWriterAndBackend(t)
		r.be.start(t)
		compareEventually(t, 20*time.Second, want.start, want.end, func() []string { return compareOnce(r.prom2, want) })
		// Everything the backend holds, for the disk-use figure below.
		stored := 0
		if res, err := r.prom2.query(context.Background(), r.rawAll(time.Now()), time.Now()); err != nil {
			t.Error(err)
		} else {
			stored = countSamples(res)
		}
		if err := r.p2.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("prometheus#2 on SIGTERM: %v", err)
		}
		if err := r.be.proc.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v, want exit 0", r.be.name, err)
		}
		checkLog(t, r.be.logPath)
		if r.be.validate != nil {
			r.be.validate(t)
		}
		logDiskUse(t, r.be.dataDir, stored)
	})
}

// TestPrometheusNativeHistograms has Prometheus scrape and remote-write native
// histograms (both protocols) next to floats. Whatever the backend does with
// histograms, it must accept the requests: the float series must arrive
// complete and exact, and Prometheus must count no failed float samples (a
// 4xx for a request would drop its floats too). Histogram series the backend
// does return must equal Prometheus's own; it may return none.
func TestPrometheusNativeHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	r := startRig(t, "prometheus-writer-native-histograms.yml")
	r.hold(t, r.start.Add(20*time.Second))
	end := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	waitSent(t, r.prom1.base, end, 90*time.Second)
	want, err := r.prom1.query(context.Background(), r.rawAll(end), end)
	if err != nil {
		t.Fatal(err)
	}
	floats, hists := splitHistogramSeries(want)
	t.Logf("prometheus#1 has %d float series and %d native histogram series", len(floats), len(hists))
	if len(hists) == 0 || len(floats) == 0 {
		t.Fatal("prometheus#1 scraped no native histograms or no floats: this test would prove nothing")
	}
	returned := map[string]int{}
	compareEventually(t, 60*time.Second, r.start, end, func() []string {
		var problems []string
		for _, q := range rwQueues {
			got, err := r.prom2.query(context.Background(), selector(`rw="`+q.rw+`"`)(`__name__=~".+"`)+r.rawRange(end), end)
			if err != nil {
				problems = append(problems, fmt.Sprintf("rw=%s: %v", q.rw, err))
				continue
			}
			gotFloats, gotHists := splitHistogramSeries(got)
			for _, d := range diffSeries(floats, gotFloats, "rw", q.rw, 5) {
				problems = append(problems, fmt.Sprintf("rw=%s float series: %s", q.rw, d))
			}
			// Only the histogram series the backend returned are compared.
			wantReturned := keepSeries(hists, gotHists, "rw")
			for _, d := range diffSeries(wantReturned, gotHists, "rw", q.rw, 5) {
				problems = append(problems, fmt.Sprintf("rw=%s histogram series: %s", q.rw, d))
			}
			returned[q.rw] = len(gotHists)
		}
		return problems
	})
	t.Logf("histogram series returned by %s: %v of %d", r.be.name, returned, len(hists))
	checkNoFailedSends(t, r.prom1.base)
	for _, q := range rwQueues {
		sent, _ := scrapeMetric(context.Background(), r.prom1.base, "prometheus_remote_storage_histograms_total", `remote_name="`+q.name+`"`)
		failed, _ := scrapeMetric(context.Background(), r.prom1.base, "prometheus_remote_storage_histograms_failed_total", `remote_name="`+q.name+`"`)
		t.Logf("%s: histograms sent %v, failed %v", q.name, sent, failed)
	}
	logBackendCounters(t, "http://"+r.be.addr)
	r.stopWriterAndBackend(t)
	checkLog(t, r.be.logPath)
	if r.be.validate != nil {
		r.be.validate(t)
	}
}

// rig is a backend, Prometheus #1 writing to it and Prometheus #2 reading
// from it, all on loopback, all stopped when the test ends.
type rig struct {
	be           *backend
	prom1, prom2 promAPI
	p1, p2       *process
	// start is just before Prometheus #1 started, in whole seconds so that
	// the 1 s step of range queries lands on one grid for both servers.
	start time.Time
	// The test's own scrape target (see startTarget) and how to take it away.
	targetAddr string
	stopTarget func()
}

// specialValues are the gauges the test's own target serves: the exposition
// text, and the float64 Prometheus must store for it.
//
// No -0: Prometheus stores it, but its gogo-protobuf encoders (prompb and
// writev2, `if m.Value != 0`) leave a zero-valued double off the wire, so a
// receiver always gets +0. Seen with a Prometheus receiver too.
var specialValues = []struct {
	name, text string
	want       float64
}{
	{"nan", "NaN", math.NaN()},
	{"pos_inf", "+Inf", math.Inf(1)},
	{"neg_inf", "-Inf", math.Inf(-1)},
	{"smallest_subnormal", "5e-324", math.SmallestNonzeroFloat64},
	{"max", "1.7976931348623157e+308", math.MaxFloat64},
	{"tenth", "0.1", 0.1},
	{"two53_plus_one", "9007199254740993", 1 << 53}, // rounds to 2^53 when parsed
	{"neg_pi", "-3.141592653589793", -math.Pi},
}

// startTarget serves /metrics on a free loopback port: the special values as
// gauges plus a counter growing by 0.1 per scrape (so its floats pick up
// rounding noise). It returns the address and a func that closes the server,
// after which Prometheus's scrapes fail and it writes stale markers.
func startTarget(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counter := 0.0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		counter += 0.1
		c := counter
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		var b strings.Builder
		b.WriteString("# TYPE e2e_special gauge\n")
		for _, v := range specialValues {
			fmt.Fprintf(&b, "e2e_special{case=%q} %s\n", v.name, v.text)
		}
		fmt.Fprintf(&b, "# TYPE e2e_tenths_total counter\ne2e_tenths_total %s\n", strconv.FormatFloat(c, 'g', -1, 64))
		io.WriteString(w, b.String())
	})}
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(func() { srv.Close() }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// checkSpecialValues asserts that Prometheus #1 itself stored the target's
// values as intended and saw the target go away, so that the comparison with
// #2 covers special floats and stale markers.
func checkSpecialValues(t *testing.T, raw []series) {
	t.Helper()
	found := map[string]bool{}
	var upValues []string
	for _, s := range raw {
		if s.labels["job"] != "e2e-target" {
			continue
		}
		switch s.labels["__name__"] {
		case "up":
			for _, smp := range s.samples {
				upValues = append(upValues, smp.v)
			}
		case "e2e_special":
			for _, v := range specialValues {
				if s.labels["case"] != v.name {
					continue
				}
				found[v.name] = true
				for _, smp := range s.samples {
					got, err := strconv.ParseFloat(smp.v, 64)
					if err != nil || math.Float64bits(got) != math.Float64bits(v.want) && !(math.IsNaN(got) && math.IsNaN(v.want)) {
						t.Errorf("prometheus#1 stored e2e_special{case=%q} as %s, want %v", v.name, smp.v, v.want)
						break
					}
				}
			}
		}
	}
	for _, v := range specialValues {
		if !found[v.name] {
			t.Errorf("prometheus#1 has no e2e_special{case=%q}", v.name)
		}
	}
	up := strings.Join(upValues, " ")
	// A scrape may time out on a busy machine, so only ask for some 1s and a
	// 0 at the end.
	if !strings.Contains(up, "1") || !strings.HasSuffix(up, "0") {
		t.Errorf("up{job=\"e2e-target\"} on prometheus#1 = [%s], want 1s, then 0s once the target is gone", up)
	}
}

// startRig starts the backend, then Prometheus #2 (reader) and Prometheus #1
// with testdata/writerTemplate.
func startRig(t *testing.T, writerTemplate string) *rig {
	t.Helper()
	tmp := t.TempDir()
	promBin := prometheusBinary(t)

	addrs := distinctAddrs(t, 3)
	r := &rig{be: newBackend(t, tmp, addrs[0])}
	r.be.owner = t
	r.prom1 = promAPI{name: "prometheus#1 (own TSDB)", base: "http://" + addrs[1]}
	r.prom2 = promAPI{name: "prometheus#2 (remote read from " + r.be.name + ")", base: "http://" + addrs[2]}

	r.targetAddr, r.stopTarget = startTarget(t)
	vars := map[string]string{"PrometheusAddr": addrs[1], "ActaRemoteAddr": r.be.addr, "TargetAddr": r.targetAddr}
	writerCfg := renderConfig(t, writerTemplate, filepath.Join(tmp, writerTemplate), vars)
	readerCfg := renderConfig(t, "prometheus-reader.yml", filepath.Join(tmp, "prometheus-reader.yml"), vars)

	r.be.start(t)
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
	r.p2 = startPrometheus("prometheus2", readerCfg, addrs[2])
	r.start = time.Now().Truncate(time.Second)
	r.p1 = startPrometheus("prometheus1", writerCfg, addrs[1])
	t.Logf("%s on %s (data %s), prometheus#1 on %s, prometheus#2 on %s", r.be.name, r.be.addr, r.be.dataDir, addrs[1], addrs[2])
	return r
}

// hold waits until deadline, failing early if any process of the rig exits.
func (r *rig) hold(t *testing.T, deadline time.Time) {
	t.Helper()
	hold(t, deadline, r.be.proc, r.p1, r.p2)
}

// rawRange is a range selector suffix reaching from before the first scrape
// to end; as an instant query at end it returns every stored sample.
func (r *rig) rawRange(end time.Time) string {
	return fmt.Sprintf("[%dms]", (end.Sub(r.start) + time.Minute).Milliseconds())
}

func (r *rig) rawAll(end time.Time) string {
	return selector()(`__name__=~".+"`) + r.rawRange(end)
}

// checkpoint waits until both queues of #1 have sent past end, then asks #1
// for the expected answers, and compares #2's answers for each rw label,
// retrying for up to patience because remote write is asynchronous.
func (r *rig) checkpoint(t *testing.T, end time.Time, patience time.Duration) answers {
	t.Helper()
	waitSent(t, r.prom1.base, end, 90*time.Second)
	want, err := ask(context.Background(), r.prom1, r.start, end, selector())
	if err != nil {
		t.Fatal(err)
	}
	// The writer's own answers must not be empty, or the comparison proves nothing.
	for i, c := range checks {
		if len(want.results[i]) == 0 {
			t.Fatalf("prometheus#1 has no result for %q over [%s, %s]", c.name, r.start, end)
		}
	}
	raw := want.results[0]
	t.Logf("range [%s, %s]: prometheus#1 has %d series, %d raw samples", r.start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), len(raw), countSamples(raw))
	compareEventually(t, patience, r.start, end, func() []string { return compareOnce(r.prom2, want) })
	return want
}

// stopWriterAndBackend stops Prometheus #1, then the backend, each with
// SIGTERM, and requires both to exit 0. Prometheus goes first: stopping it
// flushes its queues to the backend, and the other way round it would wait
// out its flush deadline on exit.
func (r *rig) stopWriterAndBackend(t *testing.T) {
	t.Helper()
	if err := r.p1.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("prometheus#1 on SIGTERM: %v", err)
	}
	if err := r.be.proc.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("%s on SIGTERM: %v, want exit 0", r.be.name, err)
	}
}

// splitHistogramSeries separates series holding native histogram samples.
func splitHistogramSeries(ss []series) (floats, hists []series) {
	for _, s := range ss {
		if hasHistogram(s) {
			hists = append(hists, s)
		} else {
			floats = append(floats, s)
		}
	}
	return floats, hists
}

func hasHistogram(s series) bool {
	for _, smp := range s.samples {
		if strings.HasPrefix(smp.v, histogramPrefix) {
			return true
		}
	}
	return false
}

// keepSeries returns the series of want whose label set, without dropLabel,
// is among those of got.
func keepSeries(want, got []series, dropLabel string) []series {
	keys := map[string]bool{}
	for _, s := range got {
		ls := map[string]string{}
		for k, v := range s.labels {
			if k != dropLabel {
				ls[k] = v
			}
		}
		keys[labelsString(ls)] = true
	}
	var out []series
	for _, s := range want {
		if keys[labelsString(s.labels)] {
			out = append(out, s)
		}
	}
	return out
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
			// No OTLP gRPC listener: these tests send no OTLP, and the
			// default 127.0.0.1:4317 may be taken on a shared machine.
			args: []string{"serve", "--listen", addr, "--data-dir", dataDir, "--otlp-grpc-listen", "off"},
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

// compareEventually runs compare until it reports no problems or patience
// runs out, then reports the last problems: remote write is asynchronous.
func compareEventually(t *testing.T, patience time.Duration, start, end time.Time, compare func() []string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for attempt := 1; ; attempt++ {
		problems := compare()
		if len(problems) == 0 {
			if attempt > 1 {
				t.Logf("prometheus#2 agreed with prometheus#1 after %d attempts", attempt)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("prometheus#2 (remote read) disagrees with prometheus#1 over [%s, %s] after %d attempts in %s:\n%s",
				start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), attempt, patience, strings.Join(problems, "\n"))
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// compareOnce asks prom2 the checks for each rw label and lists how its
// answers differ from want.
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
