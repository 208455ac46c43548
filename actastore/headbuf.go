package actastore

import (
	"math"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/xorchunk"
)

// headBuf is a track's head: its accepted, unflushed samples, one per
// timestamp, read back in timestamp order. A kind whose samples an XOR
// chunk can hold (kind.xorHead, the float kind) keeps the samples that
// arrive in order in a Prometheus XOR chunk (tsdb/chunkenc: about 1-2
// bytes a sample for regular scrapes instead of 16); a sample older than
// the chunk's newest goes to ss, a small sorted slice, and both are merged
// whenever the head is read. A kind without a chunk keeps every sample in
// ss. Guarded by the owning series' mu, like its track.
type headBuf[S any] struct {
	// p holds the samples; nil when there are none, so a flushed series
	// pays two pointers for its head.
	p *headParts[S]
	// sidePart is nil unless the head holds samples beside the chunk or
	// its chunk is frozen (p is not nil then). Here, not in headParts, so
	// that headParts is the encoder alone: 64 bytes, a size class, where
	// with the pointer it took the 80-byte one.
	sidePart *headSide[S]
}

// headParts is a non-empty head's chunk. XOR chunks store the float64
// bits as they are, so NaN payloads and stale markers survive bit for
// bit. The chunk's newest timestamp is the encoder's (LastT), and what a
// head in order does not need is out of line (headSide).
type headParts[S any] struct {
	// chunk holds in-order samples compressed, as chunkenc would (the
	// bytes are chunkenc's, FuzzEncoder), none for a kind without a chunk.
	// Not chunkenc's appender: it reads and writes the chunk's header and
	// last byte on every sample, a cache miss per sample of each series
	// at ingest (7 % of the ingest CPU); xorchunk keeps them in the
	// encoder until the chunk is read (bytes).
	chunk xorchunk.Encoder
}

// headSide is the part of a head that samples arriving in order, into a
// chunk of their own, never need.
type headSide[S any] struct {
	// frozen is set while the head holds a WAL checkpoint's chunk
	// (frozenChunks): chunk itself, read only, or older. The first sample
	// after the restart recompresses the head.
	frozen *frozenChunks
	// older is the checkpoint's chunk once the WAL replay has added
	// samples newer than it (headBuf.split): it keeps the head's oldest
	// samples, read only, and chunk takes the replayed ones in order, at
	// 1-2 bytes a sample instead of 16 beside it. olderMaxT is its newest
	// timestamp (ms), olderN its sample count (kept here, by ss: reading
	// the header is a cache miss, and len reads the count often).
	older     []byte
	olderMaxT int64
	olderN    int
	// ss holds the samples not in chunk, sorted by timestamp: those older
	// than chunk's newest, those beyond its capacity, a checkpoint's that
	// its chunk follows (until the next sample), and every sample of a kind
	// without a chunk.
	ss []S
}

// side is the samples beside the chunk, uncompressed.
func (h *headBuf[S]) side() []S {
	if h.sidePart == nil {
		return nil
	}
	return h.sidePart.ss
}

// setSS makes ss the samples beside the chunk (h.p is not nil), dropping
// the side part when nothing is left in it.
func (h *headBuf[S]) setSS(ss []S) {
	switch {
	case h.sidePart != nil:
		h.sidePart.ss = ss
		if len(ss) == 0 && h.sidePart.frozen == nil {
			h.sidePart = nil
		}
	case len(ss) > 0:
		h.sidePart = &headSide[S]{ss: ss}
	}
}

// maxT is the chunk's newest timestamp (meaningless without a chunk).
func (p *headParts[S]) maxT() int64 { return p.chunk.LastT() }

