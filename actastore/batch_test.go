package actastore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// A series given by its label pairs in the order sent (unsorted here) is
// stored under its sorted label set, the same series as one given by Labels.
func TestCommitLabelPairs(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b Batch
	b.Series = append(b.Series, SeriesData{LabelPairs: pairsOf("__name__", "m", "a", "1"), Samples: []Sample{{T: 1, V: 1}}})
	b.Add(labels.FromStrings("__name__", "m", "a", "1"), []Sample{{T: 2, V: 2}}, nil, nil)
	res, err := s.Commit(context.Background(), &b)
	if err != nil || res.Samples.Written != 2 || res.Rejected() != 0 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	ss := s.Select(context.Background(), 0, 10, labels.MustNewMatcher(labels.MatchEqual, "a", "1"))
	var got []Sample
	n := 0
	for ss.Next() {
		n++
		if want := labels.FromStrings("__name__", "m", "a", "1"); !labels.Equal(ss.At().Labels(), want) {
			t.Fatalf("labels %s, want %s", ss.At().Labels(), want)
		}
		it := ss.At().Iterator()
		for it.Next() {
			ts, v := it.At()
			got = append(got, Sample{ts, v})
		}
	}
	if n != 1 || len(got) != 2 || got[0] != (Sample{1, 1}) || got[1] != (Sample{2, 2}) {
		t.Fatalf("%d series, samples %v", n, got)
	}
}

// LabelPairs whose count is not the number of labels that follow are
// refused as an invalid series naming the problem, and no series is
// created; the same pairs with their count are stored.
func TestCommitLabelPairsBadCount(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	good := pairsOf("__name__", "m", "a", "1")
	for _, n := range []int{0, 1, 3, 200} {
		b := Batch{Series: []SeriesData{{LabelPairs: withCount(n, good), Samples: []Sample{{T: 1, V: 1}}}}}
		res, err := s.Commit(context.Background(), &b)
		if err != nil || res.Samples.Written != 0 || res.Samples.Rejected != 1 || res.Reasons[ReasonInvalidSeries] != 1 ||
			len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), fmt.Sprintf("count %d, 2 labels follow", n)) {
			t.Fatalf("count %d: %+v, %v", n, res, err)
		}
	}
	if n := s.reg.num.Load(); n != 0 {
		t.Fatalf("%d series after refusals, want 0", n)
	}
	b := Batch{Series: []SeriesData{{LabelPairs: good, Samples: []Sample{{T: 1, V: 1}}}}}
	if res, err := s.Commit(context.Background(), &b); err != nil || res.Samples.Written != 1 {
		t.Fatalf("good pairs: %+v, %v", res, err)
	}
	if n := s.reg.num.Load(); n != 1 {
		t.Fatalf("%d series, want 1", n)
	}
}
