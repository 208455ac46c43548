package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The whole harness, tiny, against acta-remote alone (no peers to build),
// in both configurations: ingest, flush, restart, read, and the correctness
// check must pass.
func TestHarnessQuickActaOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs acta-remote")
	}
	repo, err := findRepo()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(300)
	cfg.Duration = 30 * time.Minute
	cfg.Start = time.Now().Add(-cfg.Duration).UnixMilli()
	o := Options{
		Gen:          cfg,
		Load:         LoadConfig{BatchSize: 1000, Shards: 2, RoundScrapes: 40},
		Systems:      []string{sysActa, sysActaLive},
		RW2:          true,
		Warmup:       0.1,
		VerifySeries: 5,
		ReadReps:     2,
		GOMAXPROCS:   2,
		Repo:         repo,
		WorkDir:      t.TempDir(),
		Logf:         t.Logf,
	}
	runs, d, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	results := runs[0]
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	live := results[1]
	if live.Err != "" || !live.Verify.OK || live.Verify.Samples != 5*120 {
		t.Fatalf("%s: %s, verify %+v", live.Name, live.Err, live.Verify)
	}
	if _, ok := live.Ingest[protoRW2]; ok {
		t.Fatalf("%s timed RW 2.0; it only measures disk and reads", live.Name)
	}
	r := results[0]
	// 120 samples a series: one block in the default configuration, six
	// 20-row blocks live, each with its own framing.
	if live.Compacted.ApparentBytes <= r.Compacted.ApparentBytes {
		t.Fatalf("20-row blocks take %d bytes, one block per series %d", live.Compacted.ApparentBytes, r.Compacted.ApparentBytes)
	}
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if !r.Verify.OK || r.Verify.Series != 5 || r.Verify.Samples != 5*120 || r.Verify.MaxRelErr != 0 {
		t.Fatalf("verify: %+v", r.Verify)
	}
	for _, p := range []string{protoRW1, protoRW2} {
		ing := r.Ingest[p]
		if ing.Samples != d.Samples() || ing.Failed != 0 || ing.SamplesPerSec <= 0 || ing.P99Ms < ing.P50Ms {
			t.Fatalf("%s ingest: %+v (want %d samples)", p, ing, d.Samples())
		}
	}
	if r.Compacted.AllocBytes <= 0 || r.Compacted.ApparentBytes <= 0 || r.PeakRSSBytes <= 0 {
		t.Fatalf("disk %+v, RSS %d", r.Compacted, r.PeakRSSBytes)
	}
	if len(r.Reads) != 8 {
		t.Fatalf("%d read results, want 6 remote reads and 2 PromQL range queries", len(r.Reads))
	}
	for _, q := range r.Reads {
		if q.Err != "" || q.Series != q.WantSeries || q.Samples == 0 {
			t.Fatalf("read %s: %+v", q.Query, q)
		}
	}
	for _, q := range r.Reads[6:] {
		if !strings.HasPrefix(q.Query, "PromQL rate(x[5m]) ") || len(q.Answer) != 64 {
			t.Fatalf("PromQL read %+v", q)
		}
	}
	// Both acta-remote variants hold the same data: the same PromQL answers.
	if live.Reads[6].Answer != r.Reads[6].Answer || live.Reads[7].Answer != r.Reads[7].Answer {
		t.Fatalf("PromQL answers differ between %s and %s", sysActa, sysActaLive)
	}
	// 300 series × 30 min: the 1,000-series query takes every pod target.
	if want := 1; r.Reads[0].Series != want || r.Reads[0].Samples != 120 {
		t.Fatalf("1 series × 1 h over 30 min of data: %d series, %d samples", r.Reads[0].Series, r.Reads[0].Samples)
	}
	// Every series over the whole span, streamed and as SAMPLES.
	for _, q := range []ReadResult{r.Reads[3], r.Reads[5]} {
		if q.Series != 300 || q.Samples != d.Samples() || q.Reps != 2 {
			t.Fatalf("%s: %d series, %d samples, %d reps; want 300, %d, 2", q.Query, q.Series, q.Samples, q.Reps, d.Samples())
		}
	}
	if !strings.HasSuffix(r.Reads[4].Query, ", SAMPLES") || r.Reads[4].Samples != 120 {
		t.Fatalf("single series as SAMPLES: %+v", r.Reads[4])
	}

	rep := &Report{}
	buildReport(rep, runs)
	var md bytes.Buffer
	writeMarkdown(&md, rep)
	for _, s := range []string{"| Metric | acta-remote | acta-remote-live | acta-remote-live ÷ acta |", "Ingest RW 2.0", "| Correctness (series checked, mismatched, max rel. error) | 5, 0, 0 | 5, 0, 0 | |"} {
		if !strings.Contains(md.String(), s) {
			t.Fatalf("table lacks %q:\n%s", s, md.String())
		}
	}
	if rep.Conclusion != "every system read back what was generated" {
		t.Fatal(rep.Conclusion)
	}
}

// The command line in quick mode, shrunk further by explicit flags (which
// win over --quick), writes both result files with the check passed and
// the kill -9 and memory scenarios' rows.
func TestCommandQuickWritesResults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs acta-remote")
	}
	out := t.TempDir()
	err := run([]string{"--quick", "--systems", sysActa, "--series", "200", "--duration", "15m",
		"--rw2=false", "--verify", "3", "--out", out,
		"--memory-series", "1000,2000", "--memory-settle", "1s", "--kill9-series", "20", "--kill9-samples", "100"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Summary) != 1 || !rep.Summary[0].Verify.OK || rep.Summary[0].Verify.Samples != 3*60 || len(rep.Runs) != 1 {
		t.Fatalf("results.json: %s", b)
	}
	if rep.Config["quick"] != true || rep.Config["series"] != float64(200) {
		t.Fatalf("config in results.json: %v", rep.Config)
	}
	if _, ok := rep.Runs[0][0].Ingest[protoRW2]; ok {
		t.Fatal("--rw2=false still timed RW 2.0")
	}
	r := rep.Runs[0][0]
	if len(r.Memory) != 2 || r.Memory[0].Series != 1000 || r.Memory[1].Series != 2000 || r.Memory[1].BytesPerSeries <= 0 {
		t.Fatalf("memory scenario in results.json: %+v", r.Memory)
	}
	if r.Crash == nil || r.Crash.Samples != 20*100 || !r.Crash.Verify.OK || r.Crash.Verify.Samples != 100 {
		t.Fatalf("kill -9 scenario in results.json: %+v", r.Crash)
	}
	if c := rep.Summary[0].Values["restart_kill9_s"]; c.N != 1 || c.Median != r.Crash.QueryableSec {
		t.Fatalf("kill -9 summary %+v, run %+v", c, r.Crash)
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil || !bytes.Contains(md, []byte("| Correctness (series checked, mismatched, max rel. error) | 3, 0, 0 |")) {
		t.Fatalf("results.md (%v):\n%s", err, md)
	}
	for _, row := range []string{"| Resident memory grown per active series, 1,000 live series × 10 samples, bytes |",
		"| Resident memory grown per active series, 2,000 live series × 10 samples, bytes |",
		"| Restart after kill -9, 20 series × 100 samples in the head, to ready and one series read whole, s |",
		"memory: [1000 2000] series × 10 samples at 15s, RSS 1s after the last request"} {
		if !bytes.Contains(md, []byte(row)) {
			t.Fatalf("results.md lacks %q:\n%s", row, md)
		}
	}
}
