package encoding

import (
	"encoding/binary"
	"fmt"
)

// decodeFixed decodes one values stream of a non-variable class.
func decodeFixed(class Class, width int, transform uint16, b []byte, count int, budget *Budget) (Values, error) {
	switch class {
	case ClassBool:
		bm, err := decodeBitmap(transform, b, count, budget)
		if err != nil {
			return Values{}, err
		}
		if err := budget.Charge(int64(count)); err != nil {
			return Values{}, err
		}
		out := make([]bool, count)
		for i := range out {
			out[i] = bitAt(bm, i)
		}
		return Values{N: count, Bools: out}, nil
	case ClassSigned, ClassUnsigned:
		fixed, err := decodeInts(class == ClassSigned, width, transform, b, count, budget)
		if err != nil {
			return Values{}, err
		}
		return Values{N: count, Width: width, Fixed: fixed}, nil
	case ClassFloat, ClassFixed:
		fixed, err := decodeBytes(width, transform, b, count, budget)
		if err != nil {
			return Values{}, err
		}
		return Values{N: count, Width: width, Fixed: fixed}, nil
	}
	return Values{}, fmt.Errorf("%w: class %d", ErrUnsupported, class)
}

// decodeBytes undoes raw or byte-stream split (§9.6) for floats and
// fixed_binary, whose bytes are never read as numbers.
func decodeBytes(width int, transform uint16, b []byte, count int, budget *Budget) ([]byte, error) {
	if uint64(len(b)) != uint64(count)*uint64(width) {
		return nil, corruptf("stream holds %d bytes, want %d values of %d bytes", len(b), count, width)
	}
	switch transform {
	case TransformRaw:
		if err := budget.Charge(int64(len(b))); err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	case TransformByteStreamSplit:
		if err := budget.Charge(int64(len(b))); err != nil {
			return nil, err
		}
		return unsplit(make([]byte, len(b)), b, width), nil
	}
	return nil, corruptf("transform %d does not apply to float or fixed_binary values", transform)
}

// unsplit restores canonical order from byte-stream split storage.
func unsplit(dst, src []byte, width int) []byte {
	n := len(src) / width
	for k := 0; k < width; k++ {
		plane := src[k*n : k*n+n]
		for i, x := range plane {
			dst[i*width+k] = x
		}
	}
	return dst
}

// decodeBitmap decodes a boolean stream (raw §9.1, bit packed §9.2 with
// values 0 or 1, boolean RLE §9.7) into an LSB-first bitmap.
func decodeBitmap(transform uint16, b []byte, count int, budget *Budget) ([]byte, error) {
	n := bitmapLen(count)
	switch transform {
	case TransformRaw:
		if len(b) != n {
			return nil, corruptf("raw boolean stream has %d bytes, want %d for %d values", len(b), n, count)
		}
		if r := count % 8; r != 0 && b[n-1]>>r != 0 {
			return nil, corruptf("raw boolean stream has nonzero padding bits")
		}
		if err := budget.Charge(int64(n)); err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	case TransformBitPacked:
		r, err := newBitReader(b, count)
		if err != nil {
			return nil, err
		}
		if err := budget.Charge(int64(n)); err != nil {
			return nil, err
		}
		bm := make([]byte, n)
		for i := 0; i < count; i++ {
			switch r.next() {
			case 0:
			case 1:
				bm[i>>3] |= 1 << (uint(i) & 7)
			default:
				return nil, corruptf("bit-packed boolean %d is not 0 or 1", i)
			}
		}
		return bm, nil
	case TransformBoolRLE:
		return decodeBoolRLE(b, count, budget)
	}
	return nil, corruptf("transform %d does not apply to booleans", transform)
}

