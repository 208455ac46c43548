package acta

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/acta-remote/acta-remote/acta/internal/encoding"
)

// Conversion between the column layer's dense canonical bytes (non-null
// values only, little-endian, spec §3) and the slot-per-row typed arrays of
// the public API.

// classOf maps a logical type to its physical class and value width.
func classOf(t Type) (encoding.Class, int) {
	switch t.ID {
	case TypeBool:
		return encoding.ClassBool, 0
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64, TypeDecimal64, TypeTimestamp64, TypeDate32:
		return encoding.ClassSigned, t.ValueWidth()
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		return encoding.ClassUnsigned, t.ValueWidth()
	case TypeFloat32, TypeFloat64:
		return encoding.ClassFloat, t.ValueWidth()
	case TypeFixedBinary:
		return encoding.ClassFixed, int(t.Width)
	}
	return encoding.ClassVar, 0
}

// littleEndian is true on the hosts we build for; fixed-width values are
// then copied with one memmove instead of a decode per element.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// asBytes views a fixed-width slice as its bytes.
func asBytes[T Fixed](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}

// viewFixed views dense as rows values of T when their bytes are T's
// in-memory layout (little-endian host) and aligned for T.
func viewFixed[T Fixed](dense []byte, rows int) ([]T, bool) {
	var z T
	w := int(unsafe.Sizeof(z))
	if !littleEndian || rows == 0 || len(dense) != rows*w || uintptr(unsafe.Pointer(unsafe.SliceData(dense)))%unsafe.Alignof(z) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(dense))), rows), true
}

// fillFixed decodes n dense canonical values of width w from src into dst.
func fillFixed[T Fixed](dst []T, src []byte) {
	if littleEndian {
		copy(asBytes(dst), src)
		return
	}
	var z T
	w := int(unsafe.Sizeof(z))
	for i := range dst {
		b := src[i*w:]
		var u uint64
		for k := w - 1; k >= 0; k-- {
			u = u<<8 | uint64(b[k])
		}
		switch p := any(&dst[i]).(type) {
		case *int8:
			*p = int8(u)
		case *int16:
			*p = int16(u)
		case *int32:
			*p = int32(u)
		case *int64:
			*p = int64(u)
		case *uint8:
			*p = uint8(u)
		case *uint16:
			*p = uint16(u)
		case *uint32:
			*p = uint32(u)
		case *uint64:
			*p = u
		case *float32:
			*p = math.Float32frombits(uint32(u))
		case *float64:
			*p = math.Float64frombits(u)
		}
	}
}

// appendFixed appends the canonical bytes of the rows of v that valid marks
// present.
func appendFixed[T Fixed](dst []byte, v []T, valid Bitmap) []byte {
	if valid == nil && littleEndian {
		return append(dst, asBytes(v)...)
	}
	var z T
	w := int(unsafe.Sizeof(z))
	for i := range v {
		if !valid.Valid(i) {
			continue
		}
		if littleEndian {
			dst = append(dst, asBytes(v[i:i+1])...)
			continue
		}
		var u uint64
		switch x := any(v[i]).(type) {
		case int8:
			u = uint64(x)
		case int16:
			u = uint64(x)
		case int32:
			u = uint64(x)
		case int64:
			u = uint64(x)
		case uint8:
			u = uint64(x)
		case uint16:
			u = uint64(x)
		case uint32:
			u = uint64(x)
		case uint64:
			u = x
		case float32:
			u = uint64(math.Float32bits(x))
		case float64:
			u = math.Float64bits(x)
		}
		for k := 0; k < w; k++ {
			dst = append(dst, byte(u>>(8*k)))
		}
	}
	return dst
}

