package actastore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

// fileLayout returns a series file's schema ID, value type and block count.
func fileLayout(t testing.TB, path string) (uint64, string, int) {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Schema().ID, r.Schema().Columns[1].Type.String(), len(r.Blocks())
}

// newestFixture is a store with daily files and a one-minute head age,
// and one series whose samples add appends (the clock set to each) and
// records in w.
type newestFixture struct {
	clk  *fakeClock
	dir  string
	opts Options
	s    *Store
	l    labels.Labels
	w    want
	add  func(ts int64, v float64)
}

func openNewestFixture(t *testing.T, name string) *newestFixture {
	nf := &newestFixture{clk: &fakeClock{}, dir: t.TempDir(), l: labels.FromStrings("__name__", name), w: want{}}
	nf.opts = rotOptions(nf.clk)
	nf.opts.Rotation.Period = 24 * time.Hour
	nf.opts.MaxHeadAge = time.Minute
	nf.s = openT(t, nf.dir, nf.opts)
	nf.add = func(ts int64, v float64) {
		t.Helper()
		nf.clk.Set(ts)
		mustAppend(t, nf.s, []SeriesSamples{{Labels: nf.l, Samples: []Sample{{T: ts, V: v}}}})
		nf.w.add(nf.l, Sample{T: ts, V: v})
	}
	return nf
}