// decodeBoolRLE: uint32 run count, ceil(runs/8) LSB-first run values, then
// bit-packed positive run lengths summing to count.
func decodeBoolRLE(b []byte, count int, budget *Budget) ([]byte, error) {
	if len(b) < 4 {
		return nil, corruptf("boolean RLE stream of %d bytes has no run count", len(b))
	}
	runs := int(binary.LittleEndian.Uint32(b))
	if runs > count {
		return nil, corruptf("boolean RLE has %d runs for %d values", runs, count)
	}
	if runs == 0 {
		if count != 0 || len(b) != 4 {
			return nil, corruptf("empty boolean RLE for %d values in %d bytes", count, len(b))
		}
		return []byte{}, nil
	}
	vEnd := 4 + bitmapLen(runs)
	if len(b) < vEnd {
		return nil, corruptf("boolean RLE run values truncated: %d bytes, want %d", len(b), vEnd)
	}
	runVals := b[4:vEnd]
	r, err := newBitReader(b[vEnd:], runs)
	if err != nil {
		return nil, fmt.Errorf("boolean RLE run lengths: %w", err)
	}
	check := r
	total := 0
	for i := 0; i < runs; i++ {
		l := check.next()
		if l == 0 {
			return nil, corruptf("boolean RLE run %d has length 0", i)
		}
		if l > uint64(count-total) {
			return nil, corruptf("boolean RLE run lengths exceed %d values", count)
		}
		total += int(l)
	}
	if total != count {
		return nil, corruptf("boolean RLE run lengths sum to %d, want %d", total, count)
	}
	if err := budget.Charge(int64(bitmapLen(count))); err != nil {
		return nil, err
	}
	bm := make([]byte, bitmapLen(count))
	pos := 0
	for i := 0; i < runs; i++ {
		l := int(r.next())
		if bitAt(runVals, i) {
			setRun(bm, pos, l)
		}
		pos += l
	}
	return bm, nil
}

// setRun sets bits [pos, pos+n) of bm.
func setRun(bm []byte, pos, n int) {
	for n > 0 && pos&7 != 0 {
		bm[pos>>3] |= 1 << (uint(pos) & 7)
		pos++
		n--
	}
	for n >= 8 {
		bm[pos>>3] = 0xff
		pos += 8
		n -= 8
	}
	for ; n > 0; n-- {
		bm[pos>>3] |= 1 << (uint(pos) & 7)
		pos++
	}
}

// decodeLengths decodes a uint32 lengths stream (any integer transform, as
// the reference reader allows) into prefix-sum offsets.
func decodeLengths(transform uint16, b []byte, count int, offsets []int, budget *Budget) error {
	raw, err := decodeInts(false, 4, transform, b, count, budget)
	if err != nil {
		return err
	}
	offsets[0] = 0
	total := uint64(0)
	for i := 0; i < count; i++ {
		total += uint64(binary.LittleEndian.Uint32(raw[4*i:]))
		offsets[i+1] = int(total)
	}
	return nil
}

// intRange is the value range of one canonical integer width.
type intRange struct {
	signed bool
	width  int
	lo     int64  // signed minimum
	hi     uint64 // maximum (as uint64 for both signednesses)
}

func newIntRange(signed bool, width int) intRange {
	r := intRange{signed: signed, width: width}
	bitsN := uint(8 * width)
	if signed {
		r.lo = -1 << (bitsN - 1)
		r.hi = 1<<(bitsN-1) - 1
	} else if width == 8 {
		r.hi = ^uint64(0)
	} else {
		r.hi = 1<<bitsN - 1
	}
	return r
}

