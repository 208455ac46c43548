package xorchunk

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// headerSize is the chunk's sample count (uint16, big-endian).
const headerSize = 2

// MaxSamples is the most samples one chunk's header can count.
const MaxSamples = math.MaxUint16

// Encoder builds one XOR chunk at a time at the end of a caller's buffer,
// so one buffer can hold a series' chunks back to back. The zero Encoder
// is ready after Start.
//
// It is 64 bytes, a size class of Go's allocator: a head keeps one per
// series (actastore's headParts). So buf is the chunk alone (it starts at
// the header, in the spare capacity of the buffer given to Start), not
// that buffer with an offset, and the sample count is 16 bits (the
// header's width); the pending bit count stays 32 bits, as narrower ones
// cost about 10 % in BenchmarkEncode.
type Encoder struct {
	buf    []byte // the chunk, from its header
	acc    uint64 // pending bits, most significant first
	t      int64
	v      uint64
	tDelta uint64

	nacc     uint32 // number of pending bits in acc (< 64 between calls)
	n        uint16 // samples in the chunk (at most MaxSamples)
	leading  uint8  // 0xff: no window yet
	trailing uint8
}

// Start begins a new chunk after dst's bytes, in dst's spare capacity
// while it lasts (dst's bytes are kept); Finish(dst) returns dst with the
// chunk appended.
func (e *Encoder) Start(dst []byte) {
	e.buf = append(dst[len(dst):], 0, 0)
	e.acc, e.nacc, e.n = 0, 0, 0
	e.t, e.v, e.tDelta = 0, 0, 0
	e.leading, e.trailing = 0xff, 0
}

// NumSamples is the number of samples appended to the current chunk.
func (e *Encoder) NumSamples() int { return int(e.n) }

// Chunk returns the current chunk as Finish would, without finishing it:
// Append may go on, and a later Chunk or Finish returns the longer chunk.
// It writes the sample count into the header and the pending bits into
// the buffer's spare capacity, where the next Append's bits overwrite
// them with the same values; when they do not fit there it returns a
// copy instead, so a read never grows the encoder's buffer (Cap stays
// what the appends made it). The bytes stay valid until the next Append
// or Start. It writes nothing when the bytes are already whole, so a
// frozen chunk in read-only memory (Freeze) is never written.
//
// Meant for a head appended to and read in turns: Append touches neither
// the header nor the last byte (the accumulator holds them), so its
// memory traffic is one 8-byte store per 64 bits.
func (e *Encoder) Chunk() []byte {
	if binary.BigEndian.Uint16(e.buf) != e.n {
		binary.BigEndian.PutUint16(e.buf, e.n)
	}
	if e.nacc == 0 {
		return e.buf
	}
	var pending [8]byte
	binary.BigEndian.PutUint64(pending[:], e.acc)
	nb := int(e.nacc+7) / 8
	if len(e.buf)+nb <= cap(e.buf) {
		return append(e.buf, pending[:nb]...)
	}
	c := make([]byte, 0, len(e.buf)+nb)
	c = append(c, e.buf...)
	return append(c, pending[:nb]...)
}

// LastT is the timestamp of the chunk's newest sample (ms, as appended,
// or as given to Freeze); meaningless while NumSamples is 0.
func (e *Encoder) LastT() int64 { return e.t }

// Freeze makes chunk, a whole XOR chunk (as Finish or Chunk return it, at
// least the 2 header bytes), the current chunk, to be read only: Chunk
// returns it, NumSamples counts from its header and LastT is lastT (the
// caller's record of its newest timestamp, ms). Append must not be called
// before the next Start: where the last sample's bits end within the last
// byte is not in the bytes. chunk may be read-only memory.
func (e *Encoder) Freeze(chunk []byte, lastT int64) {
	*e = Encoder{buf: chunk, n: binary.BigEndian.Uint16(chunk), leading: 0xff, t: lastT}
}

// Cap is the capacity of the buffer the chunk is in, in bytes, from the
// chunk's header on: for a chunk started in an empty buffer, what it holds
// allocated (that buffer, as it grew).
func (e *Encoder) Cap() int { return cap(e.buf) }

// Len is the number of bytes the chunk's samples fill so far, the header
// and the pending bits included.
func (e *Encoder) Len() int { return len(e.buf) + int(e.nacc+7)/8 }

// Grow makes room for n more bytes of samples without a reallocation, as
// slices.Grow does: for a caller that knows how large the chunk will get
// (a WAL replay), one allocation instead of append's doubling.
func (e *Encoder) Grow(n int) { e.buf = slices.Grow(e.buf, n) }

