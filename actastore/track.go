package actastore

import (
	"math"
	"slices"
)

// noTime marks "no timestamp yet".
const noTime int64 = -1 << 63

// track is what a series holds of one kind: its head (accepted samples not
// yet in a file), the samples a flush is writing, and what the store knows
// of its files. A series has a float track always and a histogram track
// once it receives a histogram. Every field is guarded by the owning
// series' mu; the functions below are the whole of what the store does
// with a track, written once for every kind.
type track[S any] struct {
	// head holds accepted, unflushed samples, one per timestamp
	// (headbuf.go: compressed for the float kind).
	head      headBuf[S]
	headSeg   int32 // WAL segment holding the oldest head sample
	queued    bool  // queued for a size-triggered flush
	headSince int64 // wall clock (unix ns) when head became non-empty

	// maxT is the newest timestamp the track accepted (or found in its files
	// or the WAL at start-up); noTime when unknown.
	maxT int64

	// cold is what a track needs once it has files or flushes, out of
	// line so a series that only buffers costs less; nil until then.
	cold *trackCold[S]
}

// trackCold is the part of a track a flush and its files need.
//
// Fields are ordered so that the struct has no padding to speak of: the
// starts pointer then costs no allocation size class.
type trackCold[S any] struct {
	// fileStarts are the start timestamps (ms) of the track's files,
	// ascending; only the last is appended to (rotation package doc).
	// Here rather than in track: a series that has only buffered (most
	// of a fresh store's) costs less (TestMemSeriesSize).
	fileStarts []int64
	// flushing holds the samples a flush is writing; they stay readable
	// here until the file holds them.
	flushing []S
	// last is the newest sample written to a file since start-up (or from
	// the flush state): a resent copy of it is recognised without a read.
	last S
	// mins are, by file (as files), the smallest timestamp known to be in
	// it, noTime when unknown: set for files written since Open and for
	// sealed files a read opened. A file without one must be opened to
	// learn its lower bound (it may hold out-of-order samples older than
	// its start). Shorter than files when the tail is unknown.
	mins []int64
	// starts holds the start timestamps of head and flushing samples
	// (starttime.go); nil for a track that never received one, so such a
	// series pays nothing for them.
	starts *trackStarts

	// fileMaxT is the newest timestamp in the track's files, valid when
	// fileMaxKnown (noTime: no file holds a sample). A sample at or below it
	// may be in a file: duplicate detection then looks there. Here rather
	// than in track: a track without files needs neither (fileMax), and
	// the series struct stays in the 112-byte size class.
	fileMaxT int64

	flushingSeg int32
	// Rewrites of the newest file (compact.go): rows flushes appended to
	// it since compaction last rewrote it, and the rows it held then;
	// newestKnown is false while what it holds is unknown (files found at
	// Open).
	newestAppended, newestBase int32
	hasLast                    bool
	newestKnown                bool
	fileMaxKnown               bool // fileMaxT is valid
}

// files are the start timestamps (ms) of the track's files, ascending
// (trackCold.fileStarts); nil when it has none.
func (tr *track[S]) files() []int64 {
	if tr.cold == nil {
		return nil
	}
	return tr.cold.fileStarts
}

// setFiles replaces the track's file starts (ascending, ms).
func (tr *track[S]) setFiles(starts []int64) {
	if tr.cold == nil && len(starts) == 0 {
		return
	}
	tr.coldState().fileStarts = starts
}

func (tr *track[S]) coldState() *trackCold[S] {
	if tr.cold == nil {
		tr.cold = &trackCold[S]{fileMaxT: noTime, fileMaxKnown: true}
	}
	return tr.cold
}

// fileMax is the newest timestamp (ms) in the track's files and whether
// it is known (trackCold.fileMaxT); a track without a cold part has no
// file: noTime, known.
func (tr *track[S]) fileMax() (t int64, known bool) {
	if tr.cold == nil {
		return noTime, true
	}
	return tr.cold.fileMaxT, tr.cold.fileMaxKnown
}

// setFileMax records the newest timestamp in the track's files (noTime:
// none) and whether it is known.
func (tr *track[S]) setFileMax(t int64, known bool) {
	if tr.cold == nil && t == noTime && known {
		return
	}
	c := tr.coldState()
	c.fileMaxT, c.fileMaxKnown = t, known
}

