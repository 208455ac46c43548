package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/prometheus/prometheus/model/labels"
)

// appendFile appends one block of smps to a series file (created when
// schema is not nil), as the store's flush does.
func appendFile(t *testing.T, path string, schema *acta.Schema, smps []sample) {
	t.Helper()
	var w *acta.Writer
	var err error
	if schema != nil {
		w, err = acta.Create(path, schema, acta.WriterOptions{Codec: acta.CodecZstd})
	} else {
		w, err = acta.OpenWriter(path, acta.WriterOptions{Codec: acta.CodecZstd})
	}
	if err != nil {
		t.Fatal(err)
	}
	ts, vs := make([]int64, len(smps)), make([]float64, len(smps))
	for i, s := range smps {
		ts[i], vs[i] = s.T, s.V
	}
	b := &acta.Batch{Schema: w.Schema(), Rows: len(ts), Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}
	if err := w.Append(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// fileSamples reads every sample of a series file.
func fileSamples(t *testing.T, path string) ([]sample, *acta.Schema) {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []sample
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		ts := b.Columns[0].(*acta.FixedArray[int64]).Values
		vs := b.Columns[1].(*acta.FixedArray[float64]).Values
		for j := range ts {
			out = append(out, sample{ts[j], vs[j]})
		}
	}
	return out, r.Schema()
}

// TestTailAcrossFileChanges plays the store's rotation and compaction on a
// stopped server's files while tail runs: blocks appended, a file rewritten
// into one block and renamed over the original (compaction), a new file
// for later samples (rotation), a rotated-away file removed (retention).
// Each new sample must come out once, in order; nothing rewritten again.
func TestTailAcrossFileChanges(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, tailConfig)
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	sets := []labels.Labels{
		labels.FromStrings("__name__", "f_metric", "instance", "a"),
		labels.FromStrings("__name__", "f_metric", "instance", "b"),
	}
	want := dataset{}
	for i, ls := range sets {
		want[ls.String()] = seriesSamples(t0, 30, int64(i))
	}
	send(t, p.url, want, sets, 30)
	p.stop(t, syscall.SIGTERM)

	paths, _ := filepath.Glob(filepath.Join(data, "series", "*", "*.acta"))
	if len(paths) != 2 {
		t.Fatalf("%d series files, want 2: %v", len(paths), paths)
	}
	slices.Sort(paths)
	// Which file belongs to which series: the values tell.
	file := map[string]string{}
	for _, path := range paths {
		got, _ := fileSamples(t, path)
		for _, ls := range sets {
			if w := want[ls.String()]; len(got) == len(w) && math.Float64bits(got[1].V) == math.Float64bits(w[1].V) {
				file[ls.String()] = path
			}
		}
	}
	a, b := sets[0].String(), sets[1].String()
	if file[a] == "" || file[b] == "" || file[a] == file[b] {
		t.Fatalf("series files not found: %v", file)
	}

	// A fast poller, and one whose every poll is also a rescan: it finds a
	// new file in the same cycle as the last block of the previous one.
	tails := []*tailProc{
		startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "100ms", "--json", "f_metric"),
		startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "2100ms", "--json", "f_metric"),
	}
	check := func(step string, n int) {
		t.Helper()
		for _, tp := range tails {
			tp.waitCount(t, n)
		}
		time.Sleep(settle)
		for i, tp := range tails {
			sameData(t, fmt.Sprintf("%s (tail %d)", step, i), tp.result(t, n), want)
		}
	}
	check("history", 60)
	next := t0 + 30*15000
	add := func(k string, n int) []sample {
		s := seriesSamples(next, n, next)
		want[k] = append(want[k], s...)
		return s
	}

	// A block appended to each file.
	appendFile(t, file[a], nil, add(a, 10))
	appendFile(t, file[b], nil, add(b, 10))
	next += 10 * 15000
	check("appended", 80)

	// Compaction of a's file: every sample rewritten into one block under a
	// temporary name, renamed over the original; then a block appended.
	all, schema := fileSamples(t, file[a])
	tmp := file[a] + ".tmp"
	appendFile(t, tmp, schema, all)
	if err := os.Rename(tmp, file[a]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	appendFile(t, file[a], nil, add(a, 10))
	next += 10 * 15000
	check("compacted", 90)

	// Rotation: the old file gets its last block, and right after, later
	// samples go to a new file named by its first timestamp.
	appendFile(t, file[b], nil, add(b, 5))
	next += 5 * 15000
	ref := filepath.Base(file[b])[:16]
	rotated := filepath.Join(filepath.Dir(file[b]), fmt.Sprintf("%s-%d.acta", ref, next))
	_, schema = fileSamples(t, file[b])
	appendFile(t, rotated, schema, add(b, 10))
	next += 10 * 15000
	check("rotated", 105)
	appendFile(t, rotated, nil, add(b, 10))
	next += 10 * 15000
	check("after rotation", 115)

	// Retention removes b's first file; compaction rewrites the rotated one.
	if err := os.Remove(file[b]); err != nil {
		t.Fatal(err)
	}
	all, _ = fileSamples(t, rotated)
	appendFile(t, rotated+".tmp", schema, all)
	if err := os.Rename(rotated+".tmp", rotated); err != nil {
		t.Fatal(err)
	}
	appendFile(t, rotated, nil, add(b, 5))
	check("retention", 120)
	for _, tp := range tails {
		tp.stop(t)
	}
}
