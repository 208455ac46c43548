package actastore

import (
	"encoding/binary"
	"weak"

	"github.com/prometheus/prometheus/model/labels"
)

// symbols keeps each label (name and value) of an index's series once. A
// series holds its labels as a string of uvarint symbol ids in label order
// (memSeries.syms): 5-12 bytes for a node_exporter or Kubernetes pod
// series instead of its 100-200 bytes of label text, the largest part of
// an idle series' memory before (a heap profile of a million live series:
// label strings 150 B a series). A symbol is a whole label rather than a
// name or a value, so a known series' label pairs are checked by one
// compare per label (pairsEqual), and its ids are half as many.
//
// Guarded like its index, by the index's owner (registry.mu, a
// BucketView's refresh, a ReadOnly's one caller): intern and release
// under its write lock, the readers (labels, get, equal, pairsEqual,
// appendCanonical) under its read lock. An id is freed for reuse only once
// every series that held it was removed and is unreachable (a weak pointer
// each), so a query or commit still holding a removed series reads its
// labels right.
type symbols struct {
	// syms are the symbols by id, each encoded as its label is in a
	// LabelPairs encoding and in the canonical one (appendCanonicalLabels):
	// the name's length (uvarint), the name, the value's length, the value.
	syms []string
	ids  map[string]uint32 // by symbol
	refs []uint32          // by id: how many live or dead label sets hold it
	free []uint32
	// dead are removed series whose ids stay held until the series is
	// collected; sweep releases them. sweepAt and grown pace the sweeps
	// so each costs O(1) amortized per release or new id.
	dead    []deadSeries
	sweepAt int
	grown   int
}

type deadSeries struct {
	ms   weak.Pointer[memSeries]
	syms string
}

func newSymbols() *symbols {
	return &symbols{ids: make(map[string]uint32), sweepAt: 64}
}

// intern returns lset as symbol ids, holding one reference to each.
func (s *symbols) intern(lset labels.Labels) string {
	var buf [32]byte
	var enc []byte
	b := buf[:0]
	lset.Range(func(l labels.Label) {
		enc = binary.AppendUvarint(enc[:0], uint64(len(l.Name)))
		enc = append(enc, l.Name...)
		enc = binary.AppendUvarint(enc, uint64(len(l.Value)))
		enc = append(enc, l.Value...)
		b = binary.AppendUvarint(b, uint64(s.ref(enc)))
	})
	return string(b)
}

// ref returns the id of the symbol enc with one more reference, giving it
// one if new.
func (s *symbols) ref(enc []byte) uint32 {
	if id, ok := s.ids[string(enc)]; ok {
		s.refs[id]++
		return id
	}
	sym := string(enc)
	if len(s.free) == 0 && len(s.dead) > 0 && s.grown >= len(s.dead) {
		s.sweep()
	}
	var id uint32
	if n := len(s.free); n > 0 {
		id, s.free = s.free[n-1], s.free[:n-1]
		s.syms[id], s.refs[id] = sym, 1
	} else {
		id = uint32(len(s.syms))
		s.syms, s.refs = append(s.syms, sym), append(s.refs, 1)
		s.grown++
	}
	s.ids[sym] = id
	return id
}

// release gives back the ids of ms, which its index no longer holds, once
// nothing references ms any more.
func (s *symbols) release(ms *memSeries) {
	s.dead = append(s.dead, deadSeries{ms: weak.Make(ms), syms: ms.syms})
	if len(s.dead) >= s.sweepAt {
		s.sweep()
	}
}

// sweep frees the ids held only by collected dead series.
func (s *symbols) sweep() {
	kept := s.dead[:0]
	for _, d := range s.dead {
		if d.ms.Value() != nil {
			kept = append(kept, d)
			continue
		}
		for rest := d.syms; rest != ""; {
			var id uint64
			id, rest = nextSymbol(rest)
			if s.refs[id]--; s.refs[id] == 0 {
				delete(s.ids, s.syms[id])
				s.syms[id] = ""
				s.free = append(s.free, uint32(id))
			}
		}
	}
	clear(s.dead[len(kept):])
	s.dead = kept
	s.sweepAt = 2*len(kept) + 64
	s.grown = 0
}

