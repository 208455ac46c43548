package actastore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// pairsOf is the LabelPairs encoding of name, value, ... in this order.
func pairsOf(kv ...string) []byte {
	p := AppendLabelCount(nil, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		p = AppendLabelPair(p, []byte(kv[i]), []byte(kv[i+1]))
	}
	return p
}

// pairsOfLabels is the LabelPairs encoding of l, in its order.
func pairsOfLabels(l labels.Labels) []byte {
	p := AppendLabelCount(nil, l.Len())
	l.Range(func(lb labels.Label) { p = AppendLabelPair(p, []byte(lb.Name), []byte(lb.Value)) })
	return p
}

// symbols.pairsEqual gives pairsEqual's answer, for lengths on both sides
// of a uvarint's one-byte limit (127/128) and stringlabels' (254/255).
func TestSymbolsPairsEqual(t *testing.T) {
	var lens = []int{0, 1, 127, 128, 254, 255, 300}
	syms := newSymbols()
	for _, nl := range lens[1:] {
		for _, vl := range lens[1:] {
			name, value := strings.Repeat("n", nl), strings.Repeat("v", vl)
			lset := labels.FromStrings("__name__", "m", name, value)
			ids := syms.intern(lset)
			cases := []struct {
				pairs []byte
				want  bool
			}{
				{pairsOf("__name__", "m", name, value), true},
				{pairsOf(name, value, "__name__", "m"), name < "__name__"},   // the other order
				{pairsOf("__name__", "m", name, value+"x"), false},           // longer value
				{pairsOf("__name__", "m", name, value[1:]), false},           // shorter value
				{pairsOf("__name__", "m"), false},                            // a label missing
				{pairsOf("__name__", "m", name, value, "z", "1"), false},     // one more
				{pairsOf("__name__", "n", name, value), false},               // other name value
				{[]byte(ids), false},                                         // the ids themselves
				{withCount(3, pairsOf("__name__", "m", name, value)), false}, // a count of 3, two labels
				{withCount(1, pairsOf("__name__", "m", name, value)), false}, // a count of 1, two labels
				{pairsOf("__name__", "m", name, value)[1:], false},           // no count
			}
			for i, c := range cases {
				if c.want {
					var sb labels.ScratchBuilder
					if ls, err := labelsFromPairs(&sb, c.pairs); err != nil || !labels.Equal(ls, lset) {
						t.Fatalf("%d/%d case %d: the pairs parse as %v (%v), want %s", nl, vl, i, ls, err, lset)
					}
				}
				got, slow := syms.pairsEqual(ids, c.pairs), pairsEqual(c.pairs, lset)
				if got != c.want || slow != c.want {
					t.Fatalf("%d/%d case %d: symbols.pairsEqual %v, pairsEqual %v, want %v", nl, vl, i, got, slow, c.want)
				}
			}
		}
	}
}

// withCount replaces the count of a LabelPairs encoding (one byte) by n.
func withCount(n int, pairs []byte) []byte {
	return append(AppendLabelCount(nil, n), pairs[1:]...)
}

// shortestPairs reports whether p is a well-formed LabelPairs encoding
// giving its count and every length in the shortest uvarint form.
func shortestPairs(p []byte) bool {
	n, k := binary.Uvarint(p)
	if k <= 0 {
		return false
	}
	again := binary.AppendUvarint(nil, n)
	for rest := p[k:]; len(rest) > 0; {
		var s []byte
		var ok bool
		if s, rest, ok = nextBytes(rest); !ok {
			return false
		}
		again = binary.AppendUvarint(again, uint64(len(s)))
		again = append(again, s...)
	}
	return string(again) == string(p)
}

// FuzzSymbolsPairsEqual: for any pairs bytes and label set, the compare
// with the label set's symbols agrees with the compare with its labels.
func FuzzSymbolsPairsEqual(f *testing.F) {
	f.Add([]byte(labels.FromStrings("__name__", "m", "a", "1").Bytes(nil)), "m", "a", "1")
	f.Add(pairsOf("__name__", "m", "a", "1"), "m", "a", "1")
	f.Add(pairsOf("__name__", "m", "a", strings.Repeat("x", 130)), "m", "a", strings.Repeat("x", 130))
	f.Add([]byte{8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x81, 1, 'x'}, "m", "a", "1")
	f.Add([]byte{8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x81, 0, 'm', 1, 'a', 1, '1'}, "m", "a", "1")
	f.Add([]byte{2, 8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x81, 0, 'm', 1, 'a', 1, '1'}, "m", "a", "1")
	f.Add([]byte{0x82, 0, 8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 1, 'm', 1, 'a', 1, '1'}, "m", "a", "1")
	syms := newSymbols()
	f.Fuzz(func(t *testing.T, pairs []byte, name, ln, lv string) {
		lset := labels.FromStrings("__name__", name, ln, lv)
		ids := syms.intern(lset)
		if got := syms.labels(nil, ids); !labels.Equal(got, lset) {
			t.Fatalf("interned %s, read back %s", lset, got)
		}
		if got, want := syms.appendCanonical(nil, ids), appendCanonicalLabels(nil, lset); string(got) != string(want) {
			t.Fatalf("%s: canonical %q from symbols, %q from labels", lset, got, want)
		}
		counted := AppendLabelCount(nil, lset.Len())
		for _, p := range [][]byte{pairs, lset.Bytes(nil), slices.Concat(counted, lset.Bytes(nil)), slices.Concat(counted, pairs), []byte(ids)} {
			// A count or lengths in a longer uvarint form than the
			// shortest are not the series' pairs to symbols.pairsEqual
			// (nor to its hash).
			got, want := syms.pairsEqual(ids, p), pairsEqual(p, lset) && shortestPairs(p)
			if got != want {
				t.Fatalf("pairs %q, labels %s: symbols.pairsEqual %v, pairsEqual %v", p, lset, got, want)
			}
		}
	})
}

