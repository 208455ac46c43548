package rotation

import (
	"reflect"
	"testing"
	"time"
)

const dayMs = int64(24 * time.Hour / time.Millisecond)

// thu is a Thursday 00:00 UTC: a 7d window starts there (1970-01-01 was
// a Thursday). 2026-11-26.
const thu = int64(1795651200000)

func days(ds ...int64) []MergeFile {
	fs := make([]MergeFile, len(ds))
	for i, d := range ds {
		fs[i] = MergeFile{Start: thu + d*dayMs, Bytes: 10000, Rows: 5760}
	}
	return fs
}

func TestTiersPlan(t *testing.T) {
	if thu%(7*dayMs) != 0 {
		t.Fatal("thu is not a 7d window start")
	}
	tiers := Tiers{7 * 24 * time.Hour, 28 * 24 * time.Hour}
	f := func(name string, files []MergeFile, maxBytes, maxRows int64, want []MergeRun) {
		t.Helper()
		if got := tiers.Plan(files, maxBytes, maxRows); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	f("one sealed file", days(0, 1), 0, 0, nil)
	f("two sealed days of a week: merged at once", days(0, 1, 2), 0, 0, []MergeRun{{0, 2, 0}})
	f("a whole week and the next day", days(0, 1, 2, 3, 4, 5, 6, 7), 0, 0, []MergeRun{{0, 7, 0}})
	f("the newest is never merged", days(5, 6, 7, 8), 0, 0, []MergeRun{{0, 2, 0}})
	f("runs stop at window edges", days(5, 6, 7, 8, 9), 0, 0, []MergeRun{{0, 2, 0}, {2, 4, 0}})
	f("a gap of days inside a week", days(0, 3, 6, 10), 0, 0, []MergeRun{{0, 3, 0}})
	// Week files (one each) in a 28d window: merged once their week closed.
	weeks := days(0, 7, 14, 15)
	f("closed weeks go up a tier", weeks, 0, 0, []MergeRun{{0, 2, 1}})
	f("an open week does not", days(0, 7, 8), 0, 0, nil)
	f("bytes bound", days(0, 1, 2, 3, 4), 25000, 0, []MergeRun{{0, 2, 0}, {2, 4, 0}})
	f("rows bound", days(0, 1, 2, 3, 4), 0, 3*5760, []MergeRun{{0, 3, 0}})
	f("one file over the bound alone", []MergeFile{{Start: thu, Bytes: 1 << 30}, {Start: thu + dayMs, Bytes: 1}, {Start: thu + 2*dayMs, Bytes: 1}, {Start: thu + 3*dayMs}},
		1<<20, 0, []MergeRun{{1, 3, 0}})
	if got := (Tiers{}).Plan(days(0, 1, 2), 0, 0); got != nil {
		t.Errorf("empty tiers planned %+v", got)
	}
	// Before 1970 windows align by floor division too.
	neg := []MergeFile{{Start: -3 * dayMs}, {Start: -2 * dayMs}, {Start: -1 * dayMs}, {Start: 0}}
	// -3d..-1d: 1969-12-29..31, all in the 7d window starting 1969-12-25.
	f("before 1970", neg, 0, 0, []MergeRun{{0, 3, 0}})
}