// flushingBuf is the samples being flushed (nil when none).
func (tr *track[S]) flushingBuf() []S {
	if tr.cold == nil {
		return nil
	}
	return tr.cold.flushing
}

// lastFlushed is the newest sample written to a file since start-up.
func (tr *track[S]) lastFlushed() (S, bool) {
	if tr.cold == nil || !tr.cold.hasLast {
		var zero S
		return zero, false
	}
	return tr.cold.last, true
}

func (tr *track[S]) setLast(s S) {
	c := tr.coldState()
	c.last, c.hasLast = s, true
}

func (tr *track[S]) clearLast() {
	if tr.cold != nil {
		var zero S
		tr.cold.last, tr.cold.hasLast = zero, false
	}
}

// newestRows returns the rows flushes appended to the newest file since
// its last rewrite and the rows that rewrite left; known is false while
// they are unknown (a track whose files were found at Open).
func (tr *track[S]) newestRows() (appended, base int32, known bool) {
	if tr.cold == nil {
		return 0, 0, false
	}
	return tr.cold.newestAppended, tr.cold.newestBase, tr.cold.newestKnown
}

// setNewestRows records that the newest file holds rows rows, all of them
// written by a rewrite (0 for a file just created).
func (tr *track[S]) setNewestRows(rows int) {
	c := tr.coldState()
	c.newestAppended, c.newestBase, c.newestKnown = 0, int32(min(rows, math.MaxInt32)), true
}

// addNewestRows counts n rows a flush appended to the newest file.
func (tr *track[S]) addNewestRows(n int) {
	if c := tr.cold; c != nil {
		c.newestAppended = int32(min(int64(c.newestAppended)+int64(n), math.MaxInt32))
	}
}

// fileMin is the smallest timestamp known in the file starting at start.
func (tr *track[S]) fileMin(start int64) (int64, bool) {
	if tr.cold == nil {
		return 0, false
	}
	i := slices.Index(tr.files(), start)
	if i < 0 || i >= len(tr.cold.mins) || tr.cold.mins[i] == noTime {
		return 0, false
	}
	return tr.cold.mins[i], true
}

// forgetFileMin forgets what is known of a file's lower bound.
func (tr *track[S]) forgetFileMin(start int64) {
	if tr.cold == nil {
		return
	}
	if i := slices.Index(tr.files(), start); i >= 0 && i < len(tr.cold.mins) {
		tr.cold.mins[i] = noTime
	}
}

// newTrack is the track of a series without files: nothing accepted, no
// file holds anything.
func newTrack[S any]() track[S] {
	return track[S]{maxT: noTime}
}

// sampleVerdict says what to do with one incoming sample.
type sampleVerdict uint8

const (
	verdictAccept    sampleVerdict = iota
	verdictDuplicate               // exact copy of a stored sample: drop silently
	verdictConflict                // same timestamp, other value bits: ErrDuplicateSample
	verdictTooOld                  // outside the out-of-order window: ErrOutOfOrder
	verdictLookup                  // may be in a file: look there first (fileHits)
)

// find returns the index of t in sorted ss and whether it is there.
func find[S any](k kind[S], ss []S, t int64) (int, bool) {
	n := len(ss)
	if n == 0 || k.ts(ss[n-1]) < t {
		return n, false
	}
	return slices.BinarySearchFunc(ss, t, func(s S, t int64) int {
		switch st := k.ts(s); {
		case st < t:
			return -1
		case st > t:
			return 1
		}
		return 0
	})
}

