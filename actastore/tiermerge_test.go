package actastore

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

const day = 24 * hour

var tierShapes = []struct {
	name string
	typ  string // the value type of its sealed files
	val  func(r *rand.Rand, k int) float64
}{
	{"counter", "int64", func(r *rand.Rand, k int) float64 { return float64(k*7 + r.IntN(3)) }},
	{"gauge_2dp", "decimal64(18,2)", func(r *rand.Rand, k int) float64 { return float64(r.IntN(10000)) / 100 }},
	{"noise", "float64", func(r *rand.Rand, k int) float64 { return r.NormFloat64() }},
	{"counter_stale", "int64", func(r *rand.Rand, k int) float64 {
		if k%500 == 499 {
			return staleNaN
		}
		return float64(k)
	}},
}

func tierOptions(clk *fakeClock) Options {
	o := rotOptions(clk)
	o.Rotation.Period = 24 * time.Hour
	o.Compaction.Tiers = rotation.Tiers{7 * 24 * time.Hour, 28 * 24 * time.Hour}
	return o
}

// ingestDays appends one sample per shape every step from from to to,
// flushing every flushEvery samples, and returns what was sent.
func ingestDays(t testing.TB, s *Store, clk *fakeClock, from, to, step int64, flushEvery int) want {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 6))
	w := want{}
	k := 0
	for ts := from; ts < to; ts += step {
		clk.Set(ts)
		var batch []SeriesSamples
		for _, sh := range tierShapes {
			l := labels.FromStrings("__name__", "tier_"+sh.name)
			smp := Sample{T: ts, V: sh.val(r, k)}
			batch = append(batch, SeriesSamples{Labels: l, Samples: []Sample{smp}})
			w.add(l, smp)
		}
		mustAppend(t, s, batch)
		if k++; k%flushEvery == 0 {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	return w
}

// maintainUntilIdle runs passes until one merges and compacts nothing.
func maintainUntilIdle(t testing.TB, s *Store) (merged, compacted int) {
	t.Helper()
	for range 10 {
		res, err := s.Maintain()
		if err != nil || res.Errors > 0 {
			t.Fatalf("maintenance %+v: %v", res, err)
		}
		merged += res.Merged
		compacted += res.Compacted
		if res.Merged == 0 && res.Compacted == 0 {
			return merged, compacted
		}
	}
	t.Fatal("maintenance never settled")
	return
}

// checkFiles checks the on-disk sequence of every series: each file's
// samples below the next file's start, no timestamp in two files, sealed
// files written by compaction or a merge, no marker or temporary file
// left. It returns the files per series and the value type of each.
func checkFiles(t testing.TB, dir string, final bool) map[uint64][]string {
	t.Helper()
	out := map[uint64][]string{}
	root := filepath.Join(dir, seriesDirName)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, mergeMarkerExt) || strings.HasSuffix(name, tmpSuffix) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := map[uint64]bool{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if ref, _, ok := parseSeriesFileName(d.Name()); ok {
				refs[ref] = true
			}
		}
		return nil
	})
	for ref := range refs {
		starts := seriesFiles(t, dir, ref)
		seen := map[int64]bool{}
		for i, st := range starts {
			p := seriesFilePath(dir, ref, st)
			r, err := acta.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			typ := r.Schema().Columns[1].Type.String()
			if final && i < len(starts)-1 && r.Schema().ID != sealedSchemaID {
				t.Errorf("%s: sealed file with schema ID %d", p, r.Schema().ID)
			}
			r.Close()
			out[ref] = append(out[ref], typ)
			for _, smp := range readBackT(t, p) {
				if seen[smp.T] {
					t.Errorf("%s: timestamp %d is in two files", p, smp.T)
				}
				seen[smp.T] = true
				if i < len(starts)-1 && smp.T >= starts[i+1] {
					t.Errorf("%s: sample %d at or after the next file's start %d", p, smp.T, starts[i+1])
				}
			}
			if err := validateFile(p); err != nil {
				t.Error(err)
			}
		}
	}
	return out
}

