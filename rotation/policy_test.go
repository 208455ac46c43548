package rotation

import (
	"reflect"
	"testing"
	"time"
)

const hourMs = int64(time.Hour / time.Millisecond)

func TestPeriodStartUTCAligned(t *testing.T) {
	f := func(p time.Duration, t0, want int64) {
		t.Helper()
		if got := (Policy{Period: p}).PeriodStart(t0); got != want {
			t.Errorf("PeriodStart(%s, %d) = %d, want %d", p, t0, got, want)
		}
	}
	f(2*time.Hour, 0, 0)
	f(2*time.Hour, 2*hourMs-1, 0)
	f(2*time.Hour, 2*hourMs, 2*hourMs)
	f(24*time.Hour, 1750000000000, 1749945600000) // 2025-06-15 00:00 UTC
	f(2*time.Hour, -1, -2*hourMs)                 // before 1970: floor, not truncation
	f(2*time.Hour, -2*hourMs, -2*hourMs)
	f(0, 12345, 12345) // no period: the timestamp itself
}

func TestSplit(t *testing.T) {
	p2h := Policy{Period: 2 * time.Hour}
	f := func(name string, p Policy, cur *Newest, ts []int64, want []Part) {
		t.Helper()
		if got := p.Split(cur, ts); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Split = %+v, want %+v", name, got, want)
		}
	}
	h := hourMs
	f("first file starts at its period", p2h, nil, []int64{3 * h, 3*h + 15000},
		[]Part{{Start: 2 * h, Create: true, Lo: 0, Hi: 2, Reason: ReasonFirst}})
	f("first flush spanning two periods", p2h, nil, []int64{3 * h, 4*h - 1, 4 * h, 5 * h},
		[]Part{{Start: 2 * h, Create: true, Lo: 0, Hi: 2, Reason: ReasonFirst}, {Start: 4 * h, Create: true, Lo: 2, Hi: 4, Reason: ReasonPeriod}})
	f("same period appends", p2h, &Newest{Start: 2 * h}, []int64{3 * h, 4*h - 1},
		[]Part{{Start: 2 * h, Lo: 0, Hi: 2}})
	f("boundary: the first ms of the next period rotates", p2h, &Newest{Start: 2 * h}, []int64{4*h - 1, 4 * h},
		[]Part{{Start: 2 * h, Lo: 0, Hi: 1}, {Start: 4 * h, Create: true, Lo: 1, Hi: 2, Reason: ReasonPeriod}})
	f("out of order into an older period goes to the newest file", p2h, &Newest{Start: 4 * h}, []int64{1 * h, 5 * h},
		[]Part{{Start: 4 * h, Lo: 0, Hi: 2}})
	f("gap of several periods: one file per period touched", p2h, &Newest{Start: 0}, []int64{h, 9 * h, 13 * h},
		[]Part{{Start: 0, Lo: 0, Hi: 1}, {Start: 8 * h, Create: true, Lo: 1, Hi: 2, Reason: ReasonPeriod}, {Start: 12 * h, Create: true, Lo: 2, Hi: 3, Reason: ReasonPeriod}})
	f("only new data: no part for cur", p2h, &Newest{Start: 0}, []int64{3 * h},
		[]Part{{Start: 2 * h, Create: true, Lo: 0, Hi: 1, Reason: ReasonPeriod}})

	size := Policy{MaxFileBytes: 1000}
	f("size not reached", size, &Newest{Start: 100, MaxT: 500, Bytes: 999}, []int64{600},
		[]Part{{Start: 100, Lo: 0, Hi: 1}})
	f("size reached: new file starts at the first sample after the file's newest", size, &Newest{Start: 100, MaxT: 500, Bytes: 1000}, []int64{400, 501, 700},
		[]Part{{Start: 100, Lo: 0, Hi: 1}, {Start: 501, Create: true, Lo: 1, Hi: 3, Reason: ReasonSize}})
	f("size reached but nothing newer: stay", size, &Newest{Start: 100, MaxT: 500, Bytes: 5000}, []int64{300},
		[]Part{{Start: 100, Lo: 0, Hi: 1}})
	f("size reached, newest unknown: stay", size, &Newest{Start: 100, MaxT: -1 << 63, Bytes: 5000}, []int64{300},
		[]Part{{Start: 100, Lo: 0, Hi: 1}})

	both := Policy{Period: 2 * time.Hour, MaxFileBytes: 1000}
	f("size rotation inside a period names the file by its first sample", both, &Newest{Start: 2 * h, MaxT: 3 * h, Bytes: 2000}, []int64{3*h + 1},
		[]Part{{Start: 3*h + 1, Create: true, Lo: 0, Hi: 1, Reason: ReasonSize}})
	f("size and period: the period wins when it comes first", both, &Newest{Start: 3*h + 1, MaxT: 3*h + 5, Bytes: 10}, []int64{3*h + 6, 4 * h},
		[]Part{{Start: 3*h + 1, Lo: 0, Hi: 1}, {Start: 4 * h, Create: true, Lo: 1, Hi: 2, Reason: ReasonPeriod}})
}

// Every part's new start is above every timestamp routed before it, the
// invariant readers prune by (package doc), over random flushes.
func TestSplitInvariant(t *testing.T) {
	for _, p := range []Policy{{Period: time.Hour}, {MaxFileBytes: 1}, {Period: time.Hour, MaxFileBytes: 1}} {
		var cur *Newest
		maxSoFar := int64(-1 << 63)
		x := uint64(7)
		for flush := 0; flush < 500; flush++ {
			n := 1 + int(x%7)
			ts := make([]int64, n)
			for i := range ts {
				x = x*6364136223846793005 + 1442695040888963407
				ts[i] = int64(flush)*600_000 + int64(x>>40)%900_000 - 200_000
			}
			sortInts(ts)
			for _, part := range p.Split(cur, ts) {
				if part.Create {
					if part.Start <= maxSoFar {
						t.Fatalf("%+v: new file start %d not above the newest written %d", p, part.Start, maxSoFar)
					}
					cur = &Newest{Start: part.Start, MaxT: -1 << 63}
				}
				for _, v := range ts[part.Lo:part.Hi] {
					maxSoFar = max(maxSoFar, v)
					cur.MaxT = max(cur.MaxT, v)
				}
				cur.Bytes += int64(part.Hi - part.Lo)
			}
		}
	}
}

func sortInts(a []int64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
