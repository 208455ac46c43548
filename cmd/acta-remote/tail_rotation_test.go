package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/prometheus/prometheus/model/labels"
)

// rotationConfig seals each series' file every hour of sample time and runs
// compaction every second, unpaced, so a test sees both within seconds;
// tiers is the rotation.compaction.tiers value.
func rotationConfig(tiers string) string {
	return `
storage:
  block_rows: 10
  max_head_age: 1s
rotation:
  period: 1h
  interval: 1s
  compaction:
    max_bytes_per_second: 0
    tiers: ` + tiers + `
otlp:
  grpc:
    enabled: false
`
}

// TestTailAcrossRotationAndCompaction runs the real server with rotation
// and compaction: samples one minute apart cross an hour boundary every six
// blocks, so each series gets a new file, and the sealed ones are rewritten
// into one block and renamed over the originals. tail (a fast poller and one
// whose every poll rescans) must print each flushed sample once, in order;
// query must print what remote read returns, across all the files.
func TestTailAcrossRotationAndCompaction(t *testing.T) {
	testTailAcross(t, "[]", func(paths []string) (bool, string) {
		if len(paths) != 6 {
			t.Fatalf("%d series files, want 3 per series: %v", len(paths), paths)
		}
		compacted := 0
		for _, path := range paths {
			if r, err := acta.Open(path); err == nil {
				rows := 0
				for _, b := range r.Blocks() {
					rows += int(b.Rows)
				}
				// Rewritten (the sealed schema, its value type chosen;
				// blocks may be cut at outliers): hour 0 holds 55 samples,
				// hour 1 60.
				if r.Schema().ID == sealedSchemaID && rows >= 55 {
					compacted++
				}
				r.Close()
			}
		}
		return compacted == 4, strconv.Itoa(compacted) + " of 4 sealed files compacted"
	})
}

// sealedSchemaID is the schema id of files compaction wrote
// (docs/format/series.md).
const sealedSchemaID = 5

// TestTailAcrossTierMerges is the same with a 2 h tier: hours 0 and 1 of
// each series are merged into hour 0's file (renamed over it) and hour 1's
// is deleted while the tails run; each sample must still print once.
func TestTailAcrossTierMerges(t *testing.T) {
	testTailAcross(t, "[2h]", func(paths []string) (bool, string) {
		merged := 0
		for _, path := range paths {
			if r, err := acta.Open(path); err == nil {
				rows := 0
				for _, b := range r.Blocks() {
					rows += int(b.Rows)
				}
				if rows == 115 { // hour 0: 55 samples, hour 1: 60
					merged++
				}
				r.Close()
			}
		}
		return len(paths) == 4 && merged == 2, strconv.Itoa(len(paths)) + " series files, " + strconv.Itoa(merged) + " of 2 merged"
	})
}

// testTailAcross runs the server with tiers and 2 series over 2.5 h of
// samples (hours 0, 1 and 2), waits until settled says the sealed files
// are rewritten, and checks the tails and query.
func testTailAcross(t *testing.T, tiers string, settled func(paths []string) (bool, string)) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, rotationConfig(tiers))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	sets := []labels.Labels{
		labels.FromStrings("__name__", "r_metric", "instance", "a"),
		labels.FromStrings("__name__", "r_metric", "instance", "b"),
	}
	want := dataset{}
	// Rounds start 5 minutes past the hour, so the round crossing an hour
	// is one flush split into the old file's last block and the new file's
	// first.
	next := t0 + 5*60000
	round := func() {
		r := dataset{}
		for i, ls := range sets {
			s := seriesSamples(next, 10, next+int64(i))
			for j := range s {
				s[j].T = next + int64(j)*60000
			}
			r[ls.String()] = s
			want[ls.String()] = append(want[ls.String()], s...)
		}
		send(t, p.url, r, sets, 10)
		next += 10 * 60000
	}
	round()
	waitQuery(t, bin, data, "r_metric", 20)

	tails := []*tailProc{
		startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "100ms", "--json", "r_metric"),
		startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "2100ms", "--json", "r_metric"),
	}
	// 15 rounds of 10 minutes: files for hours 0, 1 and 2 of each series.
	for r := 1; r < 15; r++ {
		round()
		time.Sleep(400 * time.Millisecond)
	}
	n := countSamples(want)
	for _, tp := range tails {
		tp.waitCount(t, n)
	}
	// Maintenance runs every second: wait until the sealed files are
	// rewritten, then give the tails time to see the renames.
	deadline := time.Now().Add(30 * time.Second)
	for {
		paths, _ := filepath.Glob(filepath.Join(data, "series", "*", "*.acta"))
		done, state := settled(paths)
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", state)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A tail started now reads the rewritten files as history.
	late := startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "100ms", "--json", "r_metric")
	late.waitCount(t, n)
	time.Sleep(settle)
	for i, tp := range append(tails, late) {
		sameData(t, "tail "+strconv.Itoa(i), tp.result(t, n), want)
		tp.stop(t)
	}

	ms, _ := parseSelector("r_metric")
	out, _ := runTool(t, bin, "query", "--data-dir", data, "--json", "r_metric")
	sameData(t, "query", parseJSONOutput(t, out), readMatching(t, p.url, ms, t0, next))
	sameData(t, "query vs written", parseJSONOutput(t, out), want)
	mid := t0 + 70*60000 // inside the second file
	out, _ = runTool(t, bin, "query", "--data-dir", data, "--json", "--start", strconv.FormatInt(mid, 10), "--end", strconv.FormatInt(mid+65*60000, 10), "r_metric")
	sameData(t, "query range", parseJSONOutput(t, out), readMatching(t, p.url, ms, mid, mid+65*60000))
}
