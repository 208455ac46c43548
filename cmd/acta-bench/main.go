// Command acta-bench measures acta-remote side by side with Prometheus and
// VictoriaMetrics on the same generated Prometheus data: ingest rate and
// latency (Remote-Write 1.0 and 2.0), peak memory, bytes on disk per sample
// after each system's own flush or compaction, read latency, and a
// correctness check of what each system reads back; then the restart
// after kill -9 with a full head (crash.go) and the resident memory grown
// per active series (memory.go).
//
//	go run ./cmd/acta-bench                # 10k series × 6 h, kill -9, memory at 200k and 1M series
//	go run ./cmd/acta-bench --quick        # 5k series × 2 h smoke run
//	go run ./cmd/acta-bench --scenario multiday   # 2k series × 3 days, per shape
//	go run ./cmd/acta-bench --scenario memory --memory-series 20000
//	go run ./cmd/acta-bench --scenario kill9
//	go run ./cmd/acta-bench --systems acta-remote --series 500 --duration 30m
//
// The peers are built from the Go module proxy on first use and cached
// where e2e/ caches Prometheus (e2e/.bin, or $ACTA_E2E_CACHE). Results go to
// bench-results/<time>/ (results.md, results.json, each server's log).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "acta-bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("acta-bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "smoke-run size: 5,000 series × 2 h, fewer checks (about 2 minutes)")
	scenario := fs.String("scenario", "default", "default: the flags' size (10k series × 6 h), then the kill -9 and memory scenarios; multiday: 2,000 series × 3 days, so that rotation, sealing, compaction and tier merges all happen before the disk is measured, with per-shape runs (no kill -9 or memory scenario unless their flags ask); memory: the memory scenario alone; kill9: the kill -9 scenario alone")
	perShape := fs.Bool("per-shape", false, "also ingest each shape group (counters, gauges, float noise, constants, histogram buckets) alone into a fresh instance of every system and measure its disk (on with --scenario multiday)")
	settle := fs.Bool("settle", true, "before measuring acta-remote's disk, wait until its maintenance settled after the ingest and again after a restart (compaction and merges of everything sealed)")
	settleTimeout := fs.Duration("settle-timeout", 30*time.Minute, "give up waiting for acta-remote's maintenance after this")
	series := fs.Int("series", 10000, "series count")
	duration := fs.Duration("duration", 6*time.Hour, "simulated span; the data ends at the start of the run")
	interval := fs.Duration("interval", 15*time.Second, "nominal scrape interval")
	jitter := fs.Duration("jitter", 25*time.Millisecond, "scrape timestamps land within ± this of their slot")
	restart := fs.Duration("restart-every", 24*time.Hour, "mean time between restarts of a pod target (counter resets); nodes restart 10× less; 0 disables")
	seed := fs.Uint64("seed", 1, "random seed: the same seed, size and start give the same data")
	start := fs.Int64("start", 0, "first scrape in ms since the epoch (default: now minus --duration)")
	batch := fs.Int("batch", 2000, "samples per request (Prometheus's max_samples_per_send)")
	conc := fs.Int("concurrency", 4, "concurrent senders (shards); a series always goes to the same one")
	roundMin := fs.Duration("round", 10*time.Minute, "simulated time the shards may drift apart")
	systems := fs.String("systems", strings.Join([]string{sysActa, sysActaLive, sysProm, sysVM}, ","),
		"systems to run, in order ("+sysActaLive+": acta-remote with the 20-row blocks live 15 s ingestion leaves before compaction)")
	rw2 := fs.Bool("rw2", true, "also time Remote-Write 2.0 (acta-remote and Prometheus)")
	verifyN := fs.Int("verify", 50, "random series read back and compared per system")
	reps := fs.Int("read-reps", 10, "repetitions of each read query")
	vmTol := fs.Float64("vm-tolerance", 1e-11, "relative tolerance for VictoriaMetrics values: it stores a decimal mantissa of 12 significant digits (lib/decimal conversionPrecision)")
	procs := fs.Int("gomaxprocs", 2, "GOMAXPROCS of every server: the same CPU budget for each")
	warmup := fs.Float64("warmup", 0.1, "fraction of samples left out of the sustained ingest rate")
	out := fs.String("out", "", "output directory (default bench-results/<UTC time> in the repository)")
	work := fs.String("work", "", "data dirs and logs (default: the output directory)")
	actaCfg := fs.String("acta-config", "", "acta-remote config file (default: server defaults with OTLP/gRPC off)")
	keep := fs.Bool("keep", false, "keep the data directories")
	runs := fs.Int("runs", 1, "run every system this many times (rotating the order); the table gives medians and ranges")
	worktree := fs.Bool("acta-worktree", false, "build acta-remote from the working tree (default: the committed HEAD)")
	memSeries := fs.String("memory-series", "200000,1000000", "memory scenario: comma-separated series counts, each into a fresh instance of every system; '' disables it")
	memSamples := fs.Int("memory-samples", 10, "memory scenario: samples per series, --interval apart, ending now, sent round by round")
	memSettle := fs.Duration("memory-settle", 10*time.Second, "memory scenario: wait after the last request before the RSS is taken (the idle RSS before the ingest waits this, at most 5 s, after ready)")
	crashSeries := fs.Int("kill9-series", 2000, "kill -9 scenario: series in the head at the kill; 0 disables it")
	crashSamples := fs.Int("kill9-samples", 2880, "kill -9 scenario: samples per series")
	crashInterval := fs.Duration("kill9-interval", 2*time.Second, "kill -9 scenario: time between a series' samples; samples × interval must stay under the 2 h Prometheus keeps in its head")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Explicit flags win over a scenario's or --quick's sizes.
	def := func(name string, apply func()) {
		if !set[name] {
			apply()
		}
	}
	skipMain := false
	switch *scenario {
	case "default":
	case "multiday":
		def("series", func() { *series = 2000 })
		def("duration", func() { *duration = 72 * time.Hour })
		def("per-shape", func() { *perShape = true })
		def("memory-series", func() { *memSeries = "" })
		def("kill9-series", func() { *crashSeries = 0 })
	case "memory":
		skipMain = true
		def("kill9-series", func() { *crashSeries = 0 })
		def("systems", func() { *systems = strings.Join([]string{sysActa, sysProm, sysVM}, ",") })
	case "kill9":
		skipMain = true
		def("memory-series", func() { *memSeries = "" })
		def("systems", func() { *systems = strings.Join([]string{sysActa, sysProm, sysVM}, ",") })
	default:
		return fmt.Errorf("unknown --scenario %q (want default, multiday, memory or kill9)", *scenario)
	}
	if *quick {
		def("series", func() { *series = 5000 })
		def("duration", func() { *duration = 2 * time.Hour })
		def("verify", func() { *verifyN = 10 })
		def("read-reps", func() { *reps = 3 })
		def("memory-series", func() { *memSeries = "20000" })
		def("kill9-series", func() { *crashSeries = 500 })
	}
	memSizes, err := parseSizes(*memSeries)
	if err != nil {
		return fmt.Errorf("--memory-series: %w", err)
	}
	if len(memSizes) > 0 && *memSamples < 1 {
		return fmt.Errorf("--memory-samples must be at least 1, got %d", *memSamples)
	}
	if *crashSeries > 0 && (*crashSamples < 1 || *crashInterval <= 0) {
		return fmt.Errorf("--kill9-samples and --kill9-interval must be positive")
	}
	if skipMain && len(memSizes) == 0 && *crashSeries == 0 {
		return fmt.Errorf("--scenario %s with its scenario turned off: nothing to run", *scenario)
	}
	repo, err := findRepo()
	if err != nil {
		return err
	}
	began := time.Now().UTC()
	if *out == "" {
		*out = filepath.Join(repo, "bench-results", began.Format("20060102T150405Z"))
	}
	if *work == "" {
		*work = *out
	}
	for _, d := range []string{*out, *work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if *start == 0 {
		// Ending at "now" keeps every sample inside each system's accepted
		// window (Prometheus's head, VictoriaMetrics's retention).
		*start = began.Add(-*duration).UnixMilli()
	}
	o := Options{
		Gen: GenConfig{Seed: *seed, Series: *series, Start: *start, Duration: *duration, Interval: *interval,
			JitterMs: jitter.Milliseconds(), RestartEvery: *restart},
		Load:          LoadConfig{BatchSize: *batch, Shards: *conc, RoundScrapes: max(1, int(*roundMin / *interval))},
		Systems:       strings.Split(*systems, ","),
		RW2:           *rw2,
		Warmup:        *warmup,
		VerifySeries:  *verifyN,
		ReadReps:      *reps,
		VMTolerance:   *vmTol,
		GOMAXPROCS:    *procs,
		Repo:          repo,
		WorkDir:       *work,
		ActaConfig:    *actaCfg,
		ActaWorktree:  *worktree,
		Keep:          *keep,
		Runs:          *runs,
		Settle:        *settle,
		SettleTimeout: *settleTimeout,
		PerShape:      *perShape,
		SkipMain:      skipMain,
		MemorySeries:  memSizes,
		MemorySamples: *memSamples,
		MemorySettle:  *memSettle,
		CrashSeries:   *crashSeries,
		CrashSamples:  *crashSamples,
		CrashInterval: *crashInterval,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
		},
	}
	rep := &Report{
		Started: began.Format(time.RFC3339),
		Machine: fmt.Sprintf("%d CPUs, load average at start %s", runtime.NumCPU(), loadAvg()),
		Config: map[string]any{
			"series": *series, "duration": duration.String(), "interval": interval.String(), "jitter": jitter.String(),
			"seed": *seed, "start_ms": *start, "batch": *batch, "concurrency": *conc, "round": roundMin.String(),
			"restart_every": restart.String(), "gomaxprocs": *procs, "warmup": *warmup, "verify_series": *verifyN,
			"read_reps": *reps, "vm_tolerance": *vmTol, "quick": *quick, "acta_worktree": *worktree, "runs": *runs,
			"scenario": *scenario, "per_shape": *perShape, "settle": *settle,
			"memory_series": memSizes, "memory_samples": *memSamples, "memory_settle": memSettle.String(),
			"kill9_series": *crashSeries, "kill9_samples": *crashSamples, "kill9_interval": crashInterval.String(),
		},
	}
	if n := dayCrossing(*scenario, *start, *duration); n > 0 {
		rep.Config["utc_days"] = n // describe puts the note in results.md
		o.Logf("%s", dayNote(n))
	}
	results, _, err := Run(o)
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	rep.Machine += ", at end " + loadAvg()
	buildReport(rep, results)
	if werr := writeJSON(filepath.Join(*out, "results.json"), rep); werr != nil && err == nil {
		err = werr
	}
	md, merr := os.Create(filepath.Join(*out, "results.md"))
	if merr == nil {
		fmt.Fprintf(md, "%s, %s; %s\n\n", rep.Started, rep.Machine, describe(rep.Config))
		for _, s := range rep.Summary {
			fmt.Fprintf(md, "- %s (%s): %s\n", s.Name, s.Version, strings.Join(s.Notes, "; "))
		}
		fmt.Fprintln(md)
		writeMarkdown(md, rep)
		md.Close()
	}
	writeMarkdown(os.Stdout, rep)
	fmt.Printf("\ncorrectness: %s\nresults: %s\n", rep.Conclusion, *out)
	if err != nil {
		return err
	}
	for _, s := range rep.Summary {
		if len(s.Errors) > 0 || !s.Verify.OK {
			return fmt.Errorf("%s did not complete cleanly: %s %s", s.Name, strings.Join(s.Errors, "; "), s.Verify.FirstMismatch)
		}
	}
	return nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func describe(c map[string]any) string {
	var parts []string
	if sc := c["scenario"]; sc != "memory" && sc != "kill9" {
		parts = append(parts, fmt.Sprintf("%v series × %v at %v (±%v), batch %v, %v senders",
			c["series"], c["duration"], c["interval"], c["jitter"], c["batch"], c["concurrency"]))
	}
	if n, ok := c["kill9_series"].(int); ok && n > 0 {
		parts = append(parts, fmt.Sprintf("kill -9: %v series × %v samples at %v", n, c["kill9_samples"], c["kill9_interval"]))
	}
	if ns, ok := c["memory_series"].([]int); ok && len(ns) > 0 {
		parts = append(parts, fmt.Sprintf("memory: %v series × %v samples at %v, RSS %v after the last request", ns, c["memory_samples"], c["interval"], c["memory_settle"]))
	}
	if n, ok := c["utc_days"].(int64); ok {
		parts = append(parts, dayNote(n))
	}
	parts = append(parts, fmt.Sprintf("GOMAXPROCS=%v, seed %v, %v run(s)", c["gomaxprocs"], c["seed"], c["runs"]))
	return strings.Join(parts, "; ")
}

// utcDays is how many UTC days the samples from start (ms since the epoch)
// over d touch. acta-remote keeps a file per series and UTC day, so a 6 h
// span ending at 02:00Z gives every series two files, each with its own
// 4 KiB allocation floor and header: the default run's allocated disk
// figure rose from 3.69 to 6.25 B/sample that way (2026-12-04 01:32Z).
func utcDays(start int64, d time.Duration) int64 {
	const day = int64(24 * time.Hour / time.Millisecond)
	end := start + d.Milliseconds() - 1
	return end/day - start/day + 1
}

// dayCrossing is utcDays for a default-scenario span of a day or less
// that crosses midnight UTC, else 0: a multiday span crosses on purpose.
func dayCrossing(scenario string, start int64, d time.Duration) int64 {
	if n := utcDays(start, d); n > 1 && d <= 24*time.Hour && scenario == "default" {
		return n
	}
	return 0
}

func dayNote(n int64) string {
	return fmt.Sprintf("the span touches %d UTC days, so acta-remote writes %d files per series (pass --start to keep it inside one day)", n, n)
}
