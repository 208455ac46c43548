package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cachedPeers are the peers already built in the binary cache (e2e/.bin
// or $ACTA_E2E_CACHE): a test never builds them (10 minutes for
// Prometheus).
func cachedPeers(t *testing.T, repo string) []string {
	var out []string
	for _, p := range []struct{ name, dir, bin string }{
		{sysProm, "prometheus-" + prometheusModVersion, "prometheus"},
		{sysVM, "victoria-metrics-" + vmVersion, "victoria-metrics"},
	} {
		if _, err := os.Stat(filepath.Join(cacheRoot(repo), p.dir, p.bin)); err == nil {
			out = append(out, p.name)
		} else {
			t.Logf("%s not in the binary cache (set ACTA_E2E_CACHE): left out", p.name)
		}
	}
	return out
}

// The memory and kill -9 scenarios alone, tiny, against acta-remote and
// every peer in the binary cache: every system grows by a plausible
// amount per series and reads back what it was sent; after kill -9 every
// system is ready and returns the chosen series whole.
func TestScenariosMemoryAndKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs acta-remote and the cached peers")
	}
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	systems := append([]string{sysActa}, cachedPeers(t, repo)...)
	o := Options{
		Gen:           GenConfig{Seed: 7, Interval: 15 * time.Second, JitterMs: 25, RestartEvery: 24 * time.Hour},
		Load:          LoadConfig{BatchSize: 1000, Shards: 2, RoundScrapes: 40},
		Systems:       systems,
		VMTolerance:   1e-11,
		GOMAXPROCS:    2,
		Repo:          repo,
		WorkDir:       t.TempDir(),
		SkipMain:      true,
		MemorySeries:  []int{5000},
		MemorySamples: 10,
		MemorySettle:  2 * time.Second,
		CrashSeries:   50,
		CrashSamples:  600,
		CrashInterval: 2 * time.Second,
		Logf:          t.Logf,
	}
	runs, _, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0]) != len(systems) {
		t.Fatalf("%d runs of %d systems, want 1 of %d", len(runs), len(runs[0]), len(systems))
	}
	for _, r := range runs[0] {
		if r.Err != "" {
			t.Fatalf("%s: %s", r.Name, r.Err)
		}
		if len(r.Memory) != 1 {
			t.Fatalf("%s: %d memory results, want 1", r.Name, len(r.Memory))
		}
		m := r.Memory[0]
		// Every system tested here takes 1-4 KiB per series at 20,000
		// series; at 5,000 its fixed start-up costs weigh more.
		if m.Series != 5000 || m.Samples != 10 || m.IdleRSSBytes <= 0 || m.RSSBytes <= m.IdleRSSBytes ||
			m.PeakRSSBytes < m.RSSBytes || m.BytesPerSeries < 200 || m.BytesPerSeries > 32<<10 || m.IngestSec <= 0 {
			t.Fatalf("%s memory: %+v", r.Name, m)
		}
		if want := float64(m.RSSBytes-m.IdleRSSBytes) / 5000; m.BytesPerSeries != want {
			t.Fatalf("%s: %v bytes/series, want %v", r.Name, m.BytesPerSeries, want)
		}
		if !m.Verify.OK || m.Verify.Series != memoryVerify || m.Verify.Samples != memoryVerify*10 {
			t.Fatalf("%s memory read-back: %+v", r.Name, m.Verify)
		}
		c := r.Crash
		if c == nil {
			t.Fatalf("%s: no kill -9 result", r.Name)
		}
		if c.Series != 50 || c.Samples != 50*600 || c.ReadySec <= 0 || c.QueryableSec < c.ReadySec || c.QueryableSec > 60 {
			t.Fatalf("%s kill -9: %+v", r.Name, c)
		}
		// The one series read after the restart: every sample, bit for bit
		// (VictoriaMetrics within its decimal precision).
		if !c.Verify.OK || c.Verify.Series != 1 || c.Verify.Samples != 600 || c.Verify.Mismatches != 0 {
			t.Fatalf("%s kill -9 read-back: %+v", r.Name, c.Verify)
		}
		// Without the main run, the verdict is the scenarios' read-backs.
		if !r.Verify.OK || r.Verify.Series != memoryVerify+1 || r.Verify.Samples != memoryVerify*10+600 {
			t.Fatalf("%s verdict: %+v", r.Name, r.Verify)
		}
		if r.Name == sysActa && !strings.Contains(strings.Join(r.Notes, "; "), "max_head_age 24h") {
			t.Fatalf("acta-remote notes do not say how its kill -9 instance was configured: %v", r.Notes)
		}
	}

	rep := &Report{}
	buildReport(rep, runs)
	if rep.Conclusion != "every system read back what was generated" {
		t.Fatal(rep.Conclusion)
	}
	for _, peer := range systems[1:] {
		for _, key := range []string{"memory_5000_bytes_per_series", "restart_kill9_s", "restart_kill9_ready_s"} {
			want := findSummary(rep.Summary, peer).Values[key].Median / findSummary(rep.Summary, sysActa).Values[key].Median
			if got, ok := rep.Ratios[peer][key]; !ok || got != want || got <= 0 {
				t.Fatalf("%s ratio of %s: %v (%v), want %v", peer, key, got, ok, want)
			}
		}
	}
	var md bytes.Buffer
	writeMarkdown(&md, rep)
	for _, s := range []string{
		"| Resident memory grown per active series, 5,000 live series × 10 samples, bytes | ",
		"| Restart after kill -9, 50 series × 600 samples in the head, to ready and one series read whole, s | ",
		"| ... of which to the ready probe's 200, s | ",
	} {
		if !strings.Contains(md.String(), s) {
			t.Fatalf("table lacks %q:\n%s", s, md.String())
		}
	}
	// The main run's rows have no figure here and are left out.
	if strings.Contains(md.String(), "Ingest RW 1.0") || strings.Contains(md.String(), "Restart to ready after stop") {
		t.Fatalf("table has rows of the main run, which did not run:\n%s", md.String())
	}
}