// A known series with a label of 128 bytes or more (no block compare) is
// found again from its label pairs: one series, both samples, bit for bit.
func TestCommitLabelPairsLongValue(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("é", 100) // 200 bytes
	nan := math.Float64frombits(0x7ff0000000000bad)
	want := []Sample{{T: 1, V: nan}, {T: 2, V: -0.5}}
	for _, smp := range want {
		for _, p := range [][]byte{pairsOf("__name__", "m", "a", long), pairsOf("__name__", "m", "b", "1")} {
			b := Batch{Series: []SeriesData{{LabelPairs: p, Samples: []Sample{smp}}}}
			if res, err := s.Commit(context.Background(), &b); err != nil || res.Samples.Written != 1 || res.Rejected() != 0 {
				t.Fatalf("commit: %+v, %v", res, err)
			}
		}
	}
	if n := s.reg.num.Load(); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
	ss := s.Select(context.Background(), 0, 10, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	n := 0
	for ss.Next() {
		n++
		var got []Sample
		it := ss.At().Iterator()
		for it.Next() {
			ts, v := it.At()
			got = append(got, Sample{ts, v})
		}
		if len(got) != 2 || got[0].T != 1 || math.Float64bits(got[0].V) != math.Float64bits(nan) || got[1] != want[1] {
			t.Fatalf("%s: samples %v", ss.At().Labels(), got)
		}
	}
	if n != 2 {
		t.Fatalf("%d series selected, want 2", n)
	}
}

// lookupPairsLocked finds a series created from Labels by its sorted
// label pairs (so its hash is the ref's: a series new to it would be
// created again by resolve and this test could not tell), whether or not
// the block compare applies, and not by unsorted or other pairs.
func TestLookupPairsFast(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("x", 300)
	sets := []labels.Labels{labels.FromStrings("__name__", "m", "a", "1"), labels.FromStrings("__name__", "m", "a", long)}
	var b Batch
	for _, ls := range sets {
		b.Add(ls, []Sample{{T: 1, V: 1}}, nil, nil)
	}
	if res, err := s.Commit(context.Background(), &b); err != nil || res.Samples.Written != 2 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	for _, c := range []struct {
		pairs []byte
		want  labels.Labels // empty: not found
	}{
		{pairsOf("__name__", "m", "a", "1"), sets[0]},
		{pairsOf("__name__", "m", "a", long), sets[1]},
		{pairsOf("a", "1", "__name__", "m"), labels.EmptyLabels()},
		{pairsOf("__name__", "m", "a", "2"), labels.EmptyLabels()},
		{pairsOf("__name__", "m", "a", long[1:]), labels.EmptyLabels()},
	} {
		s.reg.mu.RLock()
		ms := s.reg.lookupPairsLocked(c.pairs)
		s.reg.mu.RUnlock()
		switch {
		case c.want.IsEmpty() && ms != nil:
			t.Errorf("pairs %.40q: found %s, want none", c.pairs, s.reg.ix.labels(nil, ms))
		case !c.want.IsEmpty() && (ms == nil || !labels.Equal(s.reg.ix.labels(nil, ms), c.want)):
			t.Errorf("pairs %.40q: found %v, want %s", c.pairs, ms, c.want)
		}
	}
}

// The count of a LabelPairs encoding is checked, also where it takes two
// bytes (128 labels or more): sorted pairs with their count find their
// series; the same pairs with another count, or the count in a longer
// form, do not, even when a series sits under the ref they hash to (a
// decoy of the same labels, so only the count tells them apart).
func TestLookupPairsCount(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{2, 127, 128, 129, 300} {
		var sb labels.ScratchBuilder
		sb.Add("__name__", "m")
		for i := 1; i < n; i++ {
			sb.Add(fmt.Sprintf("l%03d", i), "v")
		}
		sb.Sort()
		lset := sb.Labels()
		var b Batch
		b.Add(lset, []Sample{{T: 1, V: 1}}, nil, nil)
		if res, err := s.Commit(context.Background(), &b); err != nil || res.Samples.Written != 1 {
			t.Fatalf("%d labels: commit: %+v, %v", n, res, err)
		}
		pairs := pairsOfLabels(lset)
		_, k := binary.Uvarint(pairs)
		s.reg.mu.RLock()
		ms := s.reg.lookupPairsLocked(pairs)
		s.reg.mu.RUnlock()
		if ms == nil || !labels.Equal(s.reg.ix.labels(nil, ms), lset) {
			t.Fatalf("%d labels: sorted pairs found %v", n, ms)
		}
		longer := AppendLabelCount(nil, n) // n in k+1 bytes: a last byte of 0 added
		longer[k-1] |= 0x80
		longer = append(longer, 0)
		for _, count := range [][]byte{AppendLabelCount(nil, n-1), AppendLabelCount(nil, n+1), AppendLabelCount(nil, 0), longer} {
			wrong := slices.Concat(count, pairs[k:])
			s.reg.mu.Lock()
			decoy := s.reg.addLocked(hashLabels(wrong), lset, 0)
			got := s.reg.lookupPairsLocked(wrong)
			s.reg.removeLocked(decoy)
			s.reg.mu.Unlock()
			if got != nil {
				t.Fatalf("%d labels, count % x: found %s", n, count, s.reg.ix.labels(nil, got))
			}
		}
	}
}
