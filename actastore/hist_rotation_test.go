package actastore

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/rotation"
)

func histRotOptions(clk *fakeClock) Options {
	return Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour},
		Retention: rotation.Retention{MaxAge: 24 * time.Hour}, Compaction: CompactionOptions{Disabled: true}, Logger: quiet}
}

// since keeps the samples of each case at or after t.
func since(cases []histtest.Series, t int64) []histtest.Series {
	var out []histtest.Series
	for _, c := range cases {
		d := c
		d.Samples = nil
		for _, x := range c.Samples {
			if x.T >= t {
				d.Samples = append(d.Samples, x)
			}
		}
		out = append(out, d)
	}
	return out
}

func histStarts(s *Store, lset labels.Labels) []int64 {
	ms := seriesOf(s, lset)
	if ms == nil {
		return nil
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.hists() == nil {
		return nil
	}
	return append([]int64(nil), ms.hists().files()...)
}

// seriesOf is the series of lset, or nil.
func seriesOf(s *Store, lset labels.Labels) *memSeries {
	s.reg.mu.RLock()
	defer s.reg.mu.RUnlock()
	return s.reg.lookupLocked(hashLabels(appendCanonicalLabels(nil, lset)), lset)
}

func countHistFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, histDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if _, _, ok := parseSeriesFileName(d.Name()); ok {
				n++
			}
		}
		return nil
	})
	return n
}

// TestHistogramFilesRotateAndExpire: histogram files rotate at a period
// boundary, a Select across both files returns every histogram bit for
// bit, retention by age deletes the expired file (its histograms leave
// Select), then the rest, and the histogram-only series leave the index,
// for good after a restart.
func TestHistogramFilesRotateAndExpire(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{}
	boundary := day0 + 5*hour
	t0 := boundary - 40_000 // samples every 15 s: 3 before the boundary, 3 after
	clk.Set(t0)
	s := openT(t, dir, histRotOptions(clk))
	cases := histtest.Cases(t0)
	if _, err := appendExtras(context.Background(), s, histBatch(cases)); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	files, before, onlyBefore, two := 0, 0, 0, 0
	for _, c := range cases {
		var want []int64
		if c.Samples[0].T < boundary {
			want = append(want, boundary-hour)
			before++
		}
		if c.Samples[len(c.Samples)-1].T >= boundary {
			want = append(want, boundary)
		} else {
			onlyBefore++
		}
		if len(want) == 2 {
			two++
		}
		files += len(want)
		got := histStarts(s, labels.FromStrings("__name__", c.Name, "job", "j"))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: histogram files start at %v, want %v", c.Name, got, want)
		}
	}
	if two < len(cases)/2 {
		t.Fatalf("only %d of %d cases span the boundary", two, len(cases))
	}
	checkHistograms(t, "two files", s, cases)
	if n := countHistFiles(t, dir); n != files {
		t.Fatalf("%d histogram files, want %d", n, files)
	}

	// The older file's samples are all older than the boundary: past
	// max_age once the clock passes boundary+24h; the newer file stays.
	clk.Set(boundary + 24*hour + 1)
	res, err := s.Maintain()
	if err != nil || res.FilesDeleted != before || res.SeriesRemoved != onlyBefore {
		t.Fatalf("first pass: %+v %v, want %d files deleted, %d series removed", res, err, before, onlyBefore)
	}
	checkHistogramSamples(t, "after the older files expired", s, since(cases, boundary))
	if n := countHistFiles(t, dir); n != files-before {
		t.Fatalf("%d histogram files, want %d", n, files-before)
	}

	// Everything expires: the series have neither files nor heads and go.
	clk.Set(boundary + 25*hour)
	res, err = s.Maintain()
	if err != nil || res.FilesDeleted != files-before || res.SeriesRemoved != len(cases)-onlyBefore {
		t.Fatalf("second pass: %+v %v", res, err)
	}
	checkGone := func(what string, s *Store) {
		t.Helper()
		set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
		if set.Next() {
			t.Fatalf("%s: series %s still selected", what, set.At().Labels())
		}
		if vs, err := s.LabelValues(context.Background(), "__name__"); err != nil || len(vs) != 0 {
			t.Fatalf("%s: label values %v %v", what, vs, err)
		}
	}
	checkGone("expired", s)
	if n := countHistFiles(t, dir); n != 0 {
		t.Fatalf("%d histogram files left", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, histRotOptions(clk))
	defer s.Close()
	checkGone("after restart", s)
}

