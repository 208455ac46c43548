package actastore

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestRetriedDeletionKeepsLaterBackfill: a deletion whose file rewrite
// fails leaves its tombstone unfinished; the same deletion run again
// succeeds and logs its done record. A backfill written after the second
// deletion, flushed, must survive a kill -9: the retry's done record
// retires both tombstones (before, the first was applied to the files
// again and the backfill was lost).
func TestRetriedDeletionKeepsLaterBackfill(t *testing.T) {
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "m", "i", "1")
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}, {T: 3000, V: 3}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	ms := s.reg.byRef[hashLabels(appendCanonicalLabels(nil, lset))]
	path := filePath(s.dir, floats, ms.ref, ms.floats.files[0])
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
