package xorchunk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrTruncated is returned by Decoder.Err when a chunk's bytes end before
// the samples its header counts.
var ErrTruncated = errors.New("xorchunk: chunk ends before its last sample")

// Decoder reads one XOR chunk's samples in order, as chunkenc's
// xorIterator gives them for every chunk chunkenc's appender (or Encoder)
// writes: the same timestamps and the same value bits (NaN payloads, -0).
// It reads bits through a 64-bit accumulator refilled eight bytes at a
// time and is called directly, not through chunkenc.Iterator: a plain
// read decodes every sample it answers with, and the interface calls and
// chunkenc's bit reads were most of that cost. FuzzDecoder holds the
// identity against chunkenc.
//
// On bytes no appender writes (a header counting more samples than the
// stream holds, a varint longer than ten bytes) it stops with an error
// instead of reading on; it never reads outside the chunk nor panics.
// The zero Decoder holds no samples; Reset starts one.
type Decoder struct {
	b    []byte // the stream: the chunk after its header
	pos  int    // next byte of b not yet in acc
	acc  uint64 // bits not yet read, most significant first
	nacc uint   // how many of acc's bits are the stream's

	t      int64
	v      uint64
	tDelta uint64
	n, of  uint16 // samples read, samples in the chunk

	leading, trailing uint8
	err               error
}

// Reset starts reading chunk (header included). A chunk shorter than its
// header holds no samples and sets Err.
func (d *Decoder) Reset(chunk []byte) {
	*d = Decoder{}
	if len(chunk) < headerSize {
		d.err = ErrTruncated
		return
	}
	d.of = binary.BigEndian.Uint16(chunk)
	d.b = chunk[headerSize:]
}

// Next advances to the next sample; false once the chunk's samples are
// read or on an error (Err).
//
// From the third sample on, with eight bytes of stream left, it reads in
// registers: a refill puts at least 56 bits in acc, enough for a delta of
// delta up to 20 bits and a value's control bits; the value's own bits
// take a second refill when they do not fit. The rest (the first two
// samples, a 64-bit delta of delta, the stream's last bytes) goes through
// next.
func (d *Decoder) Next() bool {
	if d.n < 2 || d.err != nil || d.n == d.of || d.pos+8 > len(d.b) {
		return d.next()
	}
	acc, nacc, pos := load8(d.b, d.acc, d.nacc, d.pos)
	if acc>>63 == 0 {
		acc <<= 1
		nacc--
	} else {
		ones := uint(bits.LeadingZeros64(^acc))
		if ones >= 4 {
			return d.next() // '1111': 64 bits, rare
		}
		sz := dodBits[ones]
		acc <<= ones + 1
		u := acc >> (64 - sz)
		acc <<= sz
		nacc -= ones + 1 + sz
		if u > 1<<(sz-1) {
			u -= 1 << sz
		}
		d.tDelta += u
	}
	d.t += int64(d.tDelta)
	if acc>>63 == 0 { // '0': the same value
		acc <<= 1
		nacc--
	} else {
		if acc>>62 == 2 { // '10': the previous window
			acc <<= 2
			nacc -= 2
		} else { // '11': a new window
			acc <<= 2
			d.leading = uint8(acc >> 59)
			mbits := uint8(acc>>53) & 0x3f
			if mbits == 0 {
				mbits = 64
			}
			d.trailing = 64 - d.leading - mbits
			acc <<= 11
			nacc -= 13
		}
		mbits := uint(64 - d.leading - d.trailing)
		u, acc2, nacc2, pos2, ok := d.bitsAt(acc, nacc, pos, mbits)
		if !ok {
			d.acc, d.nacc, d.pos = acc, nacc, pos
			return d.valueBits(mbits)
		}
		d.v ^= u << d.trailing
		acc, nacc, pos = acc2, nacc2, pos2
	}
	d.acc, d.nacc, d.pos = acc, nacc, pos
	d.n++
	return true
}

// bitsAt is Next's read of a value's n bits (n <= 64) from the reader
// state (acc, nacc, pos), refilling once or twice: the bits and the state
// after them; false when the stream has fewer than eight bytes left for a
// refill (then next reads them one field at a time from the state given).
func (d *Decoder) bitsAt(acc uint64, nacc uint, pos int, n uint) (uint64, uint64, uint, int, bool) {
	var hi uint64
	if n > nacc {
		if pos+8 > len(d.b) {
			return 0, 0, 0, 0, false
		}
		acc, nacc, pos = load8(d.b, acc, nacc, pos)
		if n > nacc {
			// 57 to 64 bits: 32 now, the rest after another refill.
			if pos+8 > len(d.b) {
				return 0, 0, 0, 0, false
			}
			hi, acc, nacc, n = acc>>32, acc<<32, nacc-32, n-32
			acc, nacc, pos = load8(d.b, acc, nacc, pos)
		}
	}
	return hi<<n | acc>>(64-n), acc << n, nacc - n, pos, true
}

// dodBits is the width of a delta of delta after 0, 1, 2 or 3 leading
// ones ('0' has none).
var dodBits = [4]uint{0, 14, 17, 20}