// expandFixed builds a slot-per-row array from dense values. dense is the
// decoder's own buffer (every block read decodes into fresh memory, and
// nothing else refers to it afterwards): without nulls, on a
// little-endian host, and aligned for T, the array takes it over instead
// of copying it — a wide read otherwise allocates and copies every
// timestamp and value a second time.
func expandFixed[T Fixed](rows int, validity Bitmap, dense []byte) *FixedArray[T] {
	if validity == nil {
		if v, ok := viewFixed[T](dense, rows); ok {
			return &FixedArray[T]{Values: v}
		}
	}
	a := &FixedArray[T]{Values: make([]T, rows), Valid: validity}
	if validity == nil {
		fillFixed(a.Values, dense)
		return a
	}
	var z T
	w := int(unsafe.Sizeof(z))
	k := 0
	for i := 0; i < rows; i++ {
		if validity.Valid(i) {
			fillFixed(a.Values[i:i+1], dense[k*w:(k+1)*w])
			k++
		}
	}
	return a
}

// toArray turns decoded dense values into the typed array for t.
func toArray(t Type, rows int, validity Bitmap, v encoding.Values) (Array, error) {
	class, w := classOf(t)
	switch class {
	case encoding.ClassBool:
		if len(v.Bools) != rows-validity.nullCount(rows) {
			return nil, fmt.Errorf("%d bool values for %d present rows", len(v.Bools), rows-validity.nullCount(rows))
		}
		a := &FixedArray[bool]{Values: make([]bool, rows), Valid: validity}
		k := 0
		for i := range a.Values {
			if validity.Valid(i) {
				a.Values[i] = v.Bools[k]
				k++
			}
		}
		return a, nil
	case encoding.ClassVar:
		present := rows - validity.nullCount(rows)
		if len(v.Offsets) != present+1 && !(present == 0 && len(v.Offsets) == 0) {
			return nil, fmt.Errorf("%d offsets for %d present rows", len(v.Offsets), present)
		}
		// The offsets index Data later; a bad one must fail here, not panic
		// in a caller.
		for i := 0; i+1 < len(v.Offsets); i++ {
			if v.Offsets[i] < 0 || v.Offsets[i] > v.Offsets[i+1] || v.Offsets[i+1] > len(v.Data) {
				return nil, fmt.Errorf("value %d offsets [%d, %d) outside %d data bytes", i, v.Offsets[i], v.Offsets[i+1], len(v.Data))
			}
		}
		a := &BytesArray{Offsets: make([]int, rows+1), Data: v.Data, Valid: validity}
		if validity == nil {
			copy(a.Offsets, v.Offsets)
			return a, nil
		}
		k, end := 0, 0
		if len(v.Offsets) > 0 {
			end = v.Offsets[0]
			a.Offsets[0] = end
		}
		for i := 0; i < rows; i++ {
			if validity.Valid(i) {
				k++
				end = v.Offsets[k]
			}
			a.Offsets[i+1] = end
		}
		return a, nil
	case encoding.ClassFixed:
		present := rows - validity.nullCount(rows)
		if len(v.Fixed) != present*w {
			return nil, fmt.Errorf("%d value bytes for %d present rows of width %d", len(v.Fixed), present, w)
		}
		a := &BytesArray{Offsets: make([]int, rows+1), Data: v.Fixed, Valid: validity}
		end := 0
		for i := 0; i < rows; i++ {
			if validity.Valid(i) {
				end += w
			}
			a.Offsets[i+1] = end
		}
		return a, nil
	}
	present := rows - validity.nullCount(rows)
	if len(v.Fixed) != present*w {
		return nil, fmt.Errorf("%d value bytes for %d present rows of width %d", len(v.Fixed), present, w)
	}
	switch t.ID {
	case TypeInt8:
		return expandFixed[int8](rows, validity, v.Fixed), nil
	case TypeInt16:
		return expandFixed[int16](rows, validity, v.Fixed), nil
	case TypeInt32, TypeDate32:
		return expandFixed[int32](rows, validity, v.Fixed), nil
	case TypeInt64, TypeDecimal64, TypeTimestamp64:
		return expandFixed[int64](rows, validity, v.Fixed), nil
	case TypeUint8:
		return expandFixed[uint8](rows, validity, v.Fixed), nil
	case TypeUint16:
		return expandFixed[uint16](rows, validity, v.Fixed), nil
	case TypeUint32:
		return expandFixed[uint32](rows, validity, v.Fixed), nil
	case TypeUint64:
		return expandFixed[uint64](rows, validity, v.Fixed), nil
	case TypeFloat32:
		return expandFixed[float32](rows, validity, v.Fixed), nil
	case TypeFloat64:
		return expandFixed[float64](rows, validity, v.Fixed), nil
	}
	return nil, fmt.Errorf("no array for %s", t)
}

