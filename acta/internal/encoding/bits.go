package encoding

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Bit packing, spec §9.2: one uint8 width, then the values concatenated
// LSB-first with zero high bits in the final byte. Width 0 is the whole
// encoding of an all-zero stream (the single byte 00).

// corruptf returns an error wrapping ErrCorrupt whose text names the numbers.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// bitWidth is the number of bits needed to hold v (0 for 0).
func bitWidth(v uint64) int { return 64 - bits.LeadingZeros64(v) }

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// packedLen is the transformed length of count values of width bits,
// including the width byte.
func packedLen(count, width int) int { return 1 + (count*width+7)/8 }

// bitWriter appends LSB-first packed values to a byte slice.
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits uint
	width uint
}

func newBitWriter(dst []byte, width int) bitWriter {
	return bitWriter{out: append(dst, byte(width)), width: uint(width)}
}

func (w *bitWriter) put(v uint64) {
	if w.width == 0 {
		return
	}
	if w.width < 64 {
		v &= 1<<w.width - 1
	}
	w.acc |= v << w.nbits
	n := w.nbits + w.width
	if n >= 64 {
		w.out = binary.LittleEndian.AppendUint64(w.out, w.acc)
		// The bits of v that did not fit in acc start the next word.
		if w.nbits == 0 {
			w.acc = 0
		} else {
			w.acc = v >> (64 - w.nbits)
		}
		w.nbits = n - 64
		return
	}
	w.nbits = n
}

// finish flushes the partial word and returns the packed bytes.
func (w *bitWriter) finish() []byte {
	for w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		if w.nbits <= 8 {
			w.nbits = 0
		} else {
			w.nbits -= 8
		}
	}
	return w.out
}

// bitReader reads count values from a packed stream whose length and zero
// padding newBitReader has already verified, so next never leaves data.
type bitReader struct {
	data  []byte
	width uint
	mask  uint64
	pos   uint64 // bit position
}

// newBitReader checks a §9.2 stream (width byte included) that must hold
// exactly count values.
func newBitReader(src []byte, count int) (bitReader, error) {
	if len(src) == 0 {
		return bitReader{}, corruptf("bit-packed stream has no width byte")
	}
	width := int(src[0])
	if width > 64 {
		return bitReader{}, corruptf("bit width %d > 64", width)
	}
	data := src[1:]
	if width == 0 {
		if len(data) != 0 {
			return bitReader{}, corruptf("zero-width bit-packed stream has %d data bytes, want 0", len(data))
		}
		return bitReader{}, nil
	}
	if count < 0 || uint64(count) > uint64(len(data))*8/uint64(width)+1 {
		return bitReader{}, corruptf("bit-packed stream of %d bytes cannot hold %d values of %d bits", len(data), count, width)
	}
	nbits := uint64(count) * uint64(width)
	want := (nbits + 7) / 8
	if uint64(len(data)) != want {
		return bitReader{}, corruptf("bit-packed stream has %d data bytes, want %d for %d values of %d bits", len(data), want, count, width)
	}
	if r := nbits % 8; r != 0 && data[len(data)-1]>>r != 0 {
		return bitReader{}, corruptf("bit-packed stream has nonzero padding bits")
	}
	br := bitReader{data: data, width: uint(width), mask: ^uint64(0)}
	if width < 64 {
		br.mask = 1<<uint(width) - 1
	}
	return br, nil
}

func (r *bitReader) next() uint64 {
	if r.width == 0 {
		return 0
	}
	i := r.pos >> 3
	shift := uint(r.pos & 7)
	r.pos += uint64(r.width)
	if i+8 <= uint64(len(r.data)) {
		v := binary.LittleEndian.Uint64(r.data[i:]) >> shift
		if shift+r.width > 64 {
			v |= uint64(r.data[i+8]) << (64 - shift)
		}
		return v & r.mask
	}
	// Near the end: gather the remaining bytes one at a time.
	var v uint64
	for k := uint(0); i+uint64(k) < uint64(len(r.data)) && k < 9; k++ {
		b := uint64(r.data[i+uint64(k)])
		if k*8 >= shift {
			v |= b << (k*8 - shift)
		} else {
			v |= b >> (shift - k*8)
		}
	}
	return v & r.mask
}

// bitmapLen is the byte length of an LSB-first bitmap of n bits.
func bitmapLen(n int) int { return (n + 7) / 8 }

func bitAt(b []byte, i int) bool { return b[i>>3]&(1<<(uint(i)&7)) != 0 }
