package actastore

import (
	"context"
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
	var pairs []byte
	pairs = AppendLabelPair(pairs, []byte("__name__"), []byte("m"))
	pairs = AppendLabelPair(pairs, []byte("a"), []byte("1"))
	var b Batch
	b.Series = append(b.Series, SeriesData{LabelPairs: pairs, Samples: []Sample{{T: 1, V: 1}}})
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
