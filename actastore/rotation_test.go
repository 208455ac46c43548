package actastore

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/rotation"
	"github.com/prometheus/prometheus/model/labels"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeClock is the injectable clock of these tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(ms int64)   { c.mu.Lock(); c.t = time.UnixMilli(ms); c.mu.Unlock() }

// day0 is 2026-11-29 00:00 UTC in ms: period boundaries fall on it.
const (
	day0   = int64(1795910400000)
	hour   = int64(time.Hour / time.Millisecond)
	step15 = int64(15000)
)

func rotOptions(clk *fakeClock) Options {
	return Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: 2 * time.Hour}, Logger: quiet}
}

// ingest appends samples of each series in flushes of n (one block each),
// as 15 s scrapes with max_head_age 5m leave them.
func ingest(t testing.TB, s *Store, clk *fakeClock, lsets []labels.Labels, from, to int64, n int, val func(i int, t int64) float64) want {
	t.Helper()
	w := want{}
	var pending int
	for ts := from; ts < to; ts += step15 {
		clk.Set(ts)
		var batch []SeriesSamples
		for i, l := range lsets {
			smp := Sample{T: ts, V: val(i, ts)}
			batch = append(batch, SeriesSamples{Labels: l, Samples: []Sample{smp}})
			w.add(l, smp)
		}
		mustAppend(t, s, batch)
		if pending++; pending == n {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
			pending = 0
		}
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	return w
}

// seriesFiles lists the start times of ref's files on disk.
func seriesFiles(t testing.TB, dir string, ref uint64) []int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, seriesDirName, shardName(ref)))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range ents {
		if r, st, ok := parseSeriesFileName(e.Name()); ok && r == ref {
			out = append(out, st)
		}
	}
	slices.Sort(out)
	return out
}

func refOf(t testing.TB, s *Store, l labels.Labels) uint64 {
	t.Helper()
	ms := seriesOf(s, l)
	if ms == nil {
		t.Fatalf("no series %s", l)
	}
	return ms.ref
}

// fileBounds returns the min and max timestamp in a series file.
func fileBounds(t testing.TB, path string) (lo, hi int64) {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lo, hi = math.MaxInt64, math.MinInt64
	for _, b := range r.Blocks() {
		lo, hi = min(lo, b.Min), max(hi, b.Max)
	}
	return lo, hi
}

