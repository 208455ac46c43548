package rotation

import (
	"math"
	"time"
)

// Tiers are the windows that sealed files are merged into: a series' day
// files become one file per week, its week files one per month (the
// defaults, 7d and 28d), so the file system's rounding of each file to
// whole blocks (4 KiB on ext4) and the framing of each block become a small
// fraction of what a file holds. Windows are UTC-aligned multiples of each
// tier's period since the Unix epoch, like rotation periods (so 7d windows
// start on Thursdays, 1970-01-01 being one).
//
// A merge takes a run of consecutive sealed files of one series and writes
// one file named by the run's first start; its samples are all below the
// start of the file after the run, so the sequence rule "every sample in
// file i < S(i+1)" (package doc) holds as before.
//
//   - Tier 0 merges sealed files whose starts share a tier-0 window, as soon
//     as two of them exist (a week file grows by a day each day).
//   - Tier k > 0 merges files whose tier k-1 window is closed — the
//     series' newest file starts at or after that window's end, so no file
//     will start inside it again — and whose starts share a tier-k window.
//
// Each merge is bounded by MaxFileBytes (the sum of its inputs' sizes) and
// by rows (what one merge holds in memory).
type Tiers []time.Duration

// MergeFile is one file of a series as the merge plan sees it, in start
// order; the last one is the newest (never merged).
type MergeFile struct {
	Start int64 // name start, ms
	Bytes int64 // apparent size
	Rows  int64 // rows in its committed blocks
}

// MergeRun is one planned merge: files[Lo:Hi] become one file (Hi-Lo >= 2).
type MergeRun struct {
	Lo, Hi int
	Tier   int // index into Tiers
}

// windowStart is the start of the window of period pm (ms) holding t.
func windowStart(t, pm int64) int64 {
	return Policy{Period: time.Duration(pm) * time.Millisecond}.PeriodStart(t)
}

// windowEnd is the first ms after the window of period pm holding t, or
// MaxInt64.
func windowEnd(t, pm int64) int64 {
	ws := windowStart(t, pm)
	if ws > math.MaxInt64-pm {
		return math.MaxInt64
	}
	return ws + pm
}

// Plan returns the merges of the lowest tier that has any, oldest first:
// later passes see their results and plan the next tier. maxBytes and
// maxRows bound one merge (0: no bound).
func (t Tiers) Plan(files []MergeFile, maxBytes, maxRows int64) []MergeRun {
	if len(files) < 3 { // two sealed files at least, plus the newest
		return nil
	}
	newest := files[len(files)-1].Start
	sealed := files[:len(files)-1]
	for k, p := range t {
		pm := p.Milliseconds()
		if pm <= 0 {
			continue
		}
		eligible := func(i int) bool {
			if k == 0 {
				return true
			}
			prev := t[k-1].Milliseconds()
			return prev > 0 && windowEnd(sealed[i].Start, prev) <= newest
		}
		var runs []MergeRun
		for i := 0; i < len(sealed); {
			if !eligible(i) {
				i++
				continue
			}
			w := windowStart(sealed[i].Start, pm)
			j := i
			var bytes, rows int64
			for j < len(sealed) && eligible(j) && windowStart(sealed[j].Start, pm) == w {
				nb, nr := bytes+sealed[j].Bytes, rows+sealed[j].Rows
				if j > i && ((maxBytes > 0 && nb > maxBytes) || (maxRows > 0 && nr > maxRows)) {
					break
				}
				bytes, rows = nb, nr
				j++
			}
			if j-i >= 2 {
				runs = append(runs, MergeRun{Lo: i, Hi: j, Tier: k})
			}
			i = max(j, i+1)
		}
		if len(runs) > 0 {
			return runs
		}
	}
	return nil
}
