package actastore

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// A DeleteSeries that removes every file of a series while retention reads
// that series' newest file without its mu (the newest sample unknown after
// a crash) leaves the track without files. Before the fix the pass then
// indexed tr.files()[-1] and panicked. Now it plans nothing for the series
// and deletes nothing; the other series keeps every sample.
func TestRetentionReadRacesDeleteSeries(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour},
		Retention: rotation.Retention{MaxAge: 3 * time.Hour}, Compaction: CompactionOptions{Disabled: true}, Logger: quiet}
	s := openT(t, dir, opts)
	a, b := seriesLabels(40), seriesLabels(41)
	val := func(i int, ts int64) float64 {
		if ts%(7*step15) == 0 {
			return staleNaN
		}
		return float64(ts/step15)*1.5 + float64(i)
	}
	// a: files 00:00 and 01:00 (newest sample 01:59:45); b: 03:00 and 04:00.
	ingest(t, s, clk, []labels.Labels{a}, day0, day0+2*hour, 20, val)
	wb := ingest(t, s, clk, []labels.Labels{b}, day0+3*hour, day0+5*hour, 20, val)
	ra, rb := refOf(t, s, a), refOf(t, s, b)
	// The WAL no longer holds their samples, then a crash: after the
	// restart neither newest file's newest sample is known.
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	s = openT(t, dir, opts)
	defer func() { s.Close() }() // the store open at the end
	for _, l := range []labels.Labels{a, b} {
		ms := seriesOf(s, l)
		ms.mu.Lock()
		_, known := ms.floats.fileMax()
		n := len(ms.floats.files())
		ms.mu.Unlock()
		if known || n != 2 {
			t.Fatalf("%s after the restart: %d files, newest sample known %v; want 2, false", l, n, known)
		}
	}

	// Cutoff 02:00: a's two files would go, none of b's. a is deleted
	// whole right after retention read its newest file.
	clk.Set(day0 + 5*hour)
	var reads, deleted int
	testHookRetentionRead = func(ref uint64) {
		reads++
		if ref != ra || deleted > 0 {
			return
		}
		n, err := s.DeleteSeries(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-40"))
		if err != nil || n != 1 {
			t.Errorf("DeleteSeries in the hook: %d series, %v", n, err)
		}
		deleted++
	}
	defer func() { testHookRetentionRead = nil }()
	res, err := s.Maintain()
	if err != nil {
		t.Fatalf("maintenance: %v", err)
	}
	if deleted != 1 || reads != 2 {
		t.Fatalf("hook: %d newest files read, a deleted %d times; want 2, 1", reads, deleted)
	}
	// Nothing was left for retention to delete or remove.
	if res.FilesDeleted != 0 || res.SeriesRemoved != 0 || res.Errors != 0 {
		t.Errorf("maintenance %+v; want nothing deleted, no error", res)
	}
	if got := seriesFiles(t, dir, ra); len(got) != 0 {
		t.Errorf("series a keeps files %v", got)
	}
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-40")); len(got) != 0 {
		t.Errorf("series a reads back %d series", len(got))
	}
	if got, exp := seriesFiles(t, dir, rb), []int64{day0 + 3*hour, day0 + 4*hour}; !slices.Equal(got, exp) {
		t.Errorf("series b keeps %v, want %v", got, exp)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), wb)

	// Another pass, and a restart, change nothing.
	testHookRetentionRead = nil
	if res, err := s.Maintain(); err != nil || res.FilesDeleted != 0 || res.Errors != 0 {
		t.Fatalf("second pass %+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), wb)
	validateAll(t, dir)
}
