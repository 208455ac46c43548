package actastore

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// TestConcurrentAppendFlushSelect appends from several goroutines while the
// background flusher moves heads into files (tiny blocks, tiny head age) and
// readers select: every sample acknowledged before a Select started must be
// in its result, exactly once and in order.
func TestConcurrentAppendFlushSelect(t *testing.T) {
	s := openT(t, t.TempDir(), Options{BlockRows: 8, MaxHeadAge: 2 * time.Millisecond, WALSegmentSize: 8 << 10, MaxOpenFiles: 4})
	defer s.Close()
	concurrentAppendSelect(t, s, nil)
}

// TestConcurrentReadsWhileFilesChange is the same while files change under
// the readers and their cache every way they can: rotation every 20 ms of
// sample time seals files, which maintenance compacts (rename over) as
// soon as they are sealed; retention deletes files of another series
// group; deletions rewrite and delete files of a third. Run with -race
// (make unit does).
func TestConcurrentReadsWhileFilesChange(t *testing.T) {
	// The checked series hold samples at 0..149 ms: with the clock just
	// before 01:00 on 1970-01-01 and a 1 h retention, only the "old" group
	// (an hour earlier still) expires.
	clk := &fakeClock{}
	clk.Set(hour - 1)
	s := openT(t, t.TempDir(), Options{BlockRows: 8, MaxHeadAge: 2 * time.Millisecond, WALSegmentSize: 8 << 10, MaxOpenFiles: 4,
		MaxOpenReaders: 16, Rotation: rotation.Policy{Period: 20 * time.Millisecond}, MaintenanceInterval: 5 * time.Millisecond,
		Compaction: CompactionOptions{BlockRows: 1024}, Retention: rotation.Retention{MaxAge: time.Hour}, Now: clk.Now,
		MinTimestamp: math.MinInt64})
	defer s.Close()
	churn := func(stop chan struct{}) {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			// Old data retention deletes at once, and data deleted again.
			var b Batch
			b.Add(labels.FromStrings("__name__", "old", "k", string(rune('a'+k%4))), []Sample{{T: -2*hour - int64(k), V: 1}}, nil, nil)
			b.Add(labels.FromStrings("__name__", "del", "k", string(rune('a'+k%4))), []Sample{{T: int64(k), V: 1}, {T: int64(k) + 1000, V: 2}}, nil, nil)
			if _, err := s.Commit(ctx, &b); err != nil {
				t.Error(err)
				return
			}
			if k%3 == 0 {
				if err := s.FlushAll(); err != nil {
					t.Error(err)
					return
				}
			}
			if _, err := s.DeleteSeries(ctx, int64(k), int64(k), labels.MustNewMatcher(labels.MatchEqual, "__name__", "del")); err != nil {
				t.Error(err)
				return
			}
		}
	}
	concurrentAppendSelect(t, s, churn)
	if n, _ := s.readers.stats(); n > 16 {
		t.Errorf("%d readers open, limit 16", n)
	}
	if s.readers.hits.Load() == 0 {
		t.Errorf("the reader cache never hit")
	}
	t.Logf("reader cache: %d hits, %d misses, %d evictions", s.readers.hits.Load(), s.readers.misses.Load(), s.readers.evictions.Load())
}

// concurrentAppendSelect runs the writers and readers of the concurrent
// tests, and churn (if any) beside them until the writers are done.
func concurrentAppendSelect(t *testing.T, s *Store, churn func(stop chan struct{})) {
	const writers, seriesPer, steps = 4, 5, 150
	// acked[w] is the number of steps writer w has acknowledged.
	var acked [writers]atomic.Int64
	lsetOf := func(w, i int) labels.Labels {
		return labels.FromStrings("__name__", "c", "w", string(rune('a'+w)), "i", string(rune('0'+i)))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := 0; k < steps; k++ {
				batch := make([]SeriesSamples, seriesPer)
				for i := range batch {
					batch[i] = SeriesSamples{Labels: lsetOf(w, i), Samples: []Sample{{T: int64(k), V: float64(k*10 + i)}}}
				}
				if _, err := s.Append(ctx, batch); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(k + 1))
			}
		}(w)
	}
	var rwg sync.WaitGroup
	var selects atomic.Int64
	if churn != nil {
		rwg.Go(func() { churn(stop) })
	}
	for r := 0; r < 2; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var before [writers]int64
				for w := range before {
					before[w] = acked[w].Load()
				}
				ss := s.Select(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "c"))
				seen := map[string]int{}
				for ss.Next() {
					ser := ss.At()
					it := ser.Iterator()
					n := 0
					for it.Next() {
						ts, v := it.At()
						if ts != int64(n) {
							t.Errorf("%s: sample %d has ts %d", ser.Labels(), n, ts)
							return
						}
						i := int(ser.Labels().Get("i")[0] - '0')
						if v != float64(n*10+i) {
							t.Errorf("%s@%d = %v", ser.Labels(), ts, v)
							return
						}
						n++
					}
					seen[ser.Labels().Get("w")] = n
				}
				if ss.Err() != nil {
					t.Error(ss.Err())
					return
				}
				for w := range before {
					if got := seen[string(rune('a'+w))]; int64(got) < before[w] {
						t.Errorf("writer %d: %d samples visible, %d acknowledged before the select", w, got, before[w])
						return
					}
				}
				selects.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if st := s.Stats(); st.Flushes == 0 {
		t.Fatalf("no flushes happened: %+v", st)
	}
	t.Logf("%d selects, stats %+v", selects.Load(), s.Stats())
}
