package rotation

import (
	"math"
	"time"
)

// Policy says when the newest file of a series is sealed and the next one
// begins. The zero Policy never rotates (one file per series).
type Policy struct {
	// Period rotates at UTC-aligned multiples of Period since the Unix
	// epoch (2h: 00:00, 02:00, ...; 24h: midnight UTC), so every series
	// rotates at the same instants and a file's period is its start's.
	// 0 disables time rotation.
	Period time.Duration
	// MaxFileBytes seals the newest file once it holds this many bytes
	// (apparent size); the next flush starts a new file. 0 disables.
	MaxFileBytes int64
}

// Newest is what the store knows of a series' newest file.
type Newest struct {
	Start int64 // name start, ms
	// MaxT is the greatest timestamp in the file; only needed when
	// NeedsMaxT says so (size rotation is due).
	MaxT  int64
	Bytes int64 // apparent size
}

// Part is one run of a flush's sorted timestamps routed to one file.
type Part struct {
	Start  int64 // file start (its name)
	Create bool  // a new file: it becomes the series' newest
	Lo, Hi int   // ts[Lo:Hi]
	// Reason is why Create: "period", "size" or "first" (the series had no
	// file); empty when !Create.
	Reason string
}

const (
	ReasonFirst  = "first"
	ReasonPeriod = "period"
	ReasonSize   = "size"
)

// periodMs is the period in ms (0 without time rotation).
func (p Policy) periodMs() int64 { return p.Period.Milliseconds() }

// PeriodStart is the UTC-aligned start of the period holding t (floor
// division, so times before 1970 align too). Without a period it is t. The
// first period of the int64 range starts at math.MinInt64: flooring there
// would wrap around to the far future.
func (p Policy) PeriodStart(t int64) int64 {
	pm := p.periodMs()
	if pm <= 0 {
		return t
	}
	q := t / pm
	if t%pm != 0 && t < 0 {
		q--
	}
	if q < math.MinInt64/pm {
		return math.MinInt64
	}
	return q * pm
}

// periodEnd is the first ms after the period holding start, or MaxInt64.
func (p Policy) periodEnd(start int64) int64 {
	pm := p.periodMs()
	if pm <= 0 {
		return math.MaxInt64
	}
	ps := p.PeriodStart(start)
	if ps > math.MaxInt64-pm {
		return math.MaxInt64
	}
	return ps + pm
}

// NeedsMaxT reports whether Split needs cur.MaxT (the file is full).
func (p Policy) NeedsMaxT(cur Newest) bool {
	return p.MaxFileBytes > 0 && cur.Bytes >= p.MaxFileBytes
}

// Split routes a flush's sorted timestamps (ts non-empty) to files. cur is
// the series' newest file, nil when it has none. Parts come in file order:
// first the part for cur (its period's samples and every older, out-of-
// order sample), then one new file per later period touched (or one file
// after a full cur). Each new file's start is greater than every timestamp
// written before it, which keeps "file i < S(i+1)" (package doc).
func (p Policy) Split(cur *Newest, ts []int64) []Part {
	var parts []Part
	i := 0
	if cur == nil {
		start := p.PeriodStart(ts[0])
		j := p.cut(ts, 0, p.periodEnd(start))
		parts = append(parts, Part{Start: start, Create: true, Lo: 0, Hi: j, Reason: ReasonFirst})
		i = j
	} else {
		end := p.periodEnd(cur.Start)
		reason := ReasonPeriod
		if p.NeedsMaxT(*cur) && cur.MaxT >= cur.Start && cur.MaxT < math.MaxInt64 && cur.MaxT+1 < end {
			end, reason = cur.MaxT+1, ReasonSize
		}
		j := p.cut(ts, 0, end)
		if j > 0 {
			parts = append(parts, Part{Start: cur.Start, Lo: 0, Hi: j})
		}
		i = j
		if i < len(ts) {
			start := p.PeriodStart(ts[i])
			if start <= cur.Start { // a size rotation inside cur's period
				start = ts[i]
			}
			j := p.cut(ts, i, p.periodEnd(start))
			parts = append(parts, Part{Start: start, Create: true, Lo: i, Hi: j, Reason: reason})
			i = j
		}
	}
	for i < len(ts) { // later periods in the same flush
		start := p.PeriodStart(ts[i])
		j := p.cut(ts, i, p.periodEnd(start))
		parts = append(parts, Part{Start: start, Create: true, Lo: i, Hi: j, Reason: ReasonPeriod})
		i = j
	}
	return parts
}

// cut is the first index at or after i whose timestamp is >= end. An end
// of math.MaxInt64 is the last period's open end: it takes every timestamp,
// math.MaxInt64 itself included, or Split would never move past that one.
func (p Policy) cut(ts []int64, i int, end int64) int {
	for i < len(ts) && (ts[i] < end || end == math.MaxInt64) {
		i++
	}
	return i
}
