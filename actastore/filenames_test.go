package actastore

import (
	"fmt"
	"math"
	"testing"
)

// TestSeriesFileNamesFrozen holds the names of series files and shards to
// the format every earlier release wrote (fmt's %016x-%d and %02x), now
// that they are built by hand, and checks parseSeriesFileName inverts them.
func TestSeriesFileNamesFrozen(t *testing.T) {
	refs := []uint64{1, 0xab, 0x0123456789abcdef, 0xfedcba9876543210, math.MaxUint64, 1 << 56}
	starts := []int64{0, 1, -1, 1_700_000_000_000, math.MinInt64, math.MaxInt64}
	for _, ref := range refs {
		if got, want := shardName(ref), fmt.Sprintf("%02x", ref>>56); got != want {
			t.Errorf("shardName(%#x) = %q, want %q", ref, got, want)
		}
		for _, st := range starts {
			got, want := seriesFileName(ref, st), fmt.Sprintf("%016x-%d.acta", ref, st)
			if got != want {
				t.Errorf("seriesFileName(%#x, %d) = %q, want %q", ref, st, got, want)
			}
			r, s, ok := parseSeriesFileName(got)
			if !ok || r != ref || s != st {
				t.Errorf("parseSeriesFileName(%q) = %#x, %d, %v", got, r, s, ok)
			}
		}
	}
}
