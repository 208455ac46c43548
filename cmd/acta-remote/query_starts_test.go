package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/rotation"
)

// query --json prints a sample's stored start timestamp as "st" (ms) and
// leaves the field out where a sample has none: from the series files and
// from the WAL alike.
func TestQueryJSONStartTimestamps(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	// A clock of the samples' day, so that a day later maintenance
	// compacts the idle files.
	now := time.UnixMilli(1_700_000_100_000)
	opts := actastore.Options{Now: func() time.Time { return now }, MaintenanceInterval: -1,
		Rotation: rotation.Policy{Period: 24 * time.Hour}}
	st, err := actastore.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	c, plain, h := labels.FromStrings("__name__", "c_total"), labels.FromStrings("__name__", "plain"), labels.FromStrings("__name__", "h")
	commit := func(from int) {
		t.Helper()
		var b actastore.Batch
		for i := from; i < from+3; i++ {
			ts := int64(1_700_000_000_000 + i*15_000)
			var sts []actastore.StartTime
			if i != 1 {
				sts = []actastore.StartTime{{T: ts, ST: 1_699_999_990_000 + int64(i)}}
			}
			b.Series = append(b.Series,
				actastore.SeriesData{Labels: c, Samples: []actastore.Sample{{T: ts, V: float64(i)}}, SampleStarts: sts},
				actastore.SeriesData{Labels: plain, Samples: []actastore.Sample{{T: ts, V: float64(i)}}},
				actastore.SeriesData{Labels: h, Histograms: []actastore.HistogramSample{{T: ts, H: &histogram.Histogram{Count: uint64(i), ZeroCount: uint64(i)}}},
					HistogramStarts: []actastore.StartTime{{T: ts, ST: 1_699_999_000_000}}})
		}
		if res, err := st.Commit(context.Background(), &b); err != nil || res.Rejected() != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	commit(0)
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	// Files with the column (c_total, h) and without it (plain) pass full
	// validation.
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*.acta"))
	if len(files) != 3 {
		t.Fatalf("series files %v", files)
	}
	for _, f := range files {
		if o, _ := runTool(t, bin, "validate", f, "--level", "full"); !strings.HasSuffix(strings.TrimSpace(o), ": valid (full)") {
			t.Fatalf("validate %s: %s", f, o)
		}
	}
	commit(3) // in the WAL only
	out, _ := runTool(t, bin, "query", "--data-dir", dir, "--json", `{__name__=~".+"}`)
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var ls map[string]string
		json.Unmarshal(m["labels"], &ls)
		stv, ok := m["st"]
		got[ls["__name__"]] = append(got[ls["__name__"]], fmt.Sprintf("%s:%s/%v", m["t"], stv, ok))
	}
	var wantC, wantPlain, wantH []string
	for i := range 6 {
		ts := 1_700_000_000_000 + i*15_000
		if i == 1 {
			wantC = append(wantC, fmt.Sprintf("%d:/false", ts))
		} else {
			wantC = append(wantC, fmt.Sprintf("%d:%d/true", ts, 1_699_999_990_000+i))
		}
		wantPlain = append(wantPlain, fmt.Sprintf("%d:/false", ts))
		wantH = append(wantH, fmt.Sprintf("%d:1699999000000/true", ts))
	}
	for name, want := range map[string][]string{"c_total": wantC, "plain": wantPlain, "h": wantH} {
		if fmt.Sprint(got[name]) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", name, got[name], want)
		}
	}

	// Compacted (the counter's values become int64), the files still
	// give the same output, validate, and a reader of the spec alone finds
	// the samples and start timestamps.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(48 * time.Hour)
	if st, err = actastore.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if res, err := st.Maintain(); err != nil || res.Compacted != 3 {
		t.Fatalf("maintenance %+v %v", res, err)
	}
	if out2, _ := runTool(t, bin, "query", "--data-dir", dir, "--json", `{__name__=~".+"}`); out2 != out {
		t.Fatalf("after compaction:\n%s\nbefore:\n%s", out2, out)
	}
	cFile, _ := filepath.Glob(filepath.Join(dir, "series", "*", "*.acta"))
	var specSts []actastore.StartTime
	var specSmps []sample
	for _, f := range cFile {
		if o, _ := runTool(t, bin, "validate", f, "--level", "full"); !strings.HasSuffix(strings.TrimSpace(o), ": valid (full)") {
			t.Fatalf("validate %s: %s", f, o)
		}
		r, err := acta.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		typ, id := r.Schema().Columns[1].Type.String(), r.Schema().ID
		r.Close()
		if sts := specStarts(t, f); sts != nil {
			specSts, specSmps = sts, specSamples(t, f)
			if typ != "int64" || id != 5 {
				t.Fatalf("compacted counter file: %s, schema %d", typ, id)
			}
		}
	}
	var wantSts []actastore.StartTime
	var wantSmps []sample
	for i := range 6 {
		ts := int64(1_700_000_000_000 + i*15_000)
		wantSmps = append(wantSmps, sample{T: ts, V: float64(i)})
		if i != 1 {
			wantSts = append(wantSts, actastore.StartTime{T: ts, ST: 1_699_999_990_000 + int64(i)})
		}
	}
	if !slices.Equal(specSts, wantSts) || !slices.Equal(specSmps, wantSmps) {
		t.Fatalf("spec reader: %v %v, want %v %v", specSmps, specSts, wantSmps, wantSts)
	}
}

// The start timestamp in the printed forms: JSON "st" after "t", text
// st=ms at the end; nothing for a sample without one.
func TestPrinterStartTimestamp(t *testing.T) {
	ls := labels.FromStrings("__name__", "c_total")
	fs := []actastore.Sample{{T: 1700000000123, V: 1}, {T: 1700000015123, V: 2}}
	sts := []actastore.StartTime{{T: 1700000015123, ST: 1699999999000}}
	for _, c := range []struct {
		p    printer
		want string
	}{
		{printer{json: true}, `{"labels":{"__name__":"c_total"},"t":1700000000123,"v":1,"bits":"0x3ff0000000000000"}
{"labels":{"__name__":"c_total"},"t":1700000015123,"st":1699999999000,"v":2,"bits":"0x4000000000000000"}
`},
		{printer{}, "  1700000000123\t2023-11-14T22:13:20.123Z\t1\t0x3ff0000000000000\n" +
			"  1700000015123\t2023-11-14T22:13:35.123Z\t2\t0x4000000000000000\tst=1699999999000\n"},
	} {
		var b strings.Builder
		c.p.w = &b
		c.p.mergedStarts(ls, fs, nil, sts, nil)
		if b.String() != c.want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), c.want)
		}
	}
}
