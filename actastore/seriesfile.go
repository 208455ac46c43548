package actastore

import (
	"cmp"
	"math"
	"slices"
)

// The file I/O of series files sits behind these few functions so the rest
// of the store never touches a file format. A series file holds blocks of
// (timestamp ms, value) rows; each block appended by the store is sorted by
// timestamp, and readers merge blocks.

// block is one decoded block of a series file. Values are float64 here
// whatever the file stores: a file whose value column is int64 or decimal64
// (see DESIGN.md) is converted bit-exactly by the reader.
type block struct {
	ts     []int64
	vs     []float64
	sorted bool // timestamps nondecreasing
}

// samplesIn returns the block's samples in [mint, maxt] sorted by timestamp
// (a stable sort keeps the stored order of equal timestamps). A sorted
// block is cut by binary search, so a query for a short range of a large
// block allocates only what it returns.
func (b block) samplesIn(mint, maxt int64) []Sample {
	lo, hi := 0, len(b.ts)
	if b.sorted {
		lo, _ = slices.BinarySearch(b.ts, mint)
		hi, _ = slices.BinarySearch(b.ts, maxt+1)
		if maxt == math.MaxInt64 {
			hi = len(b.ts)
		}
		if lo >= hi {
			return nil
		}
	}
	run := make([]Sample, 0, hi-lo)
	for i := lo; i < hi; i++ {
		if t := b.ts[i]; t >= mint && t <= maxt {
			run = append(run, Sample{T: t, V: b.vs[i]})
		}
	}
	if !b.sorted {
		slices.SortStableFunc(run, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
	}
	return run
}

// fileWriter appends blocks to one series file. It is used by one goroutine
// at a time (the writer cache hands it out exclusively).
type fileWriter interface {
	// appendBlock writes one block and hands it to the OS, so readers opening
	// the file afterwards see it; the writer cache makes it durable (one
	// syncfs, or an fsync per dirty file) before the WAL lets go of it.
	appendBlock(ts []int64, vs []float64) error
	// close closes the file without fsync; the writer cache syncs it.
	close() error
}

// fileOptions are what writers need from the store's Options.
type fileOptions struct {
	zstd        bool
	zstdMinRows int // with zstd: smaller blocks are written uncompressed
	zstdLevel   int
	blockRows   int
}
