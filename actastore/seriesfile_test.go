package actastore

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

// readFile returns each overlapping block's samples in the range, sorted
// (stably: equal timestamps keep their stored order), and the file's bounds.
func TestReadFileRanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.acta")
	w, err := acta.Create(path, floatSchema, acta.WriterOptions{RowBlockTarget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, blk := range [][]Sample{
		{{10, 1}, {20, 2}, {20, 3}, {30, 4}, {40, 5}}, // sorted
		{{130, 1}, {110, 2}, {120, 3}, {110, 4}},      // unsorted
	} {
		b, _ := floats.batch(blk, false)
		b.Schema = w.Schema()
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	f := func(mint, maxt int64, want ...[]Sample) {
		t.Helper()
		var got [][]Sample
		lo, hi, ok, err := readFile(floats, nil, path, mint, maxt, func(run []Sample) error {
			got = append(got, slices.Clone(run))
			return nil
		})
		if err != nil || !ok || lo != 10 || hi != 130 {
			t.Fatalf("readFile(%d, %d): bounds %d %d %v, %v", mint, maxt, lo, hi, ok, err)
		}
		if !slices.EqualFunc(got, want, func(a, b []Sample) bool { return slices.Equal(a, b) }) {
			t.Fatalf("readFile(%d, %d) = %v, want %v", mint, maxt, got, want)
		}
	}
	f(20, 30, []Sample{{20, 2}, {20, 3}, {30, 4}})
	f(15, 25, []Sample{{20, 2}, {20, 3}})
	f(math.MinInt64, math.MaxInt64, []Sample{{10, 1}, {20, 2}, {20, 3}, {30, 4}, {40, 5}}, []Sample{{110, 2}, {110, 4}, {120, 3}, {130, 1}})
	f(40, 115, []Sample{{40, 5}}, []Sample{{110, 2}, {110, 4}})
	f(41, 100)
	f(0, 9)
	f(131, 200)
}