func TestRotationAtPeriodBoundaries(t *testing.T) {
	clk := &fakeClock{}
	dir, refDir := t.TempDir(), t.TempDir()
	s := openT(t, dir, rotOptions(clk))
	ref := openT(t, refDir, Options{Now: clk.Now, MaintenanceInterval: -1, Logger: quiet}) // no rotation
	lsets := []labels.Labels{seriesLabels(1), seriesLabels(2)}
	gauge := func(i int, ts int64) float64 { return float64(ts%7919) / 7 * float64(i+1) }
	// 01:30 to 04:30 UTC: crosses the 02:00 and 04:00 boundaries.
	w := ingest(t, s, clk, lsets, day0+90*60000, day0+270*60000, 20, gauge)
	ingest(t, ref, clk, lsets, day0+90*60000, day0+270*60000, 20, gauge)

	r := refOf(t, s, lsets[0])
	if got, exp := seriesFiles(t, dir, r), []int64{day0, day0 + 2*hour, day0 + 4*hour}; !slices.Equal(got, exp) {
		t.Fatalf("files %v, want %v (period starts)", got, exp)
	}
	// Each file holds exactly its period: the sample at 02:00:00.000 is the
	// first of the 02:00 file.
	for i, exp := range [][2]int64{{day0 + 90*60000, day0 + 2*hour - step15}, {day0 + 2*hour, day0 + 4*hour - step15}, {day0 + 4*hour, day0 + 270*60000 - step15}} {
		st := []int64{day0, day0 + 2*hour, day0 + 4*hour}[i]
		if lo, hi := fileBounds(t, seriesFilePath(dir, r, st)); lo != exp[0] || hi != exp[1] {
			t.Errorf("file %d holds [%d, %d], want [%d, %d]", i, lo, hi, exp[0], exp[1])
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	// Ranges within one file, across a boundary, and on it.
	for _, rg := range [][2]int64{{day0 + 2*hour, day0 + 2*hour}, {day0 + 110*60000, day0 + 130*60000}, {day0, day0 + 5*hour}, {day0 + 3*hour, day0 + 3*hour + 60000}} {
		checkWant(t, selectAll(t, s, rg[0], rg[1]), selectAll(t, ref, rg[0], rg[1]))
	}
	// Pruning by names: a range inside 02:00-04:00 opens the 02:00 file
	// only (the 04:00 file's minimum is known: it took no older sample).
	ms := s.reg.byRef.get(r)
	ms.mu.Lock()
	spans := filesInRange(&ms.floats, day0+3*hour, day0+3*hour+60000)
	ms.mu.Unlock()
	if len(spans) != 1 || spans[0].start != day0+2*hour {
		t.Errorf("files opened for 03:00-03:01: %+v", spans)
	}

	// An out-of-order sample of the 00:00 period goes to the newest file,
	// whose known minimum drops so the range still finds it.
	late := Sample{T: day0 + 105*60000 + 7, V: -0.0}
	mustAppend(t, s, []SeriesSamples{{Labels: lsets[0], Samples: []Sample{late}}})
	mustAppend(t, ref, []SeriesSamples{{Labels: lsets[0], Samples: []Sample{late}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := ref.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if got := seriesFiles(t, dir, r); len(got) != 3 {
		t.Fatalf("out-of-order sample made a file: %v", got)
	}
	if lo, _ := fileBounds(t, seriesFilePath(dir, r, day0+4*hour)); lo != late.T {
		t.Errorf("newest file's minimum %d, want the late sample %d", lo, late.T)
	}
	rg := [2]int64{day0 + 104*60000, day0 + 106*60000}
	checkWant(t, selectAll(t, s, rg[0], rg[1]), selectAll(t, ref, rg[0], rg[1]))

	// After a restart nothing is known of the minima: same answers.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, rotOptions(clk))
	defer s.Close()
	defer ref.Close()
	for _, rg := range [][2]int64{rg, {math.MinInt64, math.MaxInt64}, {day0 + 3*hour, day0 + 3*hour + 60000}} {
		checkWant(t, selectAll(t, s, rg[0], rg[1]), selectAll(t, ref, rg[0], rg[1]))
	}
	validateAll(t, dir)
}

func TestRotationBySize(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{MaxFileBytes: 8 << 10}, Logger: quiet}
	s := openT(t, dir, opts)
	l := seriesLabels(3)
	w := ingest(t, s, clk, []labels.Labels{l}, day0, day0+6*hour, 20, func(_ int, ts int64) float64 { return float64(ts) / 1000 })
	r := refOf(t, s, l)
	starts := seriesFiles(t, dir, r)
	if len(starts) < 3 {
		t.Fatalf("only %d files for 1440 samples in 20-row blocks with an 8 KiB limit", len(starts))
	}
	for i, st := range starts {
		p := seriesFilePath(dir, r, st)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := fileBounds(t, p)
		if lo != st {
			t.Errorf("file %d starts at %d but holds %d first", i, st, lo)
		}
		if i+1 < len(starts) {
			// Sealed at the first flush after reaching the limit: at least
			// the limit, at most one block more.
			if fi.Size() < 8<<10 || fi.Size() > 8<<10+1024 {
				t.Errorf("sealed file %d is %d bytes", i, fi.Size())
			}
			if hi >= starts[i+1] || starts[i+1] != hi+step15 {
				t.Errorf("file %d ends at %d, next starts at %d", i, hi, starts[i+1])
			}
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart without the flush state (crash) learns the newest sample
	// from the file and keeps rotating correctly.
	os.Remove(filepath.Join(dir, cleanMarkerName))
	s = openT(t, dir, opts)
	defer s.Close()
	w2 := ingest(t, s, clk, []labels.Labels{l}, day0+6*hour, day0+7*hour, 20, func(_ int, ts int64) float64 { return float64(ts) / 1000 })
	w[l.String()] = append(w[l.String()], w2[l.String()]...)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	validateAll(t, dir)
}

// Compaction inside the store: every sealed file is rewritten, the newest
// is left alone, queries return the same bits, every file validates.
func TestStoreCompactsSealedFiles(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = 24 * time.Hour
	s := openT(t, dir, opts)
	defer s.Close()
	counter := func(i int, ts int64) float64 { return float64((ts - day0) / 1000 * int64(i+1)) }
	lsets := []labels.Labels{seriesLabels(4), seriesLabels(5)}
	w := ingest(t, s, clk, lsets, day0, day0+28*hour, 20, counter) // one sealed day each
	before := selectAll(t, s, math.MinInt64, math.MaxInt64)
	checkWant(t, before, w)
	r := refOf(t, s, lsets[0])
	sealed, newest := seriesFilePath(dir, r, day0), seriesFilePath(dir, r, day0+24*hour)
	nb, _ := os.Stat(newest)
	res, err := s.Maintain()
	if err != nil {
		t.Fatal(err)
	}
	// Both sealed files, and both newest ones: flushes appended 960 rows
	// to each, past minNewestRows.
	if res.Compacted != 4 || res.Errors != 0 || res.BytesAfter >= res.BytesBefore {
		t.Fatalf("maintenance %+v", res)
	}
	t.Logf("one day of a 15 s counter, 20-row flushes, and 4 hours of the next: %.2f -> %.2f allocated bytes/sample",
		float64(res.BytesBefore)/2/(5760+960), float64(res.BytesAfter)/2/(5760+960))
	if ok, err := rotation.IsCompact(sealed, 65536); err != nil || !ok {
		t.Errorf("sealed file not compact: %v %v", ok, err)
	}
	if na, _ := os.Stat(newest); na.Size() >= nb.Size() {
		t.Errorf("the newest file was not rewritten smaller: %d -> %d bytes", nb.Size(), na.Size())
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), before)
	validateAll(t, dir)
	// A second pass has nothing to do.
	if res, err := s.Maintain(); err != nil || res.Compacted != 0 {
		t.Fatalf("second pass %+v %v", res, err)
	}
}

func TestRetentionByAge(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour},
		Retention: rotation.Retention{MaxAge: 3 * time.Hour}, Compaction: CompactionOptions{Disabled: true}, Logger: quiet}
	s := openT(t, dir, opts)
	a, b := seriesLabels(10), seriesLabels(11)
	val := func(i int, ts int64) float64 { return float64(ts%1000) + float64(i) }
	wa := ingest(t, s, clk, []labels.Labels{a, b}, day0, day0+2*hour, 20, val) // b stops at 02:00
	wb := ingest(t, s, clk, []labels.Labels{a}, day0+2*hour, day0+6*hour, 20, val)
	ra, rb := refOf(t, s, a), refOf(t, s, b)
	clk.Set(day0 + 6*hour) // cutoff 03:00
	res, err := s.Maintain()
	if err != nil {
		t.Fatal(err)
	}
	// a: files 00,01,02 end at 01,02,03 <= cutoff: gone; 03,04,05 stay.
	// b: 00 (sealed), 01 (newest, last sample 01:59:45): both gone.
	if got, exp := seriesFiles(t, dir, ra), []int64{day0 + 3*hour, day0 + 4*hour, day0 + 5*hour}; !slices.Equal(got, exp) {
		t.Errorf("series a keeps %v, want %v", got, exp)
	}
	if got := seriesFiles(t, dir, rb); len(got) != 0 {
		t.Errorf("series b keeps %v", got)
	}
	if res.FilesDeleted != 5 || res.SeriesRemoved != 1 {
		t.Errorf("maintenance %+v", res)
	}
	// b left the label index; a's samples from 03:00 on are all there.
	inst, err := s.LabelValues(ctx, "instance")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inst, []string{"host-10"}) {
		t.Errorf("instances after retention %v", inst)
	}
	exp := want{}
	for _, smp := range append(wa[a.String()], wb[a.String()]...) {
		if smp.T >= day0+3*hour {
			exp.add(a, smp)
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), exp)

	// The removal is durable: after a crash-like restart b stays gone...
	s.abandon()
	s = openT(t, dir, opts)
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64); len(got) != 1 {
		t.Fatalf("after restart %d series", len(got))
	}
	if sers, _ := s.Series(ctx, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-11")); len(sers) != 0 {
		t.Errorf("removed series listed after restart: %v", sers)
	}
	// ...and comes back as a new series when it sends again.
	clk.Set(day0 + 6*hour)
	mustAppend(t, s, []SeriesSamples{{Labels: b, Samples: []Sample{{T: day0 + 6*hour, V: 1}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	exp.add(b, Sample{T: day0 + 6*hour, V: 1})
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), exp)
	validateAll(t, dir)
}

func TestRetentionBySize(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour},
		Compaction: CompactionOptions{Disabled: true}, Logger: quiet}
	s := openT(t, dir, opts)
	lsets := []labels.Labels{seriesLabels(20), seriesLabels(21), seriesLabels(22)}
	ingest(t, s, clk, lsets, day0, day0+4*hour, 20, func(i int, ts int64) float64 { return float64(ts * int64(i+1)) })
	// Sealed files in the order retention takes them: End, Start, Ref.
	type f struct {
		ref        uint64
		start, end int64
		bytes      int64
	}
	var sealed []f
	total := dirAllocated(filepath.Join(dir, walDirName)) + dirAllocated(filepath.Join(dir, catalogDirName))
	for _, l := range lsets {
		r := refOf(t, s, l)
		st := seriesFiles(t, dir, r)
		for i, x := range st {
			fi, err := os.Stat(seriesFilePath(dir, r, x))
			if err != nil {
				t.Fatal(err)
			}
			total += rotation.Allocated(fi)
			if i+1 < len(st) {
				sealed = append(sealed, f{r, x, st[i+1], rotation.Allocated(fi)})
			}
		}
	}
	slices.SortFunc(sealed, func(a, b f) int {
		if a.end != b.end {
			return int(a.end - b.end)
		}
		if a.ref < b.ref {
			return -1
		}
		return 1
	})
	if len(sealed) != 9 {
		t.Fatalf("%d sealed files, want 9", len(sealed))
	}
	// Cap just below the total minus the four oldest: exactly five go.
	var drop int64
	for _, x := range sealed[:4] {
		drop += x.bytes
	}
	opts.Retention.MaxBytes = total - drop - 1
	s.opts.Retention = opts.Retention
	res, err := s.Maintain()
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesDeleted != 5 {
		t.Errorf("deleted %d files, want 5", res.FilesDeleted)
	}
	for i, x := range sealed {
		_, err := os.Stat(seriesFilePath(dir, x.ref, x.start))
		if gone := os.IsNotExist(err); gone != (i < 5) {
			t.Errorf("sealed file %d (%016x-%d): gone=%v", i, x.ref, x.start, gone)
		}
	}
	// No series lost its newest file.
	for _, l := range lsets {
		if st := seriesFiles(t, dir, refOf(t, s, l)); len(st) == 0 || st[len(st)-1] != day0+3*hour {
			t.Errorf("%s keeps %v", l, st)
		}
	}
	s.Close()
	validateAll(t, dir)
}

// Files of the same series that Select reads while compaction renames and
// retention deletes them give consistent answers.
func TestSelectDuringMaintenance(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = time.Hour
	s := openT(t, dir, opts)
	defer s.Close()
	l := seriesLabels(30)
	w := ingest(t, s, clk, []labels.Labels{l}, day0, day0+8*hour, 20, func(_ int, ts int64) float64 { return float64(ts) })
	stop := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			got := selectAll(t, s, day0+6*hour, math.MaxInt64)
			exp := want{}
			for _, smp := range w[l.String()] {
				if smp.T >= day0+6*hour {
					exp.add(l, smp)
				}
			}
			if !equalBits(got[l.String()], exp[l.String()]) {
				errs <- fmt.Errorf("select during maintenance: %d samples, want %d", len(got[l.String()]), len(exp[l.String()]))
				return
			}
		}
	}()
	s.opts.Retention.MaxAge = 2 * time.Hour
	clk.Set(day0 + 8*hour)
	if _, err := s.Maintain(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// Catalog compaction (past 8 segments, at Open) keeps removals: a removed
// series stays removed, and a WAL still holding its old definition does
// not bring it back.
func TestRemovalSurvivesCatalogCompaction(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour},
		Retention: rotation.Retention{MaxAge: time.Hour}, Logger: quiet}
	s := openT(t, dir, opts)
	a, b := seriesLabels(40), seriesLabels(41)
	ingest(t, s, clk, []labels.Labels{a, b}, day0, day0+hour, 20, func(int, int64) float64 { return 1 })
	ingest(t, s, clk, []labels.Labels{a}, day0+hour, day0+3*hour, 20, func(int, int64) float64 { return 2 })
	clk.Set(day0 + 3*hour)
	if res, err := s.Maintain(); err != nil || res.SeriesRemoved != 1 {
		t.Fatalf("maintenance %+v %v", res, err)
	}
	s.abandon() // the WAL keeps b's definition
	for i := 0; i < 10; i++ {
		s = openT(t, dir, opts)
		if sers, _ := s.Series(ctx, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-41")); len(sers) != 0 {
			t.Fatalf("open %d: removed series is back: %v", i, sers)
		}
		if i%2 == 0 {
			s.abandon()
		} else if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if segs, err := wal.Segments(filepath.Join(dir, catalogDirName)); err != nil || len(segs) > catalogCompactSegments+1 {
		t.Errorf("catalog not compacted: %v %v", segs, err)
	}
}
