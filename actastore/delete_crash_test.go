package actastore

import (
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestDeleteThenRewriteSurvivesCrash: samples deleted from a range and
// then written into it again (a backfill that corrects bad data) are
// acknowledged data. Flushed to the series' file while the tombstone is
// still in the WAL, they must survive a kill -9. Before the tombstones-done
// record the restart applied the finished deletion to the files again and
// the rewritten sample was lost.
func TestDeleteThenRewriteSurvivesCrash(t *testing.T) {
	s, dir, opts, lset := openWithOneFile(t)
	if _, err := s.DeleteSeries(ctx, 1500, 2500, labels.MustNewMatcher(labels.MatchEqual, "i", "1")); err != nil {
		t.Fatal(err)
	}
	// The rewrite, and another series whose head keeps the WAL segment
	// holding the tombstone from truncation.
	rewritten := Sample{T: 2000, V: math.Float64frombits(0x7ff8000000000003)}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{rewritten}},
		{Labels: labels.FromStrings("__name__", "keep"), Samples: []Sample{{T: 5, V: 5}}}})
	if err := s.flushSeries(s.reg.byRef.get(hashLabels(appendCanonicalLabels(nil, lset)))); err != nil {
		t.Fatal(err)
	}
	exp := []Sample{{T: 1000, V: 1}, rewritten, {T: 3000, V: 3}}
	checkLiveThenKilled(t, s, dir, opts, lset, exp, 2) // the second start must leave the files alone too
}

// TestDeleteOrdersWithLoggedCommits: commit A is in the WAL but not yet in
// the head (as while it waits for its group commit) when a deletion of its
// range starts. The deletion covers what was logged before its tombstone,
// so A's sample must be gone live and after a kill -9 alike. Before the fix
// the deletion dropped the heads before A reached them: live kept A's
// sample while a restart, replaying A before the tombstone, dropped it.
func TestDeleteOrdersWithLoggedCommits(t *testing.T) {
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "m", "i", "1")
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1000, V: 1}}}})

	held, release := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	testHookBeforeApply = func() {
		if holding.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
	}
	defer func() { testHookBeforeApply = nil }()
	errA := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 2000, V: 2}}}})
		errA <- err
	}()
	<-held
	m := labels.MustNewMatcher(labels.MatchEqual, "i", "1")
	errDel := make(chan error, 1)
	go func() {
		_, err := s.DeleteSeries(ctx, 1500, 2500, m)
		errDel <- err
	}()
	time.Sleep(100 * time.Millisecond) // the deletion gets as far as it can
	close(release)
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	if err := <-errDel; err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 2100, V: 21}}}}) // after the tombstone: stays
	exp := []Sample{{T: 1000, V: 1}, {T: 2100, V: 21}}
	checkLiveThenKilled(t, s, dir, opts, lset, exp, 1)
}

// TestRetriedDeletionKeepsLaterBackfill: a deletion whose file rewrite
// fails leaves its tombstone unfinished; the same deletion run again
// succeeds and logs its done record. A backfill written after the second
// deletion, flushed, must survive a kill -9: the retry's done record
// retires both tombstones (before, the first was applied to the files
// again and the backfill was lost).
func TestRetriedDeletionKeepsLaterBackfill(t *testing.T) {
	s, dir, opts, lset := openWithOneFile(t)
	ms := s.reg.byRef.get(hashLabels(appendCanonicalLabels(nil, lset)))
	path := filePath(s.dir, floats, ms.ref, ms.floats.files()[0])
	// Make the deletion's rewrite fail: its temporary file's name is a directory.
	tmp := lockedTmpPath(path)
	if err := os.MkdirAll(filepath.Join(tmp, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher(labels.MatchEqual, "i", "1")
	if _, err := s.DeleteSeries(ctx, 1500, 2500, m); err == nil {
		t.Fatal("first deletion should fail")
	}
	os.RemoveAll(tmp)
	if _, err := s.DeleteSeries(ctx, 1500, 2500, m); err != nil {
		t.Fatal(err)
	}
	rewritten := Sample{T: 2000, V: 22}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{rewritten}},
		{Labels: labels.FromStrings("__name__", "keep"), Samples: []Sample{{T: 5, V: 5}}}})
	if err := s.flushSeries(ms); err != nil {
		t.Fatal(err)
	}
	exp := []Sample{{T: 1000, V: 1}, rewritten, {T: 3000, V: 3}}
	checkLiveThenKilled(t, s, dir, opts, lset, exp, 1)
}

// openWithOneFile opens a store in a new directory holding m{i="1"} at
// 1000, 2000 and 3000 ms, values 1, 2, 3, flushed to its file.
func openWithOneFile(t *testing.T) (*Store, string, Options, labels.Labels) {
	t.Helper()
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "m", "i", "1")
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}, {T: 3000, V: 3}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	return s, dir, opts, lset
}

// checkLiveThenKilled checks that lset holds exactly exp in s, then
// abandons s (as a kill -9 would) and checks it again after each of starts
// restarts, each abandoned in turn.
func checkLiveThenKilled(t *testing.T, s *Store, dir string, opts Options, lset labels.Labels, exp []Sample, starts int) {
	t.Helper()
	m := labels.MustNewMatcher(labels.MatchEqual, "i", lset.Get("i"))
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64, m)[lset.String()]; !equalBits(got, exp) {
		t.Fatalf("live: %v, want %v", got, exp)
	}
	s.abandon()
	for i := range starts {
		s2 := openT(t, dir, opts)
		got := selectAll(t, s2, math.MinInt64, math.MaxInt64, m)[lset.String()]
		s2.abandon()
		if !equalBits(got, exp) {
			t.Fatalf("start %d after the kill: %v, want %v", i+1, got, exp)
		}
	}
}
