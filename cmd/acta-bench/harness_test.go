package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The whole harness, tiny, against acta-remote alone (no peers to build):
// ingest with both protocols, flush, restart, read, and the correctness
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
		Systems:      []string{sysActa},
		RW2:          true,
		Warmup:       0.1,
		VerifySeries: 5,
		ReadReps:     2,
		GOMAXPROCS:   2,
		Repo:         repo,
		WorkDir:      t.TempDir(),
		Logf:         t.Logf,
	}
	results, d, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
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
	if len(r.Reads) != 3 {
		t.Fatalf("%d read results, want 3", len(r.Reads))
	}
	for _, q := range r.Reads {
		if q.Err != "" || q.Series != q.WantSeries || q.Samples == 0 {
			t.Fatalf("read %s: %+v", q.Query, q)
		}
	}
	// 300 series × 30 min: the 1,000-series query takes every pod target.
	if want := 1; r.Reads[0].Series != want || r.Reads[0].Samples != 120 {
		t.Fatalf("1 series × 1 h over 30 min of data: %d series, %d samples", r.Reads[0].Series, r.Reads[0].Samples)
	}

	rep := &Report{}
	buildReport(rep, results)
	var md bytes.Buffer
	writeMarkdown(&md, rep)
	for _, s := range []string{"| Metric | acta-remote |", "Ingest RW 2.0", "| Correctness (series checked, mismatched, max rel. error) | 5, 0, 0 |"} {
		if !strings.Contains(md.String(), s) {
			t.Fatalf("table lacks %q:\n%s", s, md.String())
		}
	}
	if rep.Conclusion != "every system read back what was generated" {
		t.Fatal(rep.Conclusion)
	}
}
