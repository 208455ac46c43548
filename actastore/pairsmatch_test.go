package actastore

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"

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

// pairsMatch gives pairsEqual's answer, for lengths on both sides of the
// one-byte limits (127/128 of a uvarint, 254/255 of stringlabels).
func TestPairsMatch(t *testing.T) {
	if !stringLabels {
		t.Log("labels are not stringlabels: pairsMatch is pairsEqual")
	}
	var lens = []int{0, 1, 127, 128, 254, 255, 300}
	for _, nl := range lens[1:] {
		for _, vl := range lens[1:] {
			name, value := strings.Repeat("n", nl), strings.Repeat("v", vl)
			lset := labels.FromStrings("__name__", "m", name, value)
			cases := []struct {
				pairs []byte
				want  bool
			}{
				{pairsOf("__name__", "m", name, value), true},
				{pairsOf(name, value, "__name__", "m"), name < "__name__"},                                     // the other order
				{pairsOf("__name__", "m", name, value+"x"), false},                                             // longer value
				{pairsOf("__name__", "m", name, value[1:]), false},                                             // shorter value
				{pairsOf("__name__", "m"), false},                                                              // a label missing
				{pairsOf("__name__", "m", name, value, "z", "1"), false},                                       // one more
				{pairsOf("__name__", "n", name, value), false},                                                 // other name value
				{[]byte(lset.Bytes(nil)), nl < 128 && vl < 128 && labels.ImplementationName == "stringlabels"}, // the stored bytes themselves
			}
			for i, c := range cases {
				n, short, ok := countPairs(c.pairs)
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
				wantShort := true
				for _, l := range []int{8, 1, nl, vl} {
					wantShort = wantShort && l < 128
				}
				if i == 0 && short != wantShort {
					t.Fatalf("%d/%d: short %v, want %v", nl, vl, short, wantShort)
				}
				got, slow := pairsMatch(c.pairs, short, lset), pairsEqual(c.pairs, lset)
				if got != c.want || slow != c.want {
					t.Fatalf("%d/%d case %d: pairsMatch %v, pairsEqual %v, want %v", nl, vl, i, got, slow, c.want)
				}
			}
		}
	}
}

// labelsData reads the same bytes Labels.Bytes copies, for empty, short
// and long labels; and this build's stringlabels still qualify (else every
// known series would take the slow compare unnoticed).
func TestLabelsData(t *testing.T) {
	if labels.ImplementationName != "stringlabels" {
		t.Skipf("labels are %s: labelsData is not used", labels.ImplementationName)
	}
	if !stringLabels {
		t.Fatalf("stringlabels' Labels is %d bytes, not one string: the block compare is off", unsafe.Sizeof(labels.Labels{}))
	}
	for _, lset := range []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("__name__", "m"),
		labels.FromStrings("__name__", "m", "a", strings.Repeat("x", 254), "b", strings.Repeat("é", 200)),
		labels.FromStrings("__name__", "up", "instance", "10.0.0.1:9100", "job", "node"),
	} {
		if got, want := labelsData(lset), string(lset.Bytes(nil)); got != want {
			t.Errorf("%s: labelsData %q, Bytes %q", lset, got, want)
		}
	}
}

// FuzzPairsMatch: for any pairs bytes and label set, the block compare
// agrees with the label-by-label one.
func FuzzPairsMatch(f *testing.F) {
	f.Add([]byte(labels.FromStrings("__name__", "m", "a", "1").Bytes(nil)), "m", "a", "1")
	f.Add(pairsOf("__name__", "m", "a", "1"), "m", "a", "1")
	f.Add(pairsOf("__name__", "m", "a", strings.Repeat("x", 130)), "m", "a", strings.Repeat("x", 130))
	f.Add([]byte{8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x81, 1, 'x'}, "m", "a", "1")
	f.Fuzz(func(t *testing.T, pairs []byte, name, ln, lv string) {
		lset := labels.FromStrings("__name__", name, ln, lv)
		// Also the stored bytes with a little change: the case where a
		// coincidence of encodings would matter.
		for _, p := range [][]byte{pairs, lset.Bytes(nil), append(lset.Bytes(nil), pairs...)} {
			_, short, ok := countPairs(p)
			if !ok {
				continue
			}
			if got, want := pairsMatch(p, short, lset), pairsEqual(p, lset); got != want {
				t.Fatalf("pairs %q, labels %s: pairsMatch %v, pairsEqual %v", p, lset, got, want)
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
			n, _, _ := countPairs(p)
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
			n, _, _ := countPairs(p)
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
			t.Errorf("pairs %.40q: found %s, want none", c.pairs, ms.lset)
		case !c.want.IsEmpty() && (ms == nil || !labels.Equal(ms.lset, c.want)):
			t.Errorf("pairs %.40q: found %v, want %s", c.pairs, ms, c.want)
		}
	}
}
