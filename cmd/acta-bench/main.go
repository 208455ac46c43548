// Command acta-bench measures acta-remote side by side with Prometheus and
// VictoriaMetrics on the same generated Prometheus data: ingest rate and
// latency (Remote-Write 1.0 and 2.0), peak memory, bytes on disk per sample
// after each system's own flush or compaction, read latency, and a
// correctness check of what each system reads back.
//
//	go run ./cmd/acta-bench                # 10k series × 6 h, all systems
//	go run ./cmd/acta-bench --quick        # 5k series × 2 h smoke run
//	go run ./cmd/acta-bench --scenario multiday   # 2k series × 3 days, per shape
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
	scenario := fs.String("scenario", "default", "default: the flags' size (10k series × 6 h); multiday: 2,000 series × 3 days, so that rotation, sealing, compaction and tier merges all happen before the disk is measured, with per-shape runs")
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch *scenario {
	case "default":
	case "multiday":
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("series", func() { *series = 2000 })
		def("duration", func() { *duration = 72 * time.Hour })
		def("per-shape", func() { *perShape = true })
	default:
		return fmt.Errorf("unknown --scenario %q (want default or multiday)", *scenario)
	}
	if *quick {
		// Explicit flags still win over the quick size.
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("series", func() { *series = 5000 })
		def("duration", func() { *duration = 2 * time.Hour })
		def("verify", func() { *verifyN = 10 })
		def("read-reps", func() { *reps = 3 })
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
		},
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
	return fmt.Sprintf("%v series × %v at %v (±%v), batch %v, %v senders, GOMAXPROCS=%v, seed %v, %v run(s)",
		c["series"], c["duration"], c["interval"], c["jitter"], c["batch"], c["concurrency"], c["gomaxprocs"], c["seed"], c["runs"])
}
