package actastore

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// A float commit never waits for histogram file I/O: while a histogram
// flush hangs inside its file write (holding its series' flush lock), float
// commits of the same series and of others, reads, WAL truncation and a
// retention pass that removes another series all complete.
func TestFloatCommitsDoNotWaitForHistogramIO(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(day0)
	s := openT(t, t.TempDir(), Options{MaintenanceInterval: -1, Now: clk.Now, WALSegmentSize: 1 << 20,
		Retention: rotation.Retention{MaxAge: time.Hour}})
	defer s.Close()
	ctx := context.Background()
	h := labels.FromStrings("__name__", "h", "job", "j")
	gone := labels.FromStrings("__name__", "old", "job", "j")
	var b Batch
	b.Add(h, []Sample{{T: day0, V: 1}}, []HistogramSample{mixedHistAt(day0)}, nil)
	b.Add(gone, []Sample{{T: day0 - 3*hour, V: 1}}, nil, nil)
	if res, err := s.Commit(ctx, &b); err != nil || res.Rejected() != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if err := s.FlushAll(); err != nil { // "old" has a file now, expired in an hour
		t.Fatal(err)
	}
	b = Batch{}
	b.Add(h, nil, []HistogramSample{mixedHistAt(day0 + 1000)}, nil)
	if _, err := s.Commit(ctx, &b); err != nil {
		t.Fatal(err)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	testHookWriteBlocks = func(k kindID) {
		if k == kindHistogram {
			close(entered)
			<-release
		}
	}
	defer func() { testHookWriteBlocks = nil }()
	flushed := make(chan error, 1)
	go func() {
		ms := seriesOf(s, h)
		mu := s.flushLock(ms)
		mu.Lock()
		defer mu.Unlock()
		flushed <- flushTrack(s, histograms, ms)
	}()
	<-entered

	done := make(chan error, 1)
	go func() {
		for i := 0; i < 50; i++ {
			var b Batch
			b.Add(h, []Sample{{T: day0 + 2000 + int64(i), V: float64(i)}}, nil, nil)
			b.Add(labels.FromStrings("__name__", "other", "job", "j"), []Sample{{T: day0 + int64(i), V: 1}}, nil, nil)
			if res, err := s.Commit(ctx, &b); err != nil || res.Rejected() != 0 {
				done <- err
				return
			}
		}
		if got := selectAll(t, s, day0, day0+10_000, labels.MustNewMatcher(labels.MatchEqual, "__name__", "other")); len(got) != 1 {
			done <- context.DeadlineExceeded
			return
		}
		if err := s.truncateWAL(); err != nil {
			done <- err
			return
		}
		clk.Set(day0 + 2*hour)
		res, err := s.Maintain()
		if err == nil && res.SeriesRemoved != 1 {
			t.Errorf("retention removed %d series, want 1 (%+v)", res.SeriesRemoved, res)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("float commits, reads, truncation or retention waited for a hung histogram write")
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
}

// mixedHistAt is a small valid integer histogram at t.
func mixedHistAt(t int64) HistogramSample {
	return HistogramSample{T: t, H: &histogram.Histogram{Schema: 0, ZeroThreshold: 1e-128, Count: 3, Sum: 1.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, 1}}}
}

// Under wal_sync: interval, the one sync loop makes histograms, exemplars
// and metadata durable within the interval too (the WAL they share is the
// one it fsyncs).
func TestSyncIntervalCoversEveryKind(t *testing.T) {
	s := openT(t, t.TempDir(), Options{WALSync: SyncInterval, WALSyncInterval: 300 * time.Millisecond, MaintenanceInterval: -1})
	defer s.Close()
	var b Batch
	b.Add(labels.FromStrings("__name__", "h"), nil, []HistogramSample{mixedHistAt(1000)},
		[]Exemplar{{Labels: labels.FromStrings("trace_id", "t"), Value: 1, T: 1000}})
	b.AddMetadata(NamedMetadata{Name: "h", Metadata: Metadata{Help: "x"}})
	if res, err := s.Commit(context.Background(), &b); err != nil || res.Histograms.Written != 1 || res.Exemplars.Written != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	end := s.wal.End()
	if !s.wal.Synced().Less(end) {
		t.Logf("the sync loop ran at once; the wait below proves less this time")
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.wal.Synced().Less(end) {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL holding a histogram was not fsynced within 2 s of a 300 ms interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