// 45 days of four shapes with day files: week and month merges happen,
// every value comes back bit for bit, the value types are the narrowest,
// and a restart finds the same.
func TestTierMerges(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierOptions(clk))
	from := day0 - 45*day
	w := ingestDays(t, s, clk, from, day0+3*hour, 10*60*1000, 500)
	merged, _ := maintainUntilIdle(t, s)
	if merged == 0 {
		t.Fatal("nothing merged")
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	for _, sh := range tierShapes {
		ref := refOf(t, s, labels.FromStrings("__name__", "tier_"+sh.name))
		starts := seriesFiles(t, dir, ref)
		// 46 day files become a few month and week files.
		if len(starts) > 6 {
			t.Errorf("%s: %d files after merging: %v", sh.name, len(starts), starts)
		}
	}
	types := checkFiles(t, dir, true)
	for _, sh := range tierShapes {
		ref := refOf(t, s, labels.FromStrings("__name__", "tier_"+sh.name))
		ts := types[ref]
		for _, typ := range ts[:len(ts)-1] {
			if typ != sh.typ {
				t.Errorf("%s: sealed value type %s, want %s", sh.name, typ, sh.typ)
			}
		}
	}
	// Ranges inside merged files read the same as from the sent samples.
	for _, rng := range [][2]int64{{from + 3*day, from + 3*day + 5*hour}, {from + 20*day, from + 36*day}, {day0 - hour, day0 + hour}} {
		got := selectAll(t, s, rng[0], rng[1])
		exp := want{}
		for k, smps := range w {
			for _, smp := range smps {
				if smp.T >= rng[0] && smp.T <= rng[1] {
					exp[k] = append(exp[k], smp)
				}
			}
		}
		checkWant(t, got, exp)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, tierOptions(clk))
	defer s.Close()
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	// Only the newest files, flushed and not rewritten before (18 rows,
	// under minNewestRows), are compacted once after Open: the sealed ones
	// were final.
	if m, c := maintainUntilIdle(t, s); m != 0 || c != len(tierShapes) {
		t.Errorf("after a restart %d merges, %d compactions; want 0 and %d", m, c, len(tierShapes))
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

// A deletion that rewrites one of a merge's files while the merge writes
// its new file makes the merge stale: the deleted samples stay deleted,
// and the next pass merges what is left.
func TestMergeStaleAfterDelete(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierOptions(clk))
	defer s.Close()
	from := day0 - 3*day // Thursday to Sunday: one week window
	if (from/day+4)%7 != 4 {
		t.Fatalf("from is not a Thursday")
	}
	w := ingestDays(t, s, clk, from, day0+hour, 15*60*1000, 200)
	dmin, dmax := from+day+hour, from+day+3*hour
	m := labels.MustNewMatcher(labels.MatchEqual, "__name__", "tier_counter")
	deleted := false
	testHookSealedSwap = func(n int) {
		if n > 1 && !deleted {
			deleted = true
			if _, err := s.DeleteSeries(context.Background(), dmin, dmax, m); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	}
	defer func() { testHookSealedSwap = nil }()
	res, err := s.Maintain()
	if err != nil {
		t.Fatal(err)
	}
	if !deleted {
		t.Fatal("the hook never ran")
	}
	k := labels.FromStrings("__name__", "tier_counter").String()
	var kept []Sample
	for _, smp := range w[k] {
		if smp.T < dmin || smp.T > dmax {
			kept = append(kept, smp)
		}
	}
	w[k] = kept
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	t.Logf("first pass: %+v", res)
	maintainUntilIdle(t, s)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	ref := refOf(t, s, labels.FromStrings("__name__", "tier_counter"))
	if n := len(seriesFiles(t, dir, ref)); n != 2 {
		t.Errorf("%d files, want the week file and the newest", n)
	}
	checkFiles(t, dir, true)
}

// A crash at every step of the merge protocol: before the commit, after
// it, after the rename, after the deletions. Each copy, opened as a store,
// holds every sample exactly once, in files that keep the sequence rules,
// with no marker or temporary file left.
func TestMergeCrashAtEveryStep(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierOptions(clk))
	from := day0 - 6*day // Monday: two week windows
	w := ingestDays(t, s, clk, from, day0+hour, 15*60*1000, 200)
	snaps := map[string]string{}
	snap := func(step string) {
		if _, ok := snaps[step]; ok {
			return
		}
		d := t.TempDir()
		copyDir(t, dir, d)
		snaps[step] = d
	}
	testHookSealedSwap = func(n int) {
		if n > 1 {
			snap("written")
		}
	}
	testHookMerge = snap
	defer func() { testHookSealedSwap, testHookMerge = nil, nil }()
	if m, _ := maintainUntilIdle(t, s); m == 0 {
		t.Fatal("nothing merged")
	}
	s.Close()
	for _, step := range []string{"written", "committed", "renamed", "deleted"} {
		d, ok := snaps[step]
		if !ok {
			t.Fatalf("no crash copy at %q", step)
		}
		markers, _ := filepath.Glob(filepath.Join(d, seriesDirName, "*", "*"+mergeMarkerExt))
		if (step == "written") == (len(markers) > 0) {
			t.Errorf("%s: %d markers in the copy", step, len(markers))
		}
		cs := openT(t, d, tierOptions(clk))
		checkWant(t, selectAll(t, cs, math.MinInt64, math.MaxInt64), w)
		checkFiles(t, d, false)
		// The store carries on from there: merging again settles.
		maintainUntilIdle(t, cs)
		checkWant(t, selectAll(t, cs, math.MinInt64, math.MaxInt64), w)
		cs.Close()
		checkFiles(t, d, true)
	}
}

// A read-only reader of a directory left mid-merge (marker, merged file
// renamed, replaced files not yet deleted) reads every sample once.
func TestReadOnlyMidMerge(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierOptions(clk))
	from := day0 - 3*day
	w := ingestDays(t, s, clk, from, day0+hour, 15*60*1000, 200)
	var snapDir string
	testHookMerge = func(step string) {
		if step == "renamed" && snapDir == "" {
			snapDir = t.TempDir()
			copyDir(t, dir, snapDir)
		}
	}
	defer func() { testHookMerge = nil }()
	maintainUntilIdle(t, s)
	s.Close()
	markers, _ := filepath.Glob(filepath.Join(snapDir, seriesDirName, "*", "*"+mergeMarkerExt))
	if len(markers) != 1 {
		t.Fatalf("%d markers in the copy", len(markers))
	}
	mref, ma, _, ok := parseMergeMarkerName(filepath.Base(markers[0]))
	if !ok {
		t.Fatal(markers[0])
	}
	if n := len(seriesFiles(t, snapDir, mref)); n < 3 {
		t.Fatalf("the copy has %d files of the merging series: the replaced ones should still be there", n)
	}
	ro, err := OpenReadOnly(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range tierShapes {
		l := labels.FromStrings("__name__", "tier_"+sh.name)
		ref := refOf(t, s, l)
		got, err := ro.Samples(ref, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if !equalBits(got, w[l.String()]) {
			t.Fatalf("%s: read-only read differs (%d vs %d samples)", sh.name, len(got), len(w[l.String()]))
		}
		if ref != mref {
			continue
		}
		files, err := ro.ListFiles(ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 2 || files[0].Start != ma { // Thursday (merged) and Sunday
			t.Errorf("%s: read-only listing mid-merge %+v, want the merged file and the newest", sh.name, files)
		}
	}
}
