package actastore

import (
	"math"
	"slices"
	"testing"
)

func TestBlockSamplesIn(t *testing.T) {
	f := func(b block, mint, maxt int64, want []Sample) {
		t.Helper()
		got := b.samplesIn(mint, maxt)
		if !slices.Equal(got, want) {
			t.Fatalf("samplesIn(%d, %d) = %v, want %v", mint, maxt, got, want)
		}
		if cap(got) != len(got) && b.sorted {
			t.Fatalf("sorted block: cap %d for %d samples, want exact", cap(got), len(got))
		}
	}
	sorted := block{ts: []int64{10, 20, 20, 30, 40}, vs: []float64{1, 2, 3, 4, 5}, sorted: true}
	f(sorted, 20, 30, []Sample{{20, 2}, {20, 3}, {30, 4}})
	f(sorted, 15, 25, []Sample{{20, 2}, {20, 3}})
	f(sorted, math.MinInt64, math.MaxInt64, []Sample{{10, 1}, {20, 2}, {20, 3}, {30, 4}, {40, 5}})
	f(sorted, 40, math.MaxInt64, []Sample{{40, 5}})
	f(sorted, 41, 100, nil)
	f(sorted, 0, 9, nil)
	f(sorted, 30, 20, nil)

	unsorted := block{ts: []int64{30, 10, 20, 10}, vs: []float64{1, 2, 3, 4}}
	f(unsorted, 10, 20, []Sample{{10, 2}, {10, 4}, {20, 3}})
	f(unsorted, math.MinInt64, math.MaxInt64, []Sample{{10, 2}, {10, 4}, {20, 3}, {30, 1}})
	f(unsorted, 31, 40, []Sample{})
}
