package actastore

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestOvertakenCommitKeepsItsSegment: commit A is logged in WAL segment n
// and waits (as after a group commit's fsync) while commit B, logged in
// n+1, reaches the same series first. A WAL truncation after both must
// keep segment n, which holds A's samples (or exemplars) only in memory:
// reopened after a kill, A's data is there. Before the fix a head kept the
// segment of its first commit (n+1), segment n was deleted and A's
// acknowledged sample was lost; TestCrashKill9 found it, about once in 30
// runs of 48 rounds.
func TestOvertakenCommitKeepsItsSegment(t *testing.T) {
	for _, exemplarsOnly := range []bool{false, true} {
		name := map[bool]string{false: "samples", true: "exemplars"}[exemplarsOnly]
		t.Run(name, func(t *testing.T) { testOvertakenCommit(t, exemplarsOnly) })
	}
}

func testOvertakenCommit(t *testing.T, exemplarsOnly bool) {
	dir := t.TempDir()
	// A 1-byte segment size: every commit goes to a segment of its own.
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1, WALSegmentSize: 1}
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "m", "i", "1")
	commit := func(ts int64) error {
		var b Batch
		if exemplarsOnly {
			b.Add(lset, nil, nil, []Exemplar{{Labels: labels.FromStrings("trace_id", "a"), Value: float64(ts), T: ts}})
		} else {
			b.Add(lset, []Sample{{T: ts, V: float64(ts)}}, nil, nil)
		}
		_, err := s.Commit(ctx, &b)
		return err
	}
	// The series exists and its definition is in the catalog, so the
	// truncation below is about samples only.
	if err := commit(1000); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}

	held, release := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	testHookBeforeApply = func() {
		if holding.CompareAndSwap(false, true) { // the first commit only
			close(held)
			<-release
		}
	}
	defer func() { testHookBeforeApply = nil }()
	errA := make(chan error, 1)
	go func() { errA <- commit(2000) }() // A: logged first, applied last
	<-held
	if err := commit(3000); err != nil { // B
		t.Fatal(err)
	}
	close(release)
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	if err := s.truncateWAL(); err != nil {
		t.Fatal(err)
	}
	s.abandon() // as after kill -9: heads gone, WAL and files stay

	s2 := openT(t, dir, opts)
	defer s2.Close()
	var got []int64
	if exemplarsOnly {
		ex, err := s2.SelectExemplars(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, se := range ex {
			for _, e := range se.Exemplars {
				got = append(got, e.T)
			}
		}
	} else {
		for _, smp := range selectAll(t, s2, math.MinInt64, math.MaxInt64)[lset.String()] {
			got = append(got, smp.T)
		}
	}
	if len(got) != 3 || got[0] != 1000 || got[1] != 2000 || got[2] != 3000 {
		t.Fatalf("after reopen: %v, want 1000, 2000 (the overtaken commit), 3000", got)
	}
}
