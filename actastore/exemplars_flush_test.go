package actastore

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestExemplarsArrivingDuringFlushStayUnflushed: an exemplar flush writes
// the exemplars unflushed when it started; the ones that arrive while it
// writes stay unflushed, however many (before, the flush subtracted what it
// wrote, and when more than the ring's free room arrived meanwhile some
// new ones counted as written: a checkpoint then left them out and
// deleted their WAL, and a crash lost them). Found by review.
func TestExemplarsArrivingDuringFlushStayUnflushed(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	lset := labels.FromStrings("__name__", "ex_metric")
	commit := func(i int) {
		b := &Batch{}
		b.Add(lset, []Sample{{T: int64(1000 + i), V: 1}}, nil,
			[]Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(i)), Value: float64(i), T: int64(1000 + i)}})
		if res, err := s.Commit(context.Background(), b); err != nil || res.Rejected() != 0 {
			t.Fatalf("commit %d: %v %+v", i, err, res)
		}
	}
	for i := 0; i < 10; i++ {
		commit(i)
	}
	ms := s.reg.live()[0]
	if err := s.flushSeries(ms); err != nil { // creates the exemplar file
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		commit(i) // unflushed = 10
	}
	// Hold the exemplar file's writer so the next flush waits after taking
	// its snapshot (as a slow write(2) would).
	path := exemplarFilePath(s.dir, ms.ref)
	w, err := s.writers.acquire(fileKey{ref: ms.ref, kind: exemplarFileKind}, path, false, exemplarSchema, exemplarWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.flushSeries(ms) }()
	time.Sleep(100 * time.Millisecond)
	for i := 20; i < 52; i++ {
		commit(i) // 32 new ones: kept = 20..51, all unflushed
	}
	s.writers.release(w)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := exemplarTraces(t, s)
	var newest []string // the ring keeps the newest maxExemplarsKept: 20..51
	for i := 52 - maxExemplarsKept; i < 52; i++ {
		newest = append(newest, fmt.Sprint(i))
	}
	if fmt.Sprint(want) != fmt.Sprint(newest) {
		t.Fatalf("exemplars before the crash:\n got %v\nwant %v", want, newest)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := exemplarTraces(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("exemplars after a crash:\n got %v\nwant %v", got, want)
	}
}

func exemplarTraces(t *testing.T, s *Store) []string {
	t.Helper()
	es, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "ex_metric"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, se := range es {
		for _, e := range se.Exemplars {
			out = append(out, e.Labels.Get("trace_id"))
		}
	}
	return out
}