// nextSymbol reads one uvarint id off the front of syms (ours: well formed).
func nextSymbol(syms string) (uint64, string) {
	v, k := uvarintString(syms)
	return v, syms[k:]
}

// label splits an encoded symbol into its name and value.
func label(enc string) (name, value string) {
	n, k := uvarintString(enc)
	name, enc = enc[k:k+int(n)], enc[k+int(n):]
	n, k = uvarintString(enc)
	return name, enc[k : k+int(n)]
}

// uvarintString reads a uvarint (ours: well formed) and its length.
func uvarintString(s string) (uint64, int) {
	var v uint64
	for i, shift := 0, uint(0); ; i, shift = i+1, shift+7 {
		v |= uint64(s[i]&0x7f) << shift
		if s[i] < 0x80 {
			return v, i + 1
		}
	}
}

// next reads one label off the front of syms.
func (s *symbols) next(syms string) (name, value, rest string) {
	id, rest := nextSymbol(syms)
	name, value = label(s.syms[id])
	return name, value, rest
}

// labels builds the label set of syms with b (nil: a new builder).
func (s *symbols) labels(b *labels.ScratchBuilder, syms string) labels.Labels {
	if b == nil {
		nb := labels.NewScratchBuilder(8)
		b = &nb
	}
	b.Reset()
	for syms != "" {
		var name, value string
		name, value, syms = s.next(syms)
		b.Add(name, value)
	}
	return b.Labels()
}

// get is the value of label name in syms, or "".
func (s *symbols) get(syms, name string) string {
	for syms != "" {
		var n, v string
		n, v, syms = s.next(syms)
		if n == name {
			return v
		}
	}
	return ""
}

// names calls f with every label name of syms.
func (s *symbols) names(syms string, f func(name string)) {
	for syms != "" {
		var n string
		n, _, syms = s.next(syms)
		f(n)
	}
}

// equal reports whether syms holds exactly lset.
func (s *symbols) equal(syms string, lset labels.Labels) bool {
	eq := true
	lset.Range(func(l labels.Label) {
		if !eq || syms == "" {
			eq = false
			return
		}
		var n, v string
		n, v, syms = s.next(syms)
		eq = n == l.Name && v == l.Value
	})
	return eq && syms == ""
}

// pairsEqual reports whether a LabelPairs encoding (uvarint count, then
// uvarint length, bytes; name, value, ...) is exactly the labels of syms,
// in their order, the count and each length in its shortest form (as
// receivers and Prometheus write them; a longer form would not hash to the
// series' ref either).
func (s *symbols) pairsEqual(syms string, pairs []byte) bool {
	var n uint64
	if len(pairs) > 0 && pairs[0] < 0x80 {
		n, pairs = uint64(pairs[0]), pairs[1:]
	} else {
		// 128 labels or more (a limit allows it), or no count at all. A
		// uvarint of several bytes is in its shortest form when its last
		// byte is not 0.
		var k int
		if n, k = binary.Uvarint(pairs); k <= 0 || pairs[k-1] == 0 {
			return false
		}
		pairs = pairs[k:]
	}
	tab := s.syms
	for syms != "" {
		var id uint64
		if syms[0] < 0x80 { // a one-byte id: the first 128 symbols
			id, syms = uint64(syms[0]), syms[1:]
		} else {
			id, syms = nextSymbol(syms)
		}
		enc := tab[id]
		if len(pairs) < len(enc) || string(pairs[:len(enc)]) != enc {
			return false
		}
		pairs = pairs[len(enc):]
		n--
	}
	return len(pairs) == 0 && n == 0
}

// appendCanonical appends the canonical encoding of syms' labels
// (appendCanonicalLabels) to dst.
func (s *symbols) appendCanonical(dst []byte, syms string) []byte {
	ids := 0
	for i := 0; i < len(syms); i++ {
		if syms[i] < 0x80 {
			ids++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(ids))
	for syms != "" {
		var id uint64
		id, syms = nextSymbol(syms)
		dst = append(dst, s.syms[id]...)
	}
	return dst
}
