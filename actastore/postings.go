package actastore

import (
	"encoding/binary"
	"slices"
)

// postingsSkipEvery is how many ids apart the skip entries of a postings
// list are: a lookup decodes at most this many.
const postingsSkipEvery = 128

// postings is one label value's series ids, ascending, compressed: each
// id is the uvarint of its difference from the one before (the first
// from 0). A target's series are created together, so their ids are
// consecutive and most differences take one byte, against four in a
// []uint32 (plus append's spare capacity: about 38 bytes a series of
// seven labels at a million series, 10 after). Ids only grow (index.add
// gives the next one), so adding one appends to the end.
//
// skip holds every postingsSkipEvery-th id with the offset of the
// difference after it, so that finding a few ids in a long list (a series
// named by all its labels, against a job's hundreds of thousands) decodes
// at most postingsSkipEvery ids for each (intersectInto).
type postings struct {
	data []byte
	skip []postingsSkip
	last uint32 // the newest id (valid when n > 0)
	n    uint32 // number of ids
}

type postingsSkip struct {
	id  uint32 // the id at a multiple of postingsSkipEvery
	off uint32 // offset in data of the difference after it
}

// add appends id, which must be greater than every id held.
func (p *postings) add(id uint32) {
	if p.n > 0 && id <= p.last {
		if id == p.last {
			return // a label set holding one pair twice (only a damaged record could): once is enough
		}
		panic("actastore: postings ids must grow")
	}
	p.data = binary.AppendUvarint(p.data, uint64(id-p.last))
	p.last = id
	p.n++
	if p.n%postingsSkipEvery == 0 {
		p.skip = append(p.skip, postingsSkip{id: id, off: uint32(len(p.data))})
	}
}

// appendTo appends the ids to dst in order.
func (p *postings) appendTo(dst []uint32) []uint32 {
	if p == nil {
		return dst
	}
	dst = slices.Grow(dst, int(p.n))
	var cur uint32
	for b := p.data; len(b) > 0; {
		d, k := binary.Uvarint(b)
		b = b[k:]
		cur += uint32(d)
		dst = append(dst, cur)
	}
	return dst
}

// each calls f with every id in order.
func (p *postings) each(f func(id uint32)) {
	var cur uint32
	for b := p.data; len(b) > 0; {
		d, k := binary.Uvarint(b)
		b = b[k:]
		cur += uint32(d)
		f(cur)
	}
}

// intersectInto appends to dst the ids of sorted a that p holds, in
// order: each is looked for from the skip entry at or before it, so the
// work is about len(a) × postingsSkipEvery rather than p.n.
func (p *postings) intersectInto(dst, a []uint32) []uint32 {
	var (
		cur  uint32 // the id decoded last (valid when started)
		pos  int    // offset in data of the next difference
		si   int    // skip entries before si are behind cur
		have bool   // cur is an id of p
	)
	for _, x := range a {
		if have && cur == x {
			dst = append(dst, x)
			continue
		}
		if si < len(p.skip) && p.skip[si].id <= x && (!have || cur < x) {
			// Jump to the last skip entry at or before x, if it is ahead.
			j, _ := slices.BinarySearchFunc(p.skip[si:], x, skipAfter)
			j += si
			if j > si && (!have || p.skip[j-1].id > cur) {
				cur, pos, have = p.skip[j-1].id, int(p.skip[j-1].off), true
			}
			si = j
		}
		for (!have || cur < x) && pos < len(p.data) {
			d, k := binary.Uvarint(p.data[pos:])
			pos += k
			cur += uint32(d)
			have = true
		}
		if !have || cur < x {
			break // every id of p is below x, and below the rest of a
		}
		if cur == x {
			dst = append(dst, x)
		}
	}
	return dst
}

// skipAfter orders skip entries against an id: an entry at it or before
// it sorts first, so a binary search finds the first entry after it.
func skipAfter(e postingsSkip, x uint32) int {
	if e.id <= x {
		return -1
	}
	return 1
}

// remove takes id out (retention or deletion) and reports whether any id
// is left. Only its difference and the next one change: the next becomes
// their sum, written where the two were, and the bytes after move up;
// the skip entries past it move with them, and an entry at id moves to
// the id before it (or goes, at the list's ends). The cost is the bytes
// after id, as a []uint32's delete.
func (p *postings) remove(id uint32) bool {
	if p.n == 0 || id > p.last {
		return p.n > 0
	}
	// Start from the last skip entry below id (at or before id-1).
	j := 0
	if id > 0 {
		j, _ = slices.BinarySearchFunc(p.skip, id-1, skipAfter)
	}
	var cur uint32
	pos := 0
	if j > 0 {
		cur, pos = p.skip[j-1].id, int(p.skip[j-1].off)
	}
	start, prev, found := pos, cur, false
	for pos < len(p.data) {
		start, prev = pos, cur
		d, k := binary.Uvarint(p.data[pos:])
		pos += k
		cur += uint32(d)
		if cur >= id {
			found = cur == id
			break
		}
	}
	if !found {
		return true // not held
	}
	end := pos // id's difference is data[start:end]
	isFirst, isLast := start == 0, end == len(p.data)
	shrink := end - start
	if !isLast {
		d2, k := binary.Uvarint(p.data[end:])
		var merged [binary.MaxVarintLen64]byte
		m := binary.PutUvarint(merged[:], uint64(cur-prev)+d2)
		copy(p.data[start:], merged[:m])
		shrink = end + k - (start + m)
		copy(p.data[start+m:], p.data[end+k:])
	}
	p.data = p.data[:len(p.data)-shrink]
	kept := p.skip[:0]
	for _, e := range p.skip {
		switch {
		case e.id == id && (isFirst || isLast):
			continue
		case e.id == id:
			e = postingsSkip{id: prev, off: uint32(start)}
		case int(e.off) > start:
			e.off -= uint32(shrink)
		}
		kept = append(kept, e)
	}
	p.skip = kept
	p.n--
	if isLast {
		p.last = prev
	}
	if p.n == 0 {
		*p = postings{}
	}
	return p.n > 0
}
