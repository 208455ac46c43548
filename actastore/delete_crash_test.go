package actastore

import (
	"math"
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
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "m", "i", "1")
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}, {T: 3000, V: 3}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteSeries(ctx, 1500, 2500, labels.MustNewMatcher(labels.MatchEqual, "i", "1")); err != nil {
		t.Fatal(err)
	}
	// The rewrite, and another series whose head keeps the WAL segment
	// holding the tombstone from truncation.
	rewritten := Sample{T: 2000, V: math.Float64frombits(0x7ff8000000000003)}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{rewritten}},
		{Labels: labels.FromStrings("__name__", "keep"), Samples: []Sample{{T: 5, V: 5}}}})
	if err := s.flushSeries(s.reg.byRef[hashLabels(appendCanonicalLabels(nil, lset))]); err != nil {
		t.Fatal(err)
	}
	exp := []Sample{{T: 1000, V: 1}, rewritten, {T: 3000, V: 3}}
	m := labels.MustNewMatcher(labels.MatchEqual, "i", "1")
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64, m)[lset.String()]; !equalBits(got, exp) {
		t.Fatalf("live: %v, want %v", got, exp)
	}
	s.abandon() // as after kill -9: the WAL still holds the tombstone

	for round := range 2 { // the second start must leave the files alone too
		s2 := openT(t, dir, opts)
		got := selectAll(t, s2, math.MinInt64, math.MaxInt64, m)[lset.String()]
		s2.abandon()
		if !equalBits(got, exp) {
			t.Fatalf("start %d after the kill: %v, want %v", round+1, got, exp)
		}
	}
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
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64, m)[lset.String()]; !equalBits(got, exp) {
		t.Fatalf("live: %v, want %v", got, exp)
	}
	s.abandon()
	s2 := openT(t, dir, opts)
	defer s2.Close()
	if got := selectAll(t, s2, math.MinInt64, math.MaxInt64, m)[lset.String()]; !equalBits(got, exp) {
		t.Fatalf("after the kill: %v, want %v", got, exp)
	}
}
