package actastore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
)

// goldenNoStarts writes, in a fresh store, what a sender without start
// timestamps sends (a counter and a gauge of floats, a histogram), through
// flushes, a newest-file rewrite and compaction, and returns the series
// files' bytes by name, their file IDs (random per file, Acta v0.2 §5) and
// the prologue CRC over them zeroed.
func goldenNoStarts(t *testing.T) map[string][]byte {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = 24 * time.Hour
	s := openT(t, dir, opts)
	defer s.Close()
	c, g, h := labels.FromStrings("__name__", "golden_total"), labels.FromStrings("__name__", "golden_gauge"), labels.FromStrings("__name__", "golden_hist")
	for d := range int64(2) {
		for i := range 90 {
			ts := day0 + d*day + int64(i)*step15
			clk.Set(ts)
			v := 1.25 * float64(i%7)
			if i == 50 {
				v = staleNaN
			}
			hh := &histogram.Histogram{Schema: 2, Count: uint64(i + 2), Sum: float64(i) / 3, ZeroThreshold: 0.001, ZeroCount: 2,
				PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []int64{int64(i)}}
			b := Batch{Series: []SeriesData{
				{Labels: c, Samples: []Sample{{T: ts, V: float64(d*1000 + int64(i))}}},
				{Labels: g, Samples: []Sample{{T: ts, V: v}}},
				{Labels: h, Histograms: []HistogramSample{{T: ts, H: hh}}},
			}}
			if res, err := s.Commit(ctx, &b); err != nil || res.Rejected() != 0 {
				t.Fatalf("%+v %v", res, err)
			}
			if i%30 == 29 {
				if err := s.FlushAll(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	clk.Set(day0 + 3*day)
	maintainUntilIdle(t, s)
	// The newest files are compacted too (idle); one more flush appends to
	// the gauge's in its type, the next rewrites it (noise).
	for i, v := range []float64{2.5, 0.1234567} {
		ts := day0 + 3*day + int64(i)*step15
		clk.Set(ts)
		b := Batch{Series: []SeriesData{{Labels: g, Samples: []Sample{{T: ts, V: v}}}}}
		if _, err := s.Commit(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]byte{}
	for _, sub := range []string{seriesDirName, histDirName} {
		paths, _ := filepath.Glob(filepath.Join(dir, sub, "*", "*.acta"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			clear(b[24:40]) // file ID
			clear(b[60:64]) // prologue CRC
			out[sub+"-"+filepath.Base(p)] = b
		}
	}
	return out
}

// Files of a sender without start timestamps are byte for byte what the
// store wrote before it kept any (testdata/no-start-times, written by the
// commit before them with ACTA_WRITE_GOLDEN set), file IDs aside.
func TestNoStartTimesFilesUnchanged(t *testing.T) {
	got := goldenNoStarts(t)
	golden := filepath.Join("testdata", "no-start-times")
	if os.Getenv("ACTA_WRITE_GOLDEN") != "" {
		os.MkdirAll(golden, 0o755)
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(golden, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want, _ := filepath.Glob(filepath.Join(golden, "*.acta"))
	if len(want) != len(got) || len(want) == 0 {
		t.Fatalf("%d files written, %d golden", len(got), len(want))
	}
	for _, p := range want {
		w, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := got[filepath.Base(p)]; !ok || !bytes.Equal(g, w) {
			t.Errorf("%s: %d bytes written differ from the %d golden ones (present %v)", filepath.Base(p), len(g), len(w), ok)
		}
	}
}