const (
	// xorHeadFixed is what a compressed head costs beside its stream and
	// side samples: its headParts (the encoder, 64 bytes, a size class).
	xorHeadFixed = 64
	// xorHeadInitCap is the first stream allocation: the 2-byte header and
	// a first sample (varint timestamp, 8 value bytes) fit; append grows it.
	xorHeadInitCap = 24
	// xorHeadMaxSamples: the chunk header counts samples in a uint16.
	xorHeadMaxSamples = xorchunk.MaxSamples
	// xorHeadMaxSide: once the side slice of a kind with a chunk holds this
	// many samples they are merged into a new chunk, so a head receiving
	// much out-of-order data stays compressed.
	xorHeadMaxSide = 64
)

// frozenChunks owns the mapped bytes of a WAL checkpoint (checkpoint.go)
// that the heads restored from its chunks alias, one value shared by all
// of them (headSide.frozen); the mapping is unmapped once no head holds
// it. Such a chunk is readable, but cannot be appended to (the bit
// position in its last byte is not in its bytes): the replay adds the
// WAL's newer samples in a chunk after it (headBuf.split), and the first
// sample added after the restart encodes the head afresh (recompress),
// once (headBuf.addNew).
type frozenChunks struct {
	m *wal.Mapping
}

// isFrozen reports whether h's chunk was restored from a checkpoint and
// not appended to since.
func (h *headBuf[S]) isFrozen() bool { return h.restored() && h.sidePart.older == nil }

// restored reports whether h holds a checkpoint's chunk, as its chunk
// (isFrozen) or beside it (older).
func (h *headBuf[S]) restored() bool { return h.sidePart != nil && h.sidePart.frozen != nil }

// split makes the frozen chunk older and starts a chunk after it; it
// returns how the head's bytes changed.
func (h *headBuf[S]) split() int64 {
	before := h.chunkBytes()
	p := h.p
	h.sidePart.older, h.sidePart.olderMaxT, h.sidePart.olderN = p.chunk.Chunk(), p.chunk.LastT(), p.chunk.NumSamples()
	p.chunk.Start(make([]byte, 0, xorHeadInitCap))
	return h.chunkBytes() - before
}

// olderN is the number of samples in older.
func (h *headBuf[S]) olderN() int {
	if h.sidePart == nil {
		return 0
	}
	return h.sidePart.olderN
}

// olderMaxT is older's newest timestamp (ms; olderN > 0).
func (h *headBuf[S]) olderMaxT() int64 { return h.sidePart.olderMaxT }

// olderIterator reads older (olderN > 0).
func (h *headBuf[S]) olderIterator() chunkenc.Iterator {
	var c chunkenc.XORChunk
	c.Reset(h.sidePart.older)
	return c.Iterator(nil)
}

// startChunk gives h an empty chunk (h.p is not nil).
func (h *headBuf[S]) startChunk() {
	h.p.chunk.Start(make([]byte, 0, xorHeadInitCap))
	if sp := h.sidePart; sp != nil {
		sp.frozen, sp.older, sp.olderN = nil, nil, 0
		h.setSS(sp.ss)
	}
}

// freeze makes data, a whole chunk of a checkpoint that owner maps, h's
// chunk, with newest timestamp maxT.
func (h *headBuf[S]) freeze(data []byte, maxT int64, owner *frozenChunks) {
	if h.p == nil {
		h.p = &headParts[S]{}
	}
	h.p.chunk.Freeze(data, maxT)
	if h.sidePart == nil {
		h.sidePart = &headSide[S]{}
	}
	h.sidePart.frozen = owner
}

// n is the number of samples in the chunk (0: p has no chunk).
func (p *headParts[S]) n() int {
	if p == nil {
		return 0
	}
	return p.chunk.NumSamples()
}

// hasChunk reports whether p holds a chunk (one holds a sample at least).
func (p *headParts[S]) hasChunk() bool { return p.n() > 0 }

// bytes returns the chunk's bytes (xorchunk.Encoder.Chunk: whole, valid
// until the next sample). Only readers call it: it writes the header.
func (p *headParts[S]) bytes() []byte { return p.chunk.Chunk() }

// iterator reads the chunk (p.hasChunk).
func (p *headParts[S]) iterator() chunkenc.Iterator {
	var c chunkenc.XORChunk
	c.Reset(p.bytes())
	return c.Iterator(nil)
}