// The newest file of an idle series is compacted too, and flushes then
// append to it in its value type; a value the type cannot hold makes the
// flush rewrite the file in a type that can.
func TestNewestFileCompactedAndAppended(t *testing.T) {
	nf := openNewestFixture(t, "newest_counter")
	clk, dir, opts, s, l, w, add := nf.clk, nf.dir, nf.opts, nf.s, nf.l, nf.w, nf.add
	for i := range 200 {
		add(day0+int64(i)*step15, float64(i*10))
		if i%20 == 19 {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ref := refOf(t, s, l)
	path := seriesFilePath(dir, ref, day0)
	if id, typ, blocks := fileLayout(t, path); id != seriesSchemaID || typ != "float64" || blocks != 10 {
		t.Fatalf("flushed file: schema %d, %s, %d blocks", id, typ, blocks)
	}
	// Busy (newest sample recent): left alone.
	if res, err := s.Maintain(); err != nil || res.Compacted != 0 {
		t.Fatalf("a live newest file was compacted: %+v %v", res, err)
	}
	clk.Set(day0 + 3*hour) // idle: nothing for over two head ages
	if res, err := s.Maintain(); err != nil || res.Compacted != 1 {
		t.Fatalf("idle newest file: %+v %v", res, err)
	}
	if id, typ, blocks := fileLayout(t, path); id != sealedSchemaID || typ != "int64" || blocks != 1 {
		t.Fatalf("compacted newest file: schema %d, %s, %d blocks", id, typ, blocks)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)

	step := func(what string, v float64, typ string, blocks int) {
		t.Helper()
		add(clk.Now().UnixMilli()+step15, v)
		if err := s.FlushAll(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, gotTyp, gotBlocks := fileLayout(t, path); gotTyp != typ || gotBlocks != blocks {
			t.Fatalf("%s: %s, %d blocks; want %s, %d", what, gotTyp, gotBlocks, typ, blocks)
		}
		checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
		if err := validateFile(path); err != nil {
			t.Fatal(err)
		}
	}
	step("an integer appends in type", 5000, "int64", 2)
	step("a stale marker rewrites with exceptions", staleNaN, "int64", 1)
	step("a decimal rewrites as decimal", 5000.5, "decimal64(18,1)", 1)
	step("a decimal appends in type", 5001.5, "decimal64(18,1)", 2)
	step("noise rewrites as float64", math.Pi, "float64", 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	nf.s = s // add writes to the reopened store
	defer s.Close()
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	// Sealed by the next day's samples; maintenance settles, and the
	// sealed file stays what the last rewrite made it.
	add(day0+day+hour, 1)
	add(day0+day+hour+step15, 2)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	maintainUntilIdle(t, s)
	if id, typ, blocks := fileLayout(t, path); id != sealedSchemaID || typ != "float64" || blocks != 1 {
		t.Fatalf("sealed file: schema %d, %s, %d blocks", id, typ, blocks)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	validateAll(t, dir)
}

// A live series' newest file (flushed every 20 rows, never idle) is
// rewritten each time flushes doubled what the last rewrite left in it:
// at 256, 512 and 1024 rows of 1200.
func TestNewestFileRewrittenAsItDoubles(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = 24 * time.Hour
	s := openT(t, dir, opts)
	defer s.Close()
	l := labels.FromStrings("__name__", "live_counter")
	w := want{}
	rewrites := 0
	var at []int
	for i := range 1200 {
		ts := day0 + int64(i)*step15
		clk.Set(ts)
		smp := Sample{T: ts, V: float64(i * 3)}
		mustAppend(t, s, []SeriesSamples{{Labels: l, Samples: []Sample{smp}}})
		w.add(l, smp)
		if i%20 == 19 {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
			res, err := s.Maintain()
			if err != nil {
				t.Fatal(err)
			}
			if res.Compacted > 0 {
				rewrites += res.Compacted
				at = append(at, i+1)
			}
		}
	}
	if rewrites != 3 || at[0] != 260 || at[1] != 520 || at[2] != 1040 {
		t.Errorf("rewrites after %v rows, want after 260, 520 and 1040", at)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	path := seriesFilePath(dir, refOf(t, s, l), day0)
	if id, typ, blocks := fileLayout(t, path); id != sealedSchemaID || typ != "int64" || blocks != 9 {
		t.Errorf("newest file: schema %d, %s, %d blocks (the rewrite's and 8 flushes since)", id, typ, blocks)
	}
}

// A flush that rewrites the newest file for a value its type does not
// hold, while compaction is rewriting the same file: each writes its own
// temporary file, so the flush's cannot be replaced by compaction's older
// version (which lacked the flushed samples: acknowledged data lost while
// the file still validated, seen as a rare TestCrashKill9Tiers failure).
func TestFlushRewriteRacingNewestCompaction(t *testing.T) {
	nf := openNewestFixture(t, "newest_race")
	clk, dir, opts, s, l, w, add := nf.clk, nf.dir, nf.opts, nf.s, nf.l, nf.w, nf.add
	for i := range 100 {
		add(day0+int64(i)*step15, float64(i*10))
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	clk.Set(day0 + 3*hour) // idle: the newest file is compacted, as int64
	if res, err := s.Maintain(); err != nil || res.Compacted != 1 {
		t.Fatalf("idle newest file: %+v %v", res, err)
	}
	path := seriesFilePath(dir, refOf(t, s, l), day0)
	if _, typ, _ := fileLayout(t, path); typ != "int64" {
		t.Fatalf("compacted newest file is %s, want int64", typ)
	}
	add(day0+3*hour, 5000) // appended in type: two blocks, no longer final
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	add(day0+3*hour+step15, 0.5) // int64 cannot hold it: the flush rewrites the file

	ms := seriesOf(s, l)
	written := make(chan struct{})
	compacted := make(chan error, 1)
	testHookSealedSwap = func(int) { close(written) }
	testHookFlushRewrite = func() {
		// The flush's new version is written; compaction now writes its
		// own of the same file (from what the file held before the flush)
		// and waits for the flush lock.
		go func() {
			_, err := rewriteSealed(s, floats, ms, []int64{day0}, true, rotation.CompactOptions{})
			compacted <- err
		}()
		select {
		case <-written:
		case <-time.After(10 * time.Second):
			t.Error("compaction never wrote its version")
		}
	}
	defer func() { testHookSealedSwap, testHookFlushRewrite = nil, nil }()
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := <-compacted; !errors.Is(err, errStale) {
		t.Fatalf("compaction racing the flush: %v, want errStale", err)
	}
	if _, typ, _ := fileLayout(t, path); typ != "decimal64(18,1)" {
		t.Errorf("after the flush's rewrite the file is %s, want decimal64(18,1)", typ)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if err := validateFile(path); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, dir, opts)
	defer s.Close()
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}