// TestHistogramsOutliveFloatFiles: a series with float and histogram
// files keeps its histograms (and its place in the index) when only its
// float files expire.
func TestHistogramsOutliveFloatFiles(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{}
	clk.Set(day0)
	s := openT(t, dir, histRotOptions(clk))
	c := histtest.Cases(day0 + 10*hour)[:1]
	lset := labels.FromStrings("__name__", c[0].Name, "job", "j")
	if _, err := s.Append(context.Background(), []SeriesSamples{{Labels: lset, Samples: []Sample{{T: day0, V: 1}, {T: day0 + step15, V: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := appendExtras(context.Background(), s, histBatch(c)); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	clk.Set(day0 + 24*hour + hour) // floats (day0) expired, histograms (day0+10h) not
	res, err := s.Maintain()
	if err != nil || res.FilesDeleted != 1 || res.SeriesRemoved != 0 {
		t.Fatalf("pass: %+v %v", res, err)
	}
	check := func(what string, s *Store) {
		t.Helper()
		set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
		if !set.Next() {
			t.Fatalf("%s: series gone: %v", what, set.Err())
		}
		if it := set.At().Iterator(); it.Next() {
			t.Fatalf("%s: floats still selected", what)
		}
		checkHistograms(t, what, s, c)
	}
	check("floats expired", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, histRotOptions(clk))
	defer s.Close()
	check("after restart", s)
}

// TestLegacyHistogramFile: a histogram file named <ref>.acta (before
// rotation) is renamed to <ref>-<first sample>.acta at open, read as
// before, and later samples in later periods start new files after it.
func TestLegacyHistogramFile(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{}
	clk.Set(day0)
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Logger: quiet} // no rotation
	s := openT(t, dir, opts)
	t0 := day0 + 10*hour + 10_000 // samples at +10 s, +25 s, ... every 15 s
	all := histtest.Cases(t0)[:1]
	first := since(all, 0)
	first[0].Samples = first[0].Samples[:3] // +10 s to +40 s
	if _, err := appendExtras(context.Background(), s, histBatch(first)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lset := labels.FromStrings("__name__", all[0].Name, "job", "j")
	// Rename the file as the store named it before.
	ents, _ := filepath.Glob(filepath.Join(dir, histDirName, "*", "*-*.acta"))
	if len(ents) != 1 {
		t.Fatalf("files %v", ents)
	}
	ref, start, _ := parseSeriesFileName(filepath.Base(ents[0]))
	if start != first[0].Samples[0].T {
		t.Fatalf("start %d, want %d", start, first[0].Samples[0].T)
	}
	if err := os.Rename(ents[0], filepath.Join(dir, histDirName, shardName(ref), fmt.Sprintf("%016x.acta", ref))); err != nil {
		t.Fatal(err)
	}
	opts.Rotation.Period = 30 * time.Second // the file spans two periods
	s = openT(t, dir, opts)
	defer s.Close()
	checkHistogramSamples(t, "legacy", s, first)
	rest := since(all, all[0].Samples[3].T) // +55 s (the legacy file's newest period), +70 s, +85 s
	if _, err := appendExtras(context.Background(), s, histBatch(rest)); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	checkHistograms(t, "legacy and new", s, all)
	got := histStarts(s, lset)
	if want := []int64{t0, t0 + 50_000}; !slices.Equal(got, want) {
		t.Fatalf("starts %v, want %v: +55 s joins the legacy file, +70 s starts the next period's", got, want)
	}
}

// TestHistogramFilesSizeCap: the size cap counts histogram files and
// deletes sealed ones with the float series' sealed files; newest files
// of both kinds stay.
func TestHistogramFilesSizeCap(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{}
	boundary := day0 + 5*hour
	clk.Set(boundary + hour)
	opts := histRotOptions(clk)
	opts.Retention = rotation.Retention{MaxBytes: 1}
	s := openT(t, dir, opts)
	defer s.Close()
	c := histtest.Cases(boundary - 40_000)[:1]
	if len(c[0].Samples) < 6 {
		t.Fatalf("case %s has %d samples", c[0].Name, len(c[0].Samples))
	}
	fl := labels.FromStrings("__name__", "f", "job", "j")
	if _, err := s.Append(context.Background(), []SeriesSamples{{Labels: fl, Samples: []Sample{{T: boundary - 1000, V: 1}, {T: boundary, V: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := appendExtras(context.Background(), s, histBatch(c)); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if n := countHistFiles(t, dir); n != 2 {
		t.Fatalf("%d histogram files, want 2", n)
	}
	res, err := s.Maintain()
	if err != nil || res.FilesDeleted != 2 || res.SeriesRemoved != 0 {
		t.Fatalf("pass: %+v %v", res, err)
	}
	if got := histStarts(s, labels.FromStrings("__name__", c[0].Name, "job", "j")); !slices.Equal(got, []int64{boundary}) {
		t.Fatalf("histogram files %v, want [%d]", got, boundary)
	}
	checkHistogramSamples(t, "after the size cap", s, since(c, boundary))
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "f"))
	var ts []int64
	for set.Next() {
		for it := set.At().Iterator(); it.Next(); {
			t, _ := it.At()
			ts = append(ts, t)
		}
	}
	if !slices.Equal(ts, []int64{boundary}) {
		t.Fatalf("floats at %v, want [%d]", ts, boundary)
	}
}