// chunkBytes is what the chunk costs (with the parts it needs), older
// included.
func (h *headBuf[S]) chunkBytes() int64 {
	if !h.p.hasChunk() {
		return 0
	}
	return xorHeadFixed + int64(h.p.chunk.Cap()) + int64(len(h.sidePart.olderBytes()))
}

// olderBytes is older (s may be nil).
func (s *headSide[S]) olderBytes() []byte {
	if s == nil {
		return nil
	}
	return s.older
}

// decodeHeadXOR appends the samples of older and the chunk in [mint,
// maxt] to dst, in timestamp order (older's are older).
func decodeHeadXOR[S any](k kind[S], dst []S, h *headBuf[S], mint, maxt int64) []S {
	p := h.p
	if p.n() == 0 || p.maxT() < mint {
		return dst
	}
	// Neither can be corrupt: the chunk is being appended to, and the
	// checkpoint record holding older passed its checksum.
	if h.olderN() > 0 && h.olderMaxT() >= mint {
		dst, _ = appendXOR(k, dst, h.sidePart.older, mint, maxt)
	}
	dst, _ = appendXOR(k, dst, p.bytes(), mint, maxt)
	return dst
}

// len is the number of samples in the head.
func (h *headBuf[S]) len() int {
	if h.p == nil {
		return 0
	}
	return len(h.side()) + h.p.n() + h.olderN()
}

// bytes is what the head costs in memory (headState.bytes): the compressed
// chunk as allocated, kind.size for each uncompressed sample.
func (h *headBuf[S]) bytes(k kind[S]) int64 {
	b := h.chunkBytes()
	for _, s := range h.side() {
		b += k.size(s)
	}
	return b
}

// bounds are the head's oldest and newest timestamps; ok is false when it
// is empty.
func (h *headBuf[S]) bounds(k kind[S]) (mint, maxt int64, ok bool) {
	if h.len() == 0 {
		return 0, 0, false
	}
	mint, maxt = int64(math.MaxInt64), int64(math.MinInt64)
	if ss := h.side(); len(ss) > 0 {
		mint, maxt = k.ts(ss[0]), k.ts(ss[len(ss)-1])
	}
	if p := h.p; p.n() > 0 {
		it := p.iterator()
		if h.olderN() > 0 {
			it = h.olderIterator()
		}
		it.Next()
		mint, maxt = min(mint, it.AtT()), max(maxt, p.maxT())
	}
	return mint, maxt, true
}

// maxT is the head's newest timestamp (noTime when empty).
func (h *headBuf[S]) maxT(k kind[S]) int64 {
	t := noTime
	if ss := h.side(); len(ss) > 0 {
		t = k.ts(ss[len(ss)-1])
	}
	if h.p.n() > 0 {
		t = max(t, h.p.maxT())
	}
	return t
}

// find returns the head's sample at t.
func (h *headBuf[S]) find(k kind[S], t int64) (S, bool) {
	var zero S
	p := h.p
	if p == nil {
		return zero, false
	}
	if ss := h.side(); len(ss) > 0 {
		if i, ok := find(k, ss, t); ok {
			return ss[i], true
		}
	}
	if p.n() > 0 && t <= p.maxT() {
		it := p.iterator()
		if h.olderN() > 0 && t <= h.olderMaxT() {
			it = h.olderIterator()
		}
		if it.Seek(t) == chunkenc.ValFloat {
			if st, v := it.At(); st == t {
				return k.fromXOR(st, v), true
			}
		}
	}
	return zero, false
}

