package actastore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// TestTierDeletedBucketFileStaysDeleted: a deletion covering a whole
// uploaded file, kept only in the bucket or with a local copy too. The
// bucket's index lists the file until the next tier cycle, so after a
// kill -9 before that cycle the restart attaches it from the manifest
// again: the deletion must not count as done (no tombstones-done record)
// and is applied again at the start. Before, the deleted hour came back
// (720 samples, want 480) in both cases.
func TestTierDeletedBucketFileStaysDeleted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		localRet time.Duration // Tier.LocalRetention: 0 drops local copies once uploaded
	}{{"bucket-only", 0}, {"local-copy", 1000 * time.Hour}} {
		t.Run(tc.name, func(t *testing.T) { testTierDeletedFile(t, "tier-delete-"+tc.name, tc.localRet) })
	}
}

func testTierDeletedFile(t *testing.T, bkt string, localRet time.Duration) {
	srv := s3test.Shared(t, bkt)
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := tierTestOptions(t, clk, srv, bkt, "w1", nil)
	if localRet > 0 {
		opts.Tier.LocalRetention = localRet
	}
	s := openT(t, dir, opts)
	lsets := []labels.Labels{seriesLabels(1), seriesLabels(2)}
	w := ingest(t, s, clk, lsets, day0, day0+3*hour, 60, func(i int, ts int64) float64 { return float64(ts) + float64(i) })
	clk.Set(day0 + 3*hour + 60000)
	s.Maintain()
	if res, err := s.TierCycle(); err != nil || res.Uploaded != 4 {
		t.Fatalf("%+v %v", res, err)
	}
	m2 := labels.MustNewMatcher(labels.MatchEqual, "instance", "host-2")
	if _, err := s.DeleteSeries(context.Background(), day0, day0+hour-1, m2); err != nil {
		t.Fatal(err)
	}
	// A head sample of another series keeps the tombstone's segment.
	mustAppend(t, s, []SeriesSamples{{Labels: labels.FromStrings("__name__", "keep"), Samples: []Sample{{T: day0 + 3*hour + 1000, V: 5}}}})
	var exp []Sample
	for _, smp := range w[seriesLabels(2).String()] {
		if smp.T >= day0+hour {
			exp = append(exp, smp)
		}
	}
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64, m2)[seriesLabels(2).String()]; !equalBits(got, exp) {
		t.Fatalf("live: %d samples, want %d", len(got), len(exp))
	}
	s.abandon()
	s2 := openT(t, dir, opts)
	defer s2.Close()
	if got := selectAll(t, s2, math.MinInt64, math.MaxInt64, m2)[seriesLabels(2).String()]; !equalBits(got, exp) {
		t.Fatalf("after the kill: %d samples (first %v), want %d (first %v)", len(got), got[0], len(exp), exp[0])
	}
}
