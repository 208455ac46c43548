package rotation

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Retention says which files to delete. The zero Retention keeps all.
type Retention struct {
	// MaxAge deletes a file once its newest possible sample (End-1) is
	// older than now-MaxAge. 0 disables.
	MaxAge time.Duration
	// MaxBytes deletes sealed files, oldest first, while the data
	// directory's allocated bytes exceed it. 0 disables.
	MaxBytes int64
}

// File is one series file as retention sees it.
type File struct {
	Ref   uint64
	Start int64 // name start, ms
	// End bounds the file's samples from above (every sample < End): the
	// next file's start for a sealed file, newest sample + 1 for a newest
	// file with nothing waiting to be written to it, MaxInt64 otherwise.
	End    int64
	Sealed bool  // not the series' newest file
	Bytes  int64 // allocated bytes
	// Kind is the caller's kind of file (actastore: float or histogram
	// series file), opaque here: each kind has its own newest file per
	// series, and the size cap orders every kind's sealed files together.
	Kind int
}

// Deletion is a file retention removes, and why.
type Deletion struct {
	File
	Reason string // ReasonAge or ReasonSize
}

const (
	ReasonAge     = "age"
	ReasonSizeCap = "size"
)

// Plan returns the files to delete, oldest first. otherBytes is what the
// data directory holds besides these files (WAL, catalog). Age applies to
// every file, the newest of a series too (a series that stopped expires
// whole); the size cap removes only sealed files, by End then Start then
// Ref, so the oldest data goes first and one plan is deterministic.
func (p Retention) Plan(files []File, nowMs int64, otherBytes int64) []Deletion {
	var out []Deletion
	gone := make([]bool, len(files))
	total := otherBytes
	for _, f := range files {
		total += f.Bytes
	}
	if p.MaxAge > 0 {
		cutoff := nowMs - p.MaxAge.Milliseconds()
		for i, f := range files {
			// Every sample is <= End-1; all are older than the cutoff.
			if f.End != math.MaxInt64 && f.End <= cutoff {
				out = append(out, Deletion{File: f, Reason: ReasonAge})
				gone[i] = true
				total -= f.Bytes
			}
		}
	}
	if p.MaxBytes > 0 && total > p.MaxBytes {
		order := make([]int, 0, len(files))
		for i, f := range files {
			if f.Sealed && !gone[i] {
				order = append(order, i)
			}
		}
		slices.SortFunc(order, func(a, b int) int {
			fa, fb := files[a], files[b]
			return cmp.Or(cmp.Compare(fa.End, fb.End), cmp.Compare(fa.Start, fb.Start), cmp.Compare(fa.Ref, fb.Ref), cmp.Compare(fa.Kind, fb.Kind))
		})
		for _, i := range order {
			if total <= p.MaxBytes {
				break
			}
			out = append(out, Deletion{File: files[i], Reason: ReasonSizeCap})
			total -= files[i].Bytes
		}
	}
	slices.SortStableFunc(out, func(a, b Deletion) int {
		return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Start, b.Start), cmp.Compare(a.Ref, b.Ref), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}
