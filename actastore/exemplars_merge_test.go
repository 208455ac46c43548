package actastore

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestMergeExemplars: the file's exemplars first, each exemplar once
// (repeats in a file written before the check included), the newest max,
// and as unflushed only what memory holds beyond the file.
func TestMergeExemplars(t *testing.T) {
	ex := func(n int) Exemplar {
		return Exemplar{Labels: labels.FromStrings("trace_id", fmt.Sprint(n)), Value: float64(n), T: int64(n)}
	}
	f := func(old, kept []Exemplar, unflushed, max int, want []Exemplar, wantUnflushed int) {
		t.Helper()
		got, n := mergeExemplars(old, kept, unflushed, max)
		if fmt.Sprint(got) != fmt.Sprint(want) || n != wantUnflushed {
			t.Errorf("mergeExemplars(%v, %v, %d, %d) = %v, %d; want %v, %d", old, kept, unflushed, max, got, n, want, wantUnflushed)
		}
	}
	one, two, three, four := ex(1), ex(2), ex(3), ex(4)
	f(nil, nil, 0, 32, []Exemplar{}, 0)
	f([]Exemplar{one, two}, nil, 0, 32, []Exemplar{one, two}, 0)
	f(nil, []Exemplar{one, two}, 2, 32, []Exemplar{one, two}, 2)
	// Replayed or resent: the file holds them already.
	f([]Exemplar{one, two}, []Exemplar{one, two}, 2, 32, []Exemplar{one, two}, 0)
	f([]Exemplar{one, two}, []Exemplar{two, three}, 2, 32, []Exemplar{one, two, three}, 1)
	// A file with repeats reads back each once.
	f([]Exemplar{one, one, two, two}, []Exemplar{three}, 1, 32, []Exemplar{one, two, three}, 1)
	// The newest max; unflushed at most what is kept.
	f([]Exemplar{one, two}, []Exemplar{three, four}, 2, 3, []Exemplar{two, three, four}, 2)
	f([]Exemplar{one}, []Exemplar{two, three, four}, 3, 2, []Exemplar{three, four}, 2)
}
