package acta

import (
	"bytes"

	"fmt"
	"math"
	"os"
)

// ValidationLevel selects how much Validate checks.
type ValidationLevel int

const (
	// ValidateStructural checks the prologue, schema frame and every frame:
	// prefix, header, trailer and body CRCs, sequence, schema ID, row-ID
	// chain and block metadata. An incomplete tail is an error.
	ValidateStructural ValidationLevel = iota
	// ValidateFull also decodes every stream (checking its CRC), and checks
	// statistics, TS_SORTED ordering and the primary bounds against the
	// decoded values.
	ValidateFull
)

// Validate checks the file at path. It returns nil for a valid file, an
// error wrapping ErrCorrupt (with the offset) or ErrUnsupportedVersion, or
// another error for I/O problems.
func Validate(path string, level ValidationLevel) error {
	return ValidateWithLimits(path, level, DefaultLimits())
}

// ValidateWithLimits is Validate under limits other than the defaults.
func ValidateWithLimits(path string, level ValidationLevel, lim Limits) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("acta: validate: %w", err)
	}
	defer f.Close()
	p, _, err := planFor(f, lim)
	if err != nil {
		return withPath(err, path)
	}
	if p.IncompleteTail {
		return &CorruptionError{Path: path, Offset: p.LastGoodOffset,
			Reason: fmt.Sprintf("incomplete final frame: %d bytes after the last complete frame", p.TailBytes), Err: ErrIncompleteTail}
	}
	if level < ValidateFull {
		return nil
	}
	r, err := newReader(path, f, lim)
	if err != nil {
		return withPath(err, path)
	}
	for i := range r.blocks {
		if err := r.validateBlock(&r.blocks[i]); err != nil {
			return withPath(err, path)
		}
	}
	return nil
}

// validateBlock decodes every column of m and checks what the header claims
// about the values (§8 bounds and TS_SORTED, §11 statistics).
func (r *Reader) validateBlock(m *blockMeta) error {
	s := r.fh.schema
	all := make([]int, len(s.Columns))
	for i := range all {
		all[i] = i
	}
	var met ScanMetrics
	cols, _, err := r.decodeBlock(m, all, r.lim.MaxDecodedBlockBytes, &met)
	if err != nil {
		return err
	}
	if r.known {
		return fmt.Errorf("acta: validate block %d of %s: a reader from OpenKnown has no header lengths; validate the file itself", m.Seq, r.path)
	}
	hdr := make([]byte, m.headerLen)
	hoff := m.Offset + prefixSize
	if _, err := r.ra.ReadAt(hdr, hoff); err != nil {
		return err
	}
	var h blockHeader
	if err := r.fh.ctx.parseBlockHeader(&h, hdr, hoff, m.payloadLen, m.BaseRowID); err != nil {
		return err
	}
	// Primary bounds and TS_SORTED were checked by decodeBlock.
	for si, c := range s.Columns {
		cd := h.Cols[r.fh.ctx.pos[si]]
		at := hoff + blockHeaderSize + int64(r.fh.ctx.pos[si])*colDescSize
		want, ok := minMaxBytes(c.Type, cols[si])
		if cd.StatsKind == statsNone {
			continue
		}
		if !ok {
			return corruptf(at+22, "block %d column %q has statistics but no non-null, non-NaN fixed-width value", m.Seq, c.Name)
		}
		got := hdr[cd.StatsOff : cd.StatsOff+cd.StatsLen]
		if len(got) != len(want) {
			return corruptf(at+28, "block %d column %q statistics are %d bytes, want %d", m.Seq, c.Name, len(got), len(want))
		}
		if !sameStats(c.Type, got, want) {
			return corruptf(hoff+int64(cd.StatsOff), "block %d column %q statistics % x, values give % x", m.Seq, c.Name, got, want)
		}
	}
	return nil
}

// sameStats compares canonical min/max pairs; floats compare by value so
// that -0 and +0 are the same bound.
func sameStats(t Type, a, b []byte) bool {
	switch t.ID {
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(a)) == math.Float32frombits(le.Uint32(b)) &&
			math.Float32frombits(le.Uint32(a[4:])) == math.Float32frombits(le.Uint32(b[4:]))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(a)) == math.Float64frombits(le.Uint64(b)) &&
			math.Float64frombits(le.Uint64(a[8:])) == math.Float64frombits(le.Uint64(b[8:]))
	}
	return bytes.Equal(a, b)
}

// minMaxBytes computes the canonical §11 min/max pair of a decoded column,
// ignoring nulls and NaNs. ok is false when no value remains or the type
// has no v0.2 statistic.
func minMaxBytes(t Type, a Array) ([]byte, bool) {
	v := a.Validity()
	switch x := a.(type) {
	case *FixedArray[bool]:
		return mm(x, v, func(p, q bool) bool { return !p && q }, func(d []byte, b bool) []byte {
			if b {
				return append(d, 1)
			}
			return append(d, 0)
		})
	case *FixedArray[int8]:
		return mmInt(x, v)
	case *FixedArray[int16]:
		return mmInt(x, v)
	case *FixedArray[int32]:
		return mmInt(x, v)
	case *FixedArray[int64]:
		return mmInt(x, v)
	case *FixedArray[uint8]:
		return mmInt(x, v)
	case *FixedArray[uint16]:
		return mmInt(x, v)
	case *FixedArray[uint32]:
		return mmInt(x, v)
	case *FixedArray[uint64]:
		return mmInt(x, v)
	case *FixedArray[float32]:
		return mmFloat(x, v, func(f float32) bool { return f != f })
	case *FixedArray[float64]:
		return mmFloat(x, v, math.IsNaN)
	case *BytesArray:
		if t.ID != TypeFixedBinary {
			return nil, false
		}
		var lo, hi []byte
		for i := 0; i < x.Len(); i++ {
			if !v.Valid(i) {
				continue
			}
			b := x.Value(i)
			if lo == nil || bytes.Compare(b, lo) < 0 {
				lo = b
			}
			if hi == nil || bytes.Compare(b, hi) > 0 {
				hi = b
			}
		}
		if lo == nil {
			return nil, false
		}
		return append(append([]byte(nil), lo...), hi...), true
	}
	return nil, false
}

type ordered interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

func mm[T Fixed](a *FixedArray[T], v Bitmap, less func(p, q T) bool, put func([]byte, T) []byte) ([]byte, bool) {
	found := false
	var lo, hi T
	for i, x := range a.Values {
		if !v.Valid(i) {
			continue
		}
		if !found {
			lo, hi, found = x, x, true
			continue
		}
		if less(x, lo) {
			lo = x
		}
		if less(hi, x) {
			hi = x
		}
	}
	if !found {
		return nil, false
	}
	return put(put(nil, lo), hi), true
}

func mmInt[T ordered](a *FixedArray[T], v Bitmap) ([]byte, bool) {
	return mm(a, v, func(p, q T) bool { return p < q }, func(d []byte, x T) []byte {
		return appendFixed(d, []T{x}, nil)
	})
}

func mmFloat[T float32 | float64](a *FixedArray[T], v Bitmap, nan func(T) bool) ([]byte, bool) {
	valid := v
	if valid == nil {
		valid = NewBitmap(a.Len())
		for i := range a.Values {
			valid.Set(i, true)
		}
	} else {
		valid = append(Bitmap(nil), valid...)
	}
	for i, x := range a.Values {
		if nan(x) {
			valid.Set(i, false)
		}
	}
	return mmInt(a, valid)
}