// checkArray checks that a matches column c: Go type, length, nulls only
// where nullable, fixed_binary widths, UTF-8 text.
func checkArray(c *Column, a Array, rows int) error {
	if a == nil {
		return fmt.Errorf("column %q: nil array", c.Name)
	}
	if a.Len() != rows {
		return fmt.Errorf("column %q: %d rows, batch has %d", c.Name, a.Len(), rows)
	}
	ok := false
	switch c.Type.ID {
	case TypeBool:
		_, ok = a.(*FixedArray[bool])
	case TypeInt8:
		_, ok = a.(*FixedArray[int8])
	case TypeInt16:
		_, ok = a.(*FixedArray[int16])
	case TypeInt32, TypeDate32:
		_, ok = a.(*FixedArray[int32])
	case TypeInt64, TypeDecimal64, TypeTimestamp64:
		_, ok = a.(*FixedArray[int64])
	case TypeUint8:
		_, ok = a.(*FixedArray[uint8])
	case TypeUint16:
		_, ok = a.(*FixedArray[uint16])
	case TypeUint32:
		_, ok = a.(*FixedArray[uint32])
	case TypeUint64:
		_, ok = a.(*FixedArray[uint64])
	case TypeFloat32:
		_, ok = a.(*FixedArray[float32])
	case TypeFloat64:
		_, ok = a.(*FixedArray[float64])
	case TypeUTF8, TypeCategorical, TypeBinary, TypeFixedBinary:
		_, ok = a.(*BytesArray)
	}
	if !ok {
		return fmt.Errorf("column %q is %s, got array %T", c.Name, c.Type, a)
	}
	v := a.Validity()
	if v != nil && len(v) < (rows+7)/8 {
		return fmt.Errorf("column %q: validity bitmap of %d bytes for %d rows", c.Name, len(v), rows)
	}
	if !c.Nullable && v.nullCount(rows) > 0 {
		return fmt.Errorf("column %q is not nullable but has nulls", c.Name)
	}
	if ba, isB := a.(*BytesArray); isB {
		if len(ba.Offsets) != rows+1 {
			return fmt.Errorf("column %q: %d offsets for %d rows", c.Name, len(ba.Offsets), rows)
		}
		for i := 0; i < rows; i++ {
			lo, hi := ba.Offsets[i], ba.Offsets[i+1]
			if lo < 0 || hi < lo || hi > len(ba.Data) {
				return fmt.Errorf("column %q row %d: offsets [%d, %d) outside %d data bytes", c.Name, i, lo, hi, len(ba.Data))
			}
			if !v.Valid(i) {
				continue
			}
			if c.Type.ID == TypeFixedBinary && hi-lo != int(c.Type.Width) {
				return fmt.Errorf("column %q row %d: %d bytes in fixed_binary(%d)", c.Name, i, hi-lo, c.Type.Width)
			}
			if hi-lo > math.MaxUint32 {
				return fmt.Errorf("column %q row %d: %d bytes exceed the v0.2 maximum", c.Name, i, hi-lo)
			}
		}
		if c.Type.ID == TypeUTF8 || c.Type.ID == TypeCategorical {
			for i := 0; i < rows; i++ {
				if v.Valid(i) && !validUTF8(ba.Data[ba.Offsets[i]:ba.Offsets[i+1]]) {
					return fmt.Errorf("column %q row %d: not valid UTF-8", c.Name, i)
				}
			}
		}
	}
	return nil
}
