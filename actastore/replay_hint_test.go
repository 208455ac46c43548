package actastore

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// TestReplayHintFollowsSeriesOrder: the replay remembers which series came
// after which in the sample records (seriesHint) and counts head totals
// once a record. Commits here send their series in a new order and subset
// each time, floats and histograms in the same commit, some series
// arriving only late: after a kill every sample is back in its own series,
// bit for bit, and the head's counters match what the live store had.
func TestReplayHintFollowsSeriesOrder(t *testing.T) {
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	r := rand.New(rand.NewPCG(31, 7))
	const nFloat, commits = 24, 60
	exp := want{}
	next := make([]int64, nFloat) // the next timestamp of each float series
	hcases := histtest.Cases(1_000_000)
	for k := range commits {
		var b Batch
		// A subset in a random order; the last 8 float series join only
		// in the second half, so positions shift under the hints.
		avail := nFloat - 8
		if k >= commits/2 {
			avail = nFloat
		}
		order := r.Perm(avail)[:1+r.IntN(avail)]
		for _, i := range order {
			lset := seriesLabels(i)
			smp := Sample{T: 1000 + next[i]*15000, V: randValue(r)}
			next[i]++
			b.Add(lset, []Sample{smp}, nil, nil)
			exp.add(lset, smp)
		}
		for _, c := range r.Perm(len(hcases)) {
			if k < len(hcases[c].Samples) {
				b.Add(labels.FromStrings("__name__", hcases[c].Name, "job", "j"), nil, hcases[c].Samples[k:k+1], nil)
			}
		}
		if _, err := s.Commit(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	live := s.Stats()
	s.abandon() // as after kill -9: heads gone, WAL stays

	s2 := openT(t, dir, opts)
	defer s2.Close()
	got := s2.Stats()
	if got.HeadSeries != live.HeadSeries || got.HeadSamples != live.HeadSamples {
		t.Fatalf("after replay the head has %d series, %d samples; live it had %d, %d",
			got.HeadSeries, got.HeadSamples, live.HeadSeries, live.HeadSamples)
	}
	if wantSeries := nFloat + len(hcases); got.HeadSeries != wantSeries {
		t.Fatalf("head series %d, want %d", got.HeadSeries, wantSeries)
	}
	floatsOnly := labels.MustNewMatcher(labels.MatchRegexp, "job", "j[0-9]")
	checkWant(t, selectAll(t, s2, math.MinInt64, math.MaxInt64, floatsOnly), exp)
	checkHistogramSamples(t, "after replay", s2, hcases)
}

// TestReplayHintHitsInterleavedSenders: two senders whose requests cut
// their scrapes anywhere and take turns in the WAL. After the first scrape
// the hint knows each series' successor, so the replay looks up the
// registry about once a series and once a record, not once a sample; and
// every sample is back bit for bit.
func TestReplayHintHitsInterleavedSenders(t *testing.T) {
	dir := t.TempDir()
	opts := Options{BlockRows: 1 << 20, MaintenanceInterval: -1}
	s := openT(t, dir, opts)
	r := rand.New(rand.NewPCG(31, 8))
	const n, steps, perRequest = 300, 40, 77
	exp := want{}
	var pending [2][]SeriesSamples
	records, samples := 0, 0
	for step := range steps {
		for i := range n {
			lset := seriesLabels(i)
			smp := Sample{T: 1000 + int64(step)*15000, V: randValue(r)}
			exp.add(lset, smp)
			samples++
			w := i % 3 / 2
			pending[w] = append(pending[w], SeriesSamples{Labels: lset, Samples: []Sample{smp}})
			if len(pending[w]) == perRequest {
				mustAppend(t, s, pending[w])
				pending[w] = nil
				records++
			}
		}
	}
	for _, p := range pending {
		if len(p) > 0 {
			mustAppend(t, s, p)
			records++
		}
	}
	s.abandon()

	s2 := openT(t, dir, opts)
	defer s2.Close()
	if max := n + 2*records; s2.replayLookups > max {
		t.Fatalf("replay looked up the registry %d times for %d samples in %d records of %d series; want at most %d",
			s2.replayLookups, samples, records, n, max)
	}
	checkWant(t, selectAll(t, s2, math.MinInt64, math.MaxInt64), exp)
}