// Finish completes the chunk and returns dst, the buffer given to Start
// (its bytes and length as they were then), with the chunk appended: the
// chunk is the returned buffer from len(dst) on. It copies the chunk only
// when the chunk outgrew dst's spare capacity. The Encoder must be
// started again before the next Append.
func (e *Encoder) Finish(dst []byte) []byte {
	for e.nacc > 0 {
		e.buf = append(e.buf, byte(e.acc>>56))
		e.acc <<= 8
		e.nacc -= min(e.nacc, 8)
	}
	binary.BigEndian.PutUint16(e.buf, e.n)
	c := e.buf
	e.buf = nil
	if spare := dst[len(dst):cap(dst)]; len(c) <= len(spare) && unsafe.SliceData(spare) == unsafe.SliceData(c) {
		return dst[:len(dst)+len(c)] // in place
	}
	return append(dst, c...)
}

// Append adds one sample. A chunk takes at most MaxSamples samples
// (chunkenc panics beyond; so does Append).
func (e *Encoder) Append(t int64, v float64) {
	vb := math.Float64bits(v)
	switch e.n {
	case 0:
		e.writeVarint(uint64(t<<1) ^ uint64(t>>63)) // zig-zag, as binary.PutVarint
		e.writeBits(vb, 64)
	case 1:
		e.tDelta = uint64(t - e.t)
		e.writeVarint(e.tDelta)
		e.writeXOR(vb)
	case MaxSamples:
		panic("xorchunk: chunk capacity exceeded")
	default:
		tDelta := uint64(t - e.t)
		dod := int64(tDelta - e.tDelta)
		switch {
		case dod == 0:
			e.writeBits(0, 1)
		case bitRange(dod, 14):
			e.writeBits(0b10<<14|uint64(dod)&(1<<14-1), 16)
		case bitRange(dod, 17):
			e.writeBits(0b110<<17|uint64(dod)&(1<<17-1), 20)
		case bitRange(dod, 20):
			e.writeBits(0b1110<<20|uint64(dod)&(1<<20-1), 24)
		default:
			e.writeBits(0b1111, 4)
			e.writeBits(uint64(dod), 64)
		}
		e.tDelta = tDelta
		e.writeXOR(vb)
	}
	e.t, e.v = t, vb
	e.n++
}

// bitRange is chunkenc's: whether x fits the nbits bucket of the delta of
// delta encoding (an asymmetric range, one more on the positive side).
func bitRange(x int64, nbits uint8) bool {
	return -((1<<(nbits-1))-1) <= x && x <= 1<<(nbits-1)
}

// writeXOR writes the value as chunkenc's xorWrite does.
func (e *Encoder) writeXOR(vb uint64) {
	delta := vb ^ e.v
	if delta == 0 {
		e.writeBits(0, 1)
		return
	}
	leading := uint8(bits.LeadingZeros64(delta))
	trailing := uint8(bits.TrailingZeros64(delta))
	if leading >= 32 {
		leading = 31 // 5 bits
	}
	if e.leading != 0xff && leading >= e.leading && trailing >= e.trailing {
		sig := 64 - uint(e.leading) - uint(e.trailing)
		e.writeBits(0b10, 2)
		e.writeBits(delta>>e.trailing, sig)
		return
	}
	e.leading, e.trailing = leading, trailing
	sig := 64 - uint(leading) - uint(trailing)
	// '11', 5 bits of leading zeros, 6 bits of sig (64 wraps to 0).
	e.writeBits(0b11<<11|uint64(leading)<<6|uint64(sig)&0x3f, 13)
	e.writeBits(delta>>trailing, sig)
}

// writeVarint writes u as uvarint bytes at the current bit position, as
// chunkenc's writeByte does.
func (e *Encoder) writeVarint(u uint64) {
	for u >= 0x80 {
		e.writeBits(u&0x7f|0x80, 8)
		u >>= 7
	}
	e.writeBits(u, 8)
}

// writeBits writes the low nbits (1..64) of u; the bits above nbits must
// be zero. Small enough to inline: most writes fit the accumulator.
func (e *Encoder) writeBits(u uint64, nbits uint) {
	if n := uint(e.nacc) + nbits; n < 64 {
		e.acc |= u << (64 - n)
		e.nacc = uint32(n)
		return
	}
	e.spill(u, nbits)
}

// spill fills the accumulator with the top bits of u, flushes it and keeps
// the rest.
func (e *Encoder) spill(u uint64, nbits uint) {
	rest := uint(e.nacc) + nbits - 64
	e.acc |= u >> rest
	e.buf = binary.BigEndian.AppendUint64(e.buf, e.acc)
	e.acc, e.nacc = 0, uint32(rest)
	if rest > 0 {
		e.acc = u << (64 - rest)
	}
}