// valueBits reads the value's mbits window bits and ends the sample.
func (d *Decoder) valueBits(mbits uint) bool {
	u, ok := d.read(mbits)
	if !ok {
		return false
	}
	d.v ^= u << d.trailing
	d.n++
	return true
}

// next is Next one bit field at a time, for what Next leaves to it.
func (d *Decoder) next() bool {
	if d.err != nil || d.n == d.of {
		return false
	}
	switch d.n {
	case 0:
		// Byte-aligned: varint(t), then the 64 value bits.
		t, k := binary.Varint(d.b)
		if k <= 0 || len(d.b)-k < 8 {
			return d.fail(fmt.Errorf("%w: first sample", ErrTruncated))
		}
		d.t = t
		d.v = binary.BigEndian.Uint64(d.b[k:])
		d.pos = k + 8
	case 1:
		// Still byte-aligned: uvarint(t1 - t0), then the bit stream.
		u, k := binary.Uvarint(d.b[d.pos:])
		if k <= 0 {
			return d.fail(fmt.Errorf("%w: second timestamp", ErrTruncated))
		}
		d.pos += k
		d.tDelta = u
		d.t += int64(u)
		if !d.readValue() {
			return false
		}
	default:
		if !d.readTime() || !d.readValue() {
			return false
		}
	}
	d.n++
	return true
}

// At returns the current sample: timestamp (ms) and value.
func (d *Decoder) At() (int64, float64) { return d.t, math.Float64frombits(d.v) }

// Err is the error that stopped Next, nil at the chunk's end.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) fail(err error) bool {
	d.err = err
	return false
}

// readTime reads a delta of delta: '0', '10' + 14 bits, '110' + 17,
// '1110' + 20, '1111' + 64, two's complement in its width (a value above
// half the width's range is negative, as chunkenc reads it).
func (d *Decoder) readTime() bool {
	if d.nacc < 4 {
		d.refill()
	}
	ones := uint(bits.LeadingZeros64(^d.acc))
	if ones > 4 {
		ones = 4
	}
	prefix := min(ones+1, 4)
	if d.nacc < prefix {
		return d.fail(ErrTruncated)
	}
	d.acc <<= prefix
	d.nacc -= prefix
	var dod int64
	switch ones {
	case 0:
	case 4:
		u, ok := d.read(64)
		if !ok {
			return false
		}
		dod = int64(u)
	default:
		sz := dodBits[ones]
		u, ok := d.read(sz)
		if !ok {
			return false
		}
		if u > 1<<(sz-1) {
			u -= 1 << sz
		}
		dod = int64(u)
	}
	d.tDelta = uint64(int64(d.tDelta) + dod)
	d.t += int64(d.tDelta)
	return true
}

// readValue reads an XOR delta: '0' (the same value), '10' + the previous
// window's bits, '11' + 5 bits leading zeros + 6 bits width (0 is 64) +
// the bits. The window is kept in uint8 arithmetic as chunkenc keeps it.
func (d *Decoder) readValue() bool {
	ctl, ok := d.read(1)
	if !ok || ctl == 0 {
		return ok
	}
	if ctl, ok = d.read(1); !ok {
		return false
	}
	var mbits uint8
	if ctl == 0 {
		mbits = 64 - d.leading - d.trailing
	} else {
		u, ok := d.read(11)
		if !ok {
			return false
		}
		d.leading = uint8(u >> 6)
		mbits = uint8(u & 0x3f)
		if mbits == 0 {
			mbits = 64
		}
		d.trailing = 64 - d.leading - mbits
	}
	u, ok := d.read(uint(mbits))
	if !ok {
		return false
	}
	d.v ^= u << d.trailing
	return true
}

// read returns the next n bits (n <= 64) as the low bits of a word.
func (d *Decoder) read(n uint) (uint64, bool) {
	if n > 56 {
		hi, ok := d.read(n - 32)
		if !ok {
			return 0, false
		}
		lo, ok := d.read(32)
		return hi<<32 | lo, ok
	}
	if d.nacc < n {
		d.refill()
		if d.nacc < n {
			return 0, d.fail(ErrTruncated)
		}
	}
	u := d.acc >> (64 - n) // n == 0: a shift by 64 is 0 in Go
	d.acc <<= n
	d.nacc -= n
	return u, true
}

// refill tops acc up to at least 56 bits while the stream lasts (load8
// with eight bytes left, a byte at a time after that).
func (d *Decoder) refill() {
	if d.pos+8 <= len(d.b) {
		d.acc, d.nacc, d.pos = load8(d.b, d.acc, d.nacc, d.pos)
		return
	}
	for d.nacc <= 56 && d.pos < len(d.b) {
		d.acc |= uint64(d.b[d.pos]) << (56 - d.nacc)
		d.pos++
		d.nacc += 8
	}
}

// load8 is a refill from b[pos:], which holds at least eight bytes: it
// loads them at once below acc's nacc bits and counts the whole bytes
// that fit (nacc becomes 56 to 63). The bits of the byte that does not fit
// sit below nacc, where the next load writes the same bits again.
func load8(b []byte, acc uint64, nacc uint, pos int) (uint64, uint, int) {
	return acc | binary.BigEndian.Uint64(b[pos:])>>nacc, nacc | 56, pos + int(63-nacc)>>3
}
