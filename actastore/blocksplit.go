package actastore

import (
	"math/bits"
	"slices"
)

// Block boundaries of sealed files. Acta v0.2's integer transforms
// bit-pack a whole block's deltas (or deltas of deltas) at the width of
// the largest one, so one outlier — a counter reset, a scrape gap, a
// jump — widens every value of its block: a reset in a day of a counter
// took its delta stream from ~10 to ~30 bits a row. A sealed file is
// therefore cut into blocks at rare outliers of its integer columns, so
// that each lands on a block boundary (a block starts with its first value
// at full width) and the rest pack narrow. Measured on the bench shapes
// (counters and histogram buckets, a day each, restarts once a day): 1.90
// bytes a sample in one block, 1.68 cut at resets (zstd 9).

const (
	// minCutBlock is the fewest rows a block cut at an outlier gets: each
	// block costs ~350 bytes of framing (prefix, header, column and
	// stream tables, trailer).
	minCutBlock = 512
	// outlierBits: a row is an outlier when its delta needs this many
	// more bits than all but the widest 1/512 of the rows.
	outlierBits = 4
	// maxOutlierShare: more outliers than rows/maxOutlierShare are the
	// shape of the data, not outliers: no cuts.
	maxOutlierShare = 256
)

// zigzagBits is the packed width of a signed difference.
func zigzagBits(d int64) int {
	return bits.Len64(uint64(d<<1) ^ uint64(d>>63))
}

// outlierCuts returns the row indexes before which a block should start
// so that the rare rows whose step (order 1: delta; 2: delta of delta)
// is far wider than the rest fall on block boundaries. rows[i] is the row
// of xs[i] (dense values of a nullable column skip rows).
func outlierCuts(xs []int64, rows []int, order int) []int {
	n := len(xs)
	if n < 2*minCutBlock {
		return nil
	}
	w := make([]int, n) // width of the step into i; 0 where there is none
	for i := order; i < n; i++ {
		d := xs[i] - xs[i-1]
		if order == 2 {
			d -= xs[i-1] - xs[i-2]
		}
		w[i] = zigzagBits(d)
	}
	sorted := slices.Clone(w[order:])
	slices.Sort(sorted)
	typical := sorted[len(sorted)-1-len(sorted)/512]
	var out []int
	count := 0
	for i := order; i < n; i++ {
		if w[i] >= typical+outlierBits {
			count++
			out = append(out, rows[i])
		}
	}
	if count == 0 || count > n/maxOutlierShare {
		return nil
	}
	return out
}

// blockBounds merges cut candidates into block boundaries over n rows:
// every block at most maxRows, and blocks started at a cut at least
// minCutBlock rows long (a cut too close to the previous boundary or to
// the end is dropped). It returns the starts of every block after the
// first.
func blockBounds(n, maxRows int, cuts []int) []int {
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []int
	last := 0
	for _, c := range cuts {
		for c-last > maxRows {
			last += maxRows
			out = append(out, last)
		}
		if c-last >= minCutBlock && n-c >= minCutBlock {
			out = append(out, c)
			last = c
		}
	}
	for n-last > maxRows {
		// No block after a cut smaller than a cut block: a file's blocks
		// are then all at least minCutBlock rows (compactBlocks).
		step := maxRows
		if rem := n - last - maxRows; rem < minCutBlock && maxRows >= 2*minCutBlock {
			step = n - last - minCutBlock // > maxRows-minCutBlock > 0
		}
		last += step
		out = append(out, last)
	}
	return out
}