// inRange appends the head's samples within [mint, maxt] to dst, in
// timestamp order.
func (h *headBuf[S]) inRange(k kind[S], dst []S, mint, maxt int64) []S {
	if h.p == nil {
		return dst
	}
	base := len(dst)
	dst = decodeHeadXOR(k, dst, h, mint, maxt)
	split := len(dst)
	dst = inRange(k, dst, h.side(), mint, maxt)
	if split > base && split < len(dst) && k.ts(dst[split]) < k.ts(dst[split-1]) {
		// Out-of-order samples interleave with the chunk's: timestamps are
		// unique, so a sort by timestamp is the merge.
		part := dst[base:]
		slices.SortFunc(part, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
	}
	return dst
}

// all appends every head sample to dst in timestamp order.
func (h *headBuf[S]) all(k kind[S], dst []S) []S {
	return h.inRange(k, dst, math.MinInt64, math.MaxInt64)
}

// add stores smp unless the head holds its timestamp; it returns whether
// it did and how the head's bytes changed.
func (h *headBuf[S]) add(k kind[S], smp S) (bool, int64) {
	if _, found := h.find(k, k.ts(smp)); found {
		return false, 0
	}
	return true, h.addNew(k, smp, false)
}

// addNew stores smp, whose timestamp the head does not hold, and returns
// how the head's bytes changed: into the chunk when it is newer than
// everything held (and the chunk has room), beside it otherwise; a kind
// with a chunk starts one with its first sample (64 fixed bytes and a
// 24-byte stream: less than side samples and the side part).
//
// lazy is the WAL replay's, for what it must not encode: a checkpoint's
// samples that its chunk for the head follows (headChunk) go beside, and
// a head holding a checkpoint's chunk keeps it as restored, taking the
// samples newer than it into a chunk after it (split), older ones
// beside. Out of replay, such a head is recompressed whole by its first
// sample.
func (h *headBuf[S]) addNew(k kind[S], smp S, lazy bool) int64 {
	if h.p == nil {
		h.p = &headParts[S]{}
	}
	p, t := h.p, k.ts(smp)
	var b int64
	switch {
	case !k.xorHead():
		return h.addSide(k, smp)
	case lazy && !h.restored():
		return h.addSide(k, smp)
	case lazy:
		if !h.newest(k, t) {
			return h.addSide(k, smp)
		}
		if h.isFrozen() {
			b = h.split()
		}
	case h.restored(), !p.hasChunk() && len(h.side()) > 0:
		b = h.recompress(k) // a restored or replayed head is compressed with its side samples
		p = h.p
	case !p.hasChunk():
		h.startChunk()
	}
	// The chunk takes smp when it has room and smp is newer than
	// everything in the head.
	if p.n() < xorHeadMaxSamples && h.newest(k, t) {
		before := h.chunkBytes()
		p.appendXOR(k, smp)
		return b + h.chunkBytes() - before
	}
	b += h.addSide(k, smp)
	if !lazy && p.hasChunk() && p.n() < xorHeadMaxSamples && len(h.side()) >= xorHeadMaxSide {
		b += h.recompress(k)
	}
	return b
}

// splitWith makes the frozen chunk older and ss, strictly increasing, all
// newer than it and at most a chunk's worth, the chunk after it; it
// returns how the head's bytes changed, and false (having done nothing)
// when the head is not frozen or ss does not fit. Side samples may be
// newer than some of ss: reads merge them (inRange). For a split head's
// second checkpoint entry, whose samples addNew would put beside such side
// samples one by one, uncompressed.
func (h *headBuf[S]) splitWith(k kind[S], ss []S) (int64, bool) {
	p := h.p
	if !h.isFrozen() || len(ss) == 0 || len(ss) > xorHeadMaxSamples || k.ts(ss[0]) <= p.maxT() {
		return 0, false
	}
	b := h.split()
	before := h.chunkBytes()
	for _, s := range ss {
		p.appendXOR(k, s)
	}
	return b + h.chunkBytes() - before, true
}

// newest reports whether t is newer than every sample h holds.
func (h *headBuf[S]) newest(k kind[S], t int64) bool {
	ss := h.side()
	return (h.p.n() == 0 || t > h.p.maxT()) && (len(ss) == 0 || t > k.ts(ss[len(ss)-1]))
}

// addSide inserts smp into the side samples and returns its bytes.
func (h *headBuf[S]) addSide(k kind[S], smp S) int64 {
	ss := h.side()
	i, _ := find(k, ss, k.ts(smp))
	if i == len(ss) {
		ss = append(ss, smp)
	} else {
		ss = slices.Insert(ss, i, smp)
	}
	h.setSS(ss)
	return k.size(smp)
}

// addNewer stores ss, strictly increasing and newer than everything the
// head holds, as addNew would one by one; a head that stays a slice (a
// kind without a chunk, or a checkpoint's samples the replay puts beside
// its chunk) takes them in one append.
func (h *headBuf[S]) addNewer(k kind[S], ss []S, lazy bool) int64 {
	if h.p == nil {
		h.p = &headParts[S]{}
	}
	var b int64
	if !k.xorHead() || (lazy && !h.restored()) {
		h.setSS(append(h.side(), ss...))
		for _, s := range ss {
			b += k.size(s)
		}
		return b
	}
	for _, s := range ss {
		b += h.addNew(k, s, lazy)
	}
	return b
}

func (p *headParts[S]) appendXOR(k kind[S], smp S) {
	t, v := k.xorPair(smp)
	p.chunk.Append(t, v)
}

// recompress merges the side samples into a new chunk (as many as it
// holds) and returns how the head's bytes changed.
func (h *headBuf[S]) recompress(k kind[S]) int64 {
	before := h.bytes(k)
	var all []S
	if !h.p.hasChunk() {
		all = h.side() // sorted, and build keeps no part of it
	} else {
		all = h.all(k, nil)
	}
	*h.p, h.sidePart = headParts[S]{}, nil // h.p reused by build
	h.build(k, all)
	return h.bytes(k) - before
}

// build fills an empty head (h.p nil or zero) with sorted, distinct
// samples (it keeps ss when the kind has no chunk).
func (h *headBuf[S]) build(k kind[S], ss []S) {
	if len(ss) == 0 {
		h.p, h.sidePart = nil, nil
		return
	}
	if h.p == nil {
		h.p = &headParts[S]{}
	}
	if !k.xorHead() {
		h.setSS(ss)
		return
	}
	n := min(len(ss), xorHeadMaxSamples)
	h.startChunk()
	for _, s := range ss[:n] {
		h.p.appendXOR(k, s)
	}
	if n < len(ss) {
		h.setSS(slices.Clone(ss[n:]))
	}
}

// take empties the head and returns its samples in timestamp order.
func (h *headBuf[S]) take(k kind[S]) []S {
	h2 := *h
	h.p, h.sidePart = nil, nil
	switch {
	case h2.p == nil:
		return nil
	case !h2.p.hasChunk():
		return h2.side() // already sorted; no copy
	}
	return h2.all(k, make([]S, 0, h2.len()))
}

// deleteFunc drops the samples del reports, returning how many and how
// the head's bytes changed.
func (h *headBuf[S]) deleteFunc(k kind[S], del func(S) bool) (int, int64) {
	n := h.len()
	if n == 0 {
		return 0, 0
	}
	before := h.bytes(k)
	if !h.p.hasChunk() {
		h.setSS(slices.DeleteFunc(h.side(), del))
		if len(h.side()) == 0 {
			h.p, h.sidePart = nil, nil
		}
		return n - h.len(), h.bytes(k) - before
	}
	kept := slices.DeleteFunc(h.all(k, nil), del)
	if len(kept) == n {
		return 0, 0
	}
	h.p, h.sidePart = nil, nil
	h.build(k, kept)
	return n - h.len(), h.bytes(k) - before
}

// growSide makes room for n more uncompressed samples (replay).
func (h *headBuf[S]) growSide(n int) {
	if h.p == nil {
		h.p = &headParts[S]{}
	}
	if h.sidePart == nil {
		h.sidePart = &headSide[S]{}
	}
	h.sidePart.ss = slices.Grow(h.sidePart.ss, n)
}