// load reads one canonical value, sign- or zero-extended to 64 bits.
func (r intRange) load(b []byte) uint64 {
	var v uint64
	switch r.width {
	case 1:
		v = uint64(b[0])
		if r.signed {
			v = uint64(int64(int8(b[0])))
		}
	case 2:
		x := binary.LittleEndian.Uint16(b)
		v = uint64(x)
		if r.signed {
			v = uint64(int64(int16(x)))
		}
	case 4:
		x := binary.LittleEndian.Uint32(b)
		v = uint64(x)
		if r.signed {
			v = uint64(int64(int32(x)))
		}
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	return v
}

// store writes v at the canonical width.
func store(dst []byte, v uint64, width int) {
	switch width {
	case 1:
		dst[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(dst, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(dst, uint32(v))
	default:
		binary.LittleEndian.PutUint64(dst, v)
	}
}

// add returns cur+d if it stays in range.
func (r intRange) add(cur uint64, d int64) (uint64, bool) {
	if r.signed {
		c := int64(cur)
		if d > 0 && c > int64(r.hi)-d || d < 0 && c < r.lo-d {
			return 0, false
		}
		return uint64(c + d), true
	}
	if d >= 0 {
		if uint64(d) > r.hi-cur {
			return 0, false
		}
		return cur + uint64(d), true
	}
	m := uint64(-d) // wraps correctly for math.MinInt64
	if m > cur {
		return 0, false
	}
	return cur - m, true
}

// fitsUnsigned reports whether a nonnegative value v is in range.
func (r intRange) fitsUnsigned(v uint64) bool { return v <= r.hi }

// decodeInts decodes an integer stream (raw, bit packed, frame of
// reference, delta, delta of delta) into canonical bytes, rejecting any
// value, intermediate or not, that leaves the column's type.
func decodeInts(signed bool, width int, transform uint16, b []byte, count int, budget *Budget) ([]byte, error) {
	r := newIntRange(signed, width)
	w := width
	alloc := func() ([]byte, error) {
		if err := budget.Charge(int64(count) * int64(w)); err != nil {
			return nil, err
		}
		return make([]byte, count*w), nil
	}
	switch transform {
	case TransformRaw:
		if uint64(len(b)) != uint64(count)*uint64(w) {
			return nil, corruptf("raw stream has %d bytes, want %d values of %d bytes", len(b), count, w)
		}
		out, err := alloc()
		if err != nil {
			return nil, err
		}
		copy(out, b)
		return out, nil
	case TransformBitPacked:
		br, err := newBitReader(b, count)
		if err != nil {
			return nil, err
		}
		out, err := alloc()
		if err != nil {
			return nil, err
		}
		for i := 0; i < count; i++ {
			v := br.next()
			if !r.fitsUnsigned(v) {
				return nil, corruptf("bit-packed value %d does not fit %d bytes", v, w)
			}
			store(out[i*w:], v, w)
		}
		return out, nil
	case TransformFrameOfRef:
		if count == 0 {
			return emptyInts(b)
		}
		if len(b) < w {
			return nil, corruptf("frame-of-reference stream of %d bytes has no %d-byte base", len(b), w)
		}
		base := r.load(b)
		br, err := newBitReader(b[w:], count)
		if err != nil {
			return nil, err
		}
		out, err := alloc()
		if err != nil {
			return nil, err
		}
		room := r.hi - base // base is in range, so this does not wrap
		for i := 0; i < count; i++ {
			off := br.next()
			if off > room {
				return nil, corruptf("frame-of-reference offset %d leaves the %d-byte range", off, w)
			}
			store(out[i*w:], base+off, w)
		}
		return out, nil
	case TransformDelta:
		if count == 0 {
			return emptyInts(b)
		}
		if len(b) < w {
			return nil, corruptf("delta stream of %d bytes has no %d-byte first value", len(b), w)
		}
		// One value is stored alone (what we and the reference write) or,
		// reading §9.4 with §9.2 literally, followed by a bit-packed stream
		// of no deltas: the single width byte 00.
		if count == 1 && len(b) != w && !(len(b) == w+1 && b[w] == 0) {
			return nil, corruptf("one-value delta stream has %d bytes, want %d (or %d ending in width byte 00)", len(b), w, w+1)
		}
		cur := r.load(b)
		var br bitReader
		if count > 1 {
			var err error
			if br, err = newBitReader(b[w:], count-1); err != nil {
				return nil, err
			}
		}
		out, err := alloc()
		if err != nil {
			return nil, err
		}
		store(out, cur, w)
		for i := 1; i < count; i++ {
			var ok bool
			if cur, ok = r.add(cur, unzigzag(br.next())); !ok {
				return nil, corruptf("delta value %d leaves the %d-byte range", i, w)
			}
			store(out[i*w:], cur, w)
		}
		return out, nil
	case TransformDeltaOfDelta:
		if count < 2 {
			return nil, corruptf("delta of delta needs at least 2 values, stream declares %d", count)
		}
		if len(b) < w+8 {
			return nil, corruptf("delta-of-delta stream of %d bytes has no first value and delta", len(b))
		}
		cur := r.load(b)
		delta := int64(binary.LittleEndian.Uint64(b[w:]))
		br, err := newBitReader(b[w+8:], count-2)
		if err != nil {
			return nil, err
		}
		out, err := alloc()
		if err != nil {
			return nil, err
		}
		store(out, cur, w)
		var ok bool
		if cur, ok = r.add(cur, delta); !ok {
			return nil, corruptf("first delta leaves the %d-byte range", w)
		}
		store(out[w:], cur, w)
		for i := 2; i < count; i++ {
			dd := unzigzag(br.next())
			nd := delta + dd
			if dd > 0 && nd < delta || dd < 0 && nd > delta {
				return nil, corruptf("delta %d overflows int64", i)
			}
			delta = nd
			if cur, ok = r.add(cur, delta); !ok {
				return nil, corruptf("delta-of-delta value %d leaves the %d-byte range", i, w)
			}
			store(out[i*w:], cur, w)
		}
		return out, nil
	}
	return nil, corruptf("transform %d does not apply to integers", transform)
}

func emptyInts(b []byte) ([]byte, error) {
	if len(b) != 0 {
		return nil, corruptf("empty stream has %d bytes", len(b))
	}
	return []byte{}, nil
}