// classify says what to do with smp against what the track holds: the head,
// the flushing buffer, the newest flushed sample, and — for a timestamp
// its files may hold — the samples read from them (hits, by timestamp; a
// timestamp absent from hits was not looked up yet and gets verdictLookup).
// oooMs is the out-of-order window in ms (0: any age).
func classify[S any](k kind[S], tr *track[S], smp S, oooMs int64, hits map[int64]fileHit[S]) sampleVerdict {
	t := k.ts(smp)
	if stored, ok := tr.head.find(k, t); ok {
		return sameOrConflict(k, stored, smp)
	}
	if buf := tr.flushingBuf(); len(buf) > 0 {
		if i, ok := find(k, buf, t); ok {
			return sameOrConflict(k, buf[i], smp)
		}
	}
	if last, ok := tr.lastFlushed(); ok && k.ts(last) == t {
		return sameOrConflict(k, last, smp)
	}
	// Newer than anything accepted: the usual in-order sample.
	if tr.maxT != noTime && t > tr.maxT {
		return verdictAccept
	}
	// Files may hold it (a resend after a flush): compare with what they
	// hold before the window check, so a resent old sample is a duplicate,
	// not out of order.
	if c := tr.cold; c != nil && len(c.fileStarts) > 0 && (!c.fileMaxKnown || t <= c.fileMaxT) {
		h, looked := hits[t]
		if !looked {
			return verdictLookup
		}
		if h.found {
			return sameOrConflict(k, h.s, smp)
		}
	}
	if oooMs > 0 && tr.maxT != noTime && t < tr.maxT-oooMs {
		return verdictTooOld
	}
	return verdictAccept
}

func sameOrConflict[S any](k kind[S], stored, smp S) sampleVerdict {
	if k.same(stored, smp) {
		return verdictDuplicate
	}
	return verdictConflict
}

// fileHit is what a file lookup found at one timestamp.
type fileHit[S any] struct {
	s     S
	found bool
}

// insert adds an accepted sample to the head. It checks the head again,
// because a concurrent batch may have stored the same timestamp between
// the check and the insert; then the first one stays. It reports whether
// the sample was added and how the head's bytes changed. lazy is for the
// WAL replay (headBuf.addNew).
func insert[S any](k kind[S], tr *track[S], smp S, seg int32, nowNs int64, lazy bool) (bool, int64) {
	t := k.ts(smp)
	if _, found := tr.head.find(k, t); found {
		return false, 0
	}
	if _, found := find(k, tr.flushingBuf(), t); found {
		return false, 0
	}
	tr.headFrom(seg, nowNs)
	b := tr.head.addNew(k, smp, lazy)
	if tr.maxT == noTime || t > tr.maxT {
		tr.maxT = t
	}
	return true, b
}

// headFrom notes that the head is about to take samples logged in WAL
// segment seg, at nowNs. The head keeps the lowest segment of its samples,
// not the first one's: commits reach the heads in any order once their
// records are in the WAL (group commit wakes them together), so a commit
// logged in segment n can be applied after one logged in n+1. Keeping
// n+1 let WAL truncation delete segment n while its samples were only in
// memory, and a kill -9 then lost them although they were acknowledged.
func (tr *track[S]) headFrom(seg int32, nowNs int64) {
	if tr.head.len() == 0 {
		tr.headSeg, tr.headSince = seg, nowNs
	} else if seg < tr.headSeg {
		tr.headSeg = seg
	}
}

// walSegNeeded is the lowest WAL segment whose samples the track still
// holds only in memory, or -1 when it holds none.
func (tr *track[S]) walSegNeeded() int32 {
	seg := int32(-1)
	if tr.head.len() > 0 {
		seg = tr.headSeg
	}
	if c := tr.cold; c != nil && len(c.flushing) > 0 && (seg < 0 || c.flushingSeg < seg) {
		seg = c.flushingSeg
	}
	return seg
}

// busy reports whether the track holds unflushed samples.
func (tr *track[S]) busy() bool { return tr.head.len() > 0 || len(tr.flushingBuf()) > 0 }

// inRange appends the samples of sorted ss within [mint, maxt] to dst.
func inRange[S any](k kind[S], dst, ss []S, mint, maxt int64) []S {
	lo, _ := find(k, ss, mint)
	hi := lo
	for hi < len(ss) && k.ts(ss[hi]) <= maxt {
		hi++
	}
	return append(dst, ss[lo:hi]...)
}

// flushed records that sorted smps are now in the newest file.
func flushed[S any](k kind[S], tr *track[S], smps []S) {
	last := smps[len(smps)-1]
	if prev, ok := tr.lastFlushed(); !ok || k.ts(last) >= k.ts(prev) {
		tr.setLast(last)
	}
	if c, t := tr.coldState(), k.ts(last); c.fileMaxKnown && t > c.fileMaxT {
		c.fileMaxT = t
	}
	if tr.maxT == noTime || k.ts(last) > tr.maxT {
		tr.maxT = k.ts(last)
	}
}
