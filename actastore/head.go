package actastore

import (
	"math"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
)

// noTime marks "no timestamp yet".
const noTime = math.MinInt64

// memSeries is one series in memory: identity, head buffer and what the
// store knows of its files. An idle series (nothing buffered) costs the
// struct, its labels and its postings entries; its head slice is released at
// each flush.
type memSeries struct {
	ref     uint64
	id      uint32 // index id, assigned by index.add
	lset    labels.Labels
	created int64 // ms

	// fileMu is held for writing while a block is appended to the series'
	// file and for reading while Select reads it, so a reader never sees a
	// half-appended block.
	fileMu sync.RWMutex
	// flushMu serialises flushes of this series.
	flushMu sync.Mutex

	mu sync.Mutex // guards everything below
	// head holds accepted, unflushed samples sorted by timestamp without
	// duplicate timestamps.
	head      []Sample
	headSeg   int   // WAL segment holding the oldest head sample
	headSince int64 // wall clock (unix ns) when head became non-empty
	// flushing holds samples being written to the file by a flush; they stay
	// readable here until the file holds them.
	flushing    []Sample
	flushingSeg int
	// maxT is the newest timestamp the series accepted since start-up (or
	// found in its files while replaying); noTime when unknown.
	maxT int64
	// lastFlushed is the newest sample written to the file since start-up;
	// a resent copy of it is recognised as a duplicate.
	lastFlushed    Sample
	hasLastFlushed bool
	// files are the start timestamps (ms) of the series' files, ascending;
	// only the last is appended to (rotation package doc).
	files []int64
	// fileMin is the smallest timestamp known to be in a file, by start:
	// set for files written since Open and for files a Select has opened.
	// A file absent here must be opened to learn its lower bound (it may
	// hold out-of-order samples older than its start).
	fileMin map[int64]int64
	// removed: retention deleted the series' last file and took it out of
	// the index; nothing may be added to it.
	removed   bool
	walLogged bool // a series record for it is in the WAL (or catalog)
	inCatalog bool // its record is in the catalog
	queued    bool // queued for a size-triggered flush
}

func newMemSeries(ref uint64, lset labels.Labels, created int64) *memSeries {
	return &memSeries{ref: ref, lset: lset, created: created, maxT: noTime}
}

// sampleVerdict says what to do with one incoming sample.
type sampleVerdict uint8

const (
	verdictAccept    sampleVerdict = iota
	verdictDuplicate               // exact copy of a stored sample: drop silently
	verdictConflict                // same timestamp, other value bits: ErrDuplicateSample
	verdictTooOld                  // outside the out-of-order window: ErrOutOfOrder
)

// sameBits compares values bit for bit: NaNs with equal bits are equal (a
// resent stale marker is a duplicate), 0 and -0 differ.
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// findT returns the index of t in sorted samples and whether it is there.
func findT(ss []Sample, t int64) (int, bool) {
	n := len(ss)
	if n == 0 || ss[n-1].T < t {
		return n, false
	}
	i := sort.Search(n, func(i int) bool { return ss[i].T >= t })
	return i, i < n && ss[i].T == t
}

// checkLocked classifies smp against what the series holds in memory: the
// head, the flushing buffer and the last flushed sample. Duplicates of older
// flushed samples are not detected here (see the package doc). oooMs is the
// out-of-order window in ms (0: any age).
func (s *memSeries) checkLocked(smp Sample, oooMs int64) sampleVerdict {
	for _, buf := range [2][]Sample{s.head, s.flushing} {
		if i, ok := findT(buf, smp.T); ok {
			if sameBits(buf[i].V, smp.V) {
				return verdictDuplicate
			}
			return verdictConflict
		}
	}
	if s.hasLastFlushed && s.lastFlushed.T == smp.T {
		if sameBits(s.lastFlushed.V, smp.V) {
			return verdictDuplicate
		}
		return verdictConflict
	}
	// After the duplicate checks: a resent old sample is a duplicate, not
	// out of order.
	if oooMs > 0 && s.maxT != noTime && smp.T < s.maxT-oooMs {
		return verdictTooOld
	}
	return verdictAccept
}

// insertLocked adds an accepted sample to the head, keeping it sorted. It
// re-checks, because a concurrent batch may have stored the same timestamp
// between the check and the insert; then the first one stays. It reports
// whether the sample was added.
func (s *memSeries) insertLocked(smp Sample, seg int, nowNs int64) bool {
	if s.checkLocked(smp, 0) != verdictAccept {
		return false
	}
	if len(s.head) == 0 {
		s.headSeg = seg
		s.headSince = nowNs
	}
	n := len(s.head)
	if n == 0 || s.head[n-1].T < smp.T {
		s.head = append(s.head, smp)
	} else {
		i, _ := findT(s.head, smp.T)
		s.head = append(s.head, Sample{})
		copy(s.head[i+1:], s.head[i:])
		s.head[i] = smp
	}
	if smp.T > s.maxT {
		s.maxT = smp.T
	}
	return true
}

// walSegNeededLocked is the lowest WAL segment whose samples this series
// still holds only in memory, or -1 when it holds none.
func (s *memSeries) walSegNeededLocked() int {
	seg := -1
	if len(s.head) > 0 {
		seg = s.headSeg
	}
	if len(s.flushing) > 0 && (seg < 0 || s.flushingSeg < seg) {
		seg = s.flushingSeg
	}
	return seg
}

// samplesInRange appends the samples of sorted ss within [mint, maxt] to dst.
func samplesInRange(dst, ss []Sample, mint, maxt int64) []Sample {
	lo := sort.Search(len(ss), func(i int) bool { return ss[i].T >= mint })
	hi := sort.Search(len(ss), func(i int) bool { return ss[i].T > maxt })
	if lo >= hi {
		return dst
	}
	return append(dst, ss[lo:hi]...)
}