// The flags of the scenarios: sizes parsed, a scenario with nothing to
// run refused, acta-remote-live kept out of them.
func TestScenarioFlags(t *testing.T) {
	if got, err := parseSizes(" 200000,1000000 ,"); err != nil || len(got) != 2 || got[0] != 200000 || got[1] != 1000000 {
		t.Fatalf("parseSizes: %v, %v", got, err)
	}
	if got, err := parseSizes(""); err != nil || len(got) != 0 {
		t.Fatalf("parseSizes(\"\"): %v, %v", got, err)
	}
	for _, args := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory-series", "20k"}, `--memory-series: series count "20k": want a positive integer`},
		{[]string{"--memory-series", "0"}, `--memory-series: series count "0": want a positive integer`},
		{[]string{"--scenario", "memory", "--memory-series", ""}, "--scenario memory with its scenario turned off: nothing to run"},
		{[]string{"--scenario", "kill9", "--kill9-series", "0"}, "--scenario kill9 with its scenario turned off: nothing to run"},
		{[]string{"--kill9-interval", "0s"}, "--kill9-samples and --kill9-interval must be positive"},
		{[]string{"--scenario", "fast"}, `unknown --scenario "fast" (want default, multiday, memory or kill9)`},
	} {
		err := run(args.args)
		if err == nil || err.Error() != args.want {
			t.Fatalf("%v: %v, want %q", args.args, err, args.want)
		}
	}
	_, _, err := Run(Options{SkipMain: true, MemorySeries: []int{10}, MemorySamples: 1, Systems: []string{sysActaLive}, WorkDir: t.TempDir(), Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "acta-remote-live (a disk layout) takes no part") {
		t.Fatalf("acta-remote-live in the memory scenario: %v", err)
	}
}

func TestFmtCount(t *testing.T) {
	for n, want := range map[int]string{7: "7", 2880: "2,880", 200000: "200,000", 1000000: "1,000,000", 1234567890: "1,234,567,890"} {
		if got := fmtCount(n); got != want {
			t.Fatalf("fmtCount(%d) = %q, want %q", n, got, want)
		}
	}
}
