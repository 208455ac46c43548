package encoding

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Statistics, spec §11: canonical min then max at the type's canonical
// width; nulls and NaNs ignored; bool bounds are one byte 0 or 1; no
// statistic for variable-width types or when no value remains. Ties keep
// the first value in row order, so -0.0 and 0.0 are reported as they first
// appear (the reference writer does the same).

// automaticMinValues and automaticRatio are the Acta README's Automatic
// rule: not the primary column, at least 64 non-null non-NaN values, and
// raw value bytes at least eight times the min/max pair (binding only for
// bool, where it raises the floor to 121 values).
const (
	automaticMinValues = 64
	automaticRatio     = 8
)

func (e *Encoder) statistics(col column) ([]byte, error) {
	o := e.opts
	if o.Stats == StatsNone || col.class == ClassVar || o.Stats == StatsAutomatic && o.Primary {
		return nil, nil
	}
	w := col.width
	if col.class == ClassBool {
		w = 1
	}
	lo, hi, count := extremes(col)
	if count == 0 {
		return nil, nil
	}
	if o.Stats == StatsAutomatic {
		valueBytes := count * w
		if col.class == ClassBool {
			valueBytes = bitmapLen(count)
		}
		if count < automaticMinValues || 2*w*automaticRatio > valueBytes {
			return nil, nil
		}
	}
	e.stats = e.stats[:0]
	if col.class == ClassBool {
		e.stats = append(e.stats, byte(lo), byte(hi))
		return e.stats, nil
	}
	e.stats = append(e.stats, value(col, lo)...)
	e.stats = append(e.stats, value(col, hi)...)
	return e.stats, nil
}

// extremes returns the positions of the min and max values (for bool, the
// min and max as 0/1) and how many values took part.
func extremes(col column) (lo, hi, count int) {
	v := col.vals
	n := v.N
	switch col.class {
	case ClassBool:
		lo, hi = 1, 0
		for _, b := range v.Bools {
			x := 0
			if b {
				x = 1
			}
			lo, hi = min(lo, x), max(hi, x)
		}
		return lo, hi, n
	case ClassSigned:
		r := newIntRange(true, col.width)
		for i := 0; i < n; i++ {
			x := int64(r.load(v.Fixed[i*col.width:]))
			if i == 0 || x < int64(r.load(v.Fixed[lo*col.width:])) {
				lo = i
			}
			if i == 0 || x > int64(r.load(v.Fixed[hi*col.width:])) {
				hi = i
			}
		}
		return lo, hi, n
	case ClassUnsigned:
		r := newIntRange(false, col.width)
		for i := 0; i < n; i++ {
			x := r.load(v.Fixed[i*col.width:])
			if i == 0 || x < r.load(v.Fixed[lo*col.width:]) {
				lo = i
			}
			if i == 0 || x > r.load(v.Fixed[hi*col.width:]) {
				hi = i
			}
		}
		return lo, hi, n
	case ClassFloat:
		f := func(i int) float64 {
			if col.width == 4 {
				return float64(math.Float32frombits(binary.LittleEndian.Uint32(v.Fixed[4*i:])))
			}
			return math.Float64frombits(binary.LittleEndian.Uint64(v.Fixed[8*i:]))
		}
		var mn, mx float64
		for i := 0; i < n; i++ {
			x := f(i)
			if x != x {
				continue
			}
			if count == 0 || x < mn {
				lo, mn = i, x
			}
			if count == 0 || x > mx {
				hi, mx = i, x
			}
			count++
		}
		return lo, hi, count
	case ClassFixed:
		for i := 1; i < n; i++ {
			if bytes.Compare(value(col, i), value(col, lo)) < 0 {
				lo = i
			}
			if bytes.Compare(value(col, i), value(col, hi)) > 0 {
				hi = i
			}
		}
		return lo, hi, n
	}
	return 0, 0, 0
}
