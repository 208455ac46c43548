package actastore

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

func pairsOf(kv ...string) []byte {
	var p []byte
	for i := 0; i < len(kv); i += 2 {
		p = AppendLabelPair(p, []byte(kv[i]), []byte(kv[i+1]))
	}
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
				{pairsOf(name, value, "__name__", "m"), name < "__name__"}, // the other order
				{pairsOf("__name__", "m", name, value+"x"), false},         // longer value
				{pairsOf("__name__", "m", name, value[1:]), false},         // shorter value
				{pairsOf("__name__", "m"), false},                          // a label missing
				{pairsOf("__name__", "m", name, value, "z", "1"), false},   // one more
				{pairsOf("__name__", "n", name, value), false},             // other name value
				{[]byte(ids), false},                                       // the ids themselves
			}
			for i, c := range cases {
				n, ok := countPairs(c.pairs)
				if !ok {
					if c.want {
						t.Fatalf("%d/%d case %d: pairs do not parse", nl, vl, i)
					}
					continue
				}
				var sb labels.ScratchBuilder
				if ls, err := labelsFromPairs(&sb, c.pairs); err != nil || ls.Len() != n {
					t.Fatalf("%d/%d case %d: count %d, the pairs parse as %v (%v)", nl, vl, i, n, ls, err)
				}
				got, slow := syms.pairsEqual(ids, c.pairs), pairsEqual(c.pairs, lset)
				if got != c.want || slow != c.want {
					t.Fatalf("%d/%d case %d: symbols.pairsEqual %v, pairsEqual %v, want %v", nl, vl, i, got, slow, c.want)
				}
			}
		}
	}
}

// shortestPairs reports whether well-formed pairs give every length in its
// shortest uvarint form.
func shortestPairs(p []byte) bool {
	var again []byte
	for rest := p; len(rest) > 0; {
		var s []byte
		s, rest, _ = nextBytes(rest)
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
		for _, p := range [][]byte{pairs, lset.Bytes(nil), append(lset.Bytes(nil), pairs...), []byte(ids)} {
			if _, ok := countPairs(p); !ok {
				continue
			}
			// Lengths in a longer uvarint form than the shortest are not
			// the series' pairs to symbols.pairsEqual (nor to its hash).
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

// BenchmarkPairsHash: the known-series hash of a receiver's label pairs,
// by xxhash's Digest (count, then pairs) and by one Sum64 of a copy
// (lookupPairsLocked); both give the same value.
func BenchmarkPairsHash(b *testing.B) {
	ls := benchLabels(10_000)
	pairs := make([][]byte, len(ls))
	for i, l := range ls {
		l.Range(func(lb labels.Label) { pairs[i] = AppendLabelPair(pairs[i], []byte(lb.Name), []byte(lb.Value)) })
	}
	b.Run("digest", func(b *testing.B) {
		var sum uint64
		for i := range b.N {
			p := pairs[i%len(pairs)]
			n, _ := countPairs(p)
			var d xxhash.Digest
			d.Reset()
			var cnt [binary.MaxVarintLen64]byte
			d.Write(cnt[:binary.PutUvarint(cnt[:], uint64(n))])
			d.Write(p)
			sum += d.Sum64()
		}
		_ = sum
	})
	b.Run("sum64", func(b *testing.B) {
		var sum uint64
		var buf []byte
		for i := range b.N {
			p := pairs[i%len(pairs)]
			n, _ := countPairs(p)
			buf = binary.AppendUvarint(buf[:0], uint64(n))
			buf = append(buf, p...)
			sum += xxhash.Sum64(buf)
		}
		_ = sum
	})
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
	var buf []byte
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
		ms := s.reg.lookupPairsLocked(c.pairs, &buf)
		s.reg.mu.RUnlock()
		switch {
		case c.want.IsEmpty() && ms != nil:
			t.Errorf("pairs %.40q: found %s, want none", c.pairs, s.reg.ix.labels(nil, ms))
		case !c.want.IsEmpty() && (ms == nil || !labels.Equal(s.reg.ix.labels(nil, ms), c.want)):
			t.Errorf("pairs %.40q: found %v, want %s", c.pairs, ms, c.want)
		}
	}
}
