package rotation

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Timestamps at the ends of the int64 range: Split must terminate and
// PeriodStart must not wrap around (a file named for the far future would
// swallow every later sample).
func TestSplitInt64Edges(t *testing.T) {
	day := Policy{Period: 24 * time.Hour}
	if got := day.PeriodStart(math.MinInt64); got != math.MinInt64 {
		t.Fatalf("PeriodStart(MinInt64) = %d, want MinInt64", got)
	}
	if got, want := day.PeriodStart(math.MaxInt64), int64(math.MaxInt64)/86_400_000*86_400_000; got != want {
		t.Fatalf("PeriodStart(MaxInt64) = %d, want %d", got, want)
	}
	for _, p := range []Policy{day, {MaxFileBytes: 1}, {}} {
		parts := p.Split(nil, []int64{math.MinInt64, 0, math.MaxInt64 - 1, math.MaxInt64})
		checkParts(t, p, parts, 4)
		cur := &Newest{Start: parts[len(parts)-1].Start, MaxT: math.MaxInt64, Bytes: 10}
		checkParts(t, p, p.Split(cur, []int64{math.MaxInt64}), 1)
	}
}

// checkParts asserts that parts cover [0, n) in order, each non-empty.
func checkParts(t *testing.T, p Policy, parts []Part, n int) {
	t.Helper()
	at := 0
	for _, pt := range parts {
		if pt.Lo != at || pt.Hi <= pt.Lo {
			t.Fatalf("%+v: parts %+v do not tile [0,%d)", p, parts, n)
		}
		at = pt.Hi
	}
	if at != n {
		t.Fatalf("%+v: parts %+v cover [0,%d), want [0,%d)", p, parts, at, n)
	}
}

func FuzzSplit(f *testing.F) {
	f.Add(int64(0), int64(1), int64(2), int64(3600_000), false, int64(0))
	f.Add(int64(math.MinInt64), int64(0), int64(math.MaxInt64), int64(86_400_000), true, int64(math.MinInt64))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(1), true, int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, a, b, c, periodMs int64, hasCur bool, curStart int64) {
		if periodMs < 0 {
			periodMs = -(periodMs + 1)
		}
		p := Policy{Period: time.Duration(periodMs%(1<<40)) * time.Millisecond, MaxFileBytes: int64(uint64(a) % 3)}
		ts := []int64{a, b, c}
		slices.Sort(ts)
		var cur *Newest
		if hasCur {
			cur = &Newest{Start: p.PeriodStart(min(curStart, ts[0])), MaxT: min(curStart, ts[0]), Bytes: 2}
		}
		checkParts(t, p, p.Split(cur, ts), len(ts))
	})
}
