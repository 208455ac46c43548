package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Medians and ranges over runs, ratios of medians, and the correctness
// verdict summed over runs.
func TestReportMediansAndRatios(t *testing.T) {
	res := func(name string, sps float64, diskPerSample float64, ok bool) *SystemResult {
		return &SystemResult{Name: name,
			Ingest:    map[string]IngestResult{protoRW1: {SamplesPerSec: sps, P50Ms: 10, P99Ms: 20}},
			Compacted: DiskResult{AllocPerSample: diskPerSample},
			Verify:    VerifyResult{Series: 5, Samples: 100, OK: ok}}
	}
	runs := [][]*SystemResult{
		{res(sysActa, 100, 4, true), res(sysProm, 50, 2, true)},
		{res(sysActa, 300, 4, true), res(sysProm, 60, 2, true)},
		{res(sysActa, 200, 4, true), res(sysProm, 400, 2, false)},
	}
	rep := &Report{}
	buildReport(rep, runs)
	acta := findSummary(rep.Summary, sysActa)
	if c := acta.Values["ingest_rw1_samples_per_s"]; c != (Cell{Median: 200, Min: 100, Max: 300, N: 3}) {
		t.Fatalf("acta-remote ingest cell %+v", c)
	}
	if r := rep.Ratios[sysProm]["ingest_rw1_samples_per_s"]; r != 60.0/200 {
		t.Fatalf("ingest ratio %v, want 0.3", r)
	}
	if r := rep.Ratios[sysProm]["compacted_alloc_bytes_per_sample"]; r != 0.5 {
		t.Fatalf("disk ratio %v, want 0.5", r)
	}
	if p := findSummary(rep.Summary, sysProm); p.Verify.OK || p.Verify.Series != 15 {
		t.Fatalf("prometheus verify over runs: %+v", p.Verify)
	}
	if rep.Conclusion != "FAILED for prometheus" {
		t.Fatal(rep.Conclusion)
	}
	var md bytes.Buffer
	writeMarkdown(&md, rep)
	for _, want := range []string{
		"| Ingest RW 1.0, samples/s (sustained) | 200.0 (100.0–300.0) | 60.0 (50.0–400.0) | 0.30× (acta ahead) |",
		"| Disk after flush/compaction, bytes/sample (allocated, du) | 4.00 (4.00–4.00) | 2.00 (2.00–2.00) | 0.50× (peer ahead) |",
		"| RW 1.0 request latency p50, ms | 10.0 (10.0–10.0) | 10.0 (10.0–10.0) | 1.00× (even) |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Fatalf("table lacks\n%s\n%s", want, md.String())
		}
	}
	// No system has an RW 2.0 figure: the row is left out.
	if strings.Contains(md.String(), "Ingest RW 2.0") {
		t.Fatalf("table has a row without figures:\n%s", md.String())
	}
}

// The run's description says when the span crosses midnight UTC, since
// acta-remote's disk figure then counts two day files per series.
func TestDescribeUTCDays(t *testing.T) {
	noon := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixMilli()
	late := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC).UnixMilli()
	for _, tc := range []struct {
		start int64
		d     time.Duration
		days  int64
	}{
		{noon, 6 * time.Hour, 1},
		{late, 4 * time.Hour, 1}, // ends at midnight, exclusive
		{late, 6 * time.Hour, 2},
		{noon, 72 * time.Hour, 4},
	} {
		if got := utcDays(tc.start, tc.d); got != tc.days {
			t.Errorf("utcDays(%d, %v) = %d, want %d", tc.start, tc.d, got, tc.days)
		}
	}
	c := map[string]any{"scenario": "default", "utc_days": int64(2)}
	if d := describe(c); !strings.Contains(d, "touches 2 UTC days") {
		t.Fatalf("describe: %q, want the two-day note", d)
	}
	delete(c, "utc_days")
	if d := describe(c); strings.Contains(d, "UTC days") {
		t.Fatalf("describe: %q, want no day note", d)
	}
}

// Only a default-scenario span of a day or less gets the note: the
// multiday scenario's 3 days cross midnight on purpose.
func TestDayCrossing(t *testing.T) {
	late := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC).UnixMilli()
	for _, tc := range []struct {
		scenario string
		d        time.Duration
		want     int64
	}{
		{"default", 6 * time.Hour, 2},
		{"default", 2 * time.Hour, 0},
		{"default", 48 * time.Hour, 0},
		{"multiday", 72 * time.Hour, 0},
		{"memory", 6 * time.Hour, 0},
	} {
		if got := dayCrossing(tc.scenario, late, tc.d); got != tc.want {
			t.Errorf("dayCrossing(%s, 20:00Z, %v) = %d, want %d", tc.scenario, tc.d, got, tc.want)
		}
	}
}
