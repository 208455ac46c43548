package acta

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"
)

// expandFixed takes over a dense buffer without nulls when it is aligned
// (no copy: the values are the buffer's bytes), copies it when it is not,
// and gives the same values either way.
func TestExpandFixedViewsAlignedDense(t *testing.T) {
	vals := []int64{0, -1, math.MinInt64, math.MaxInt64, 1_700_000_000_123}
	buf := make([]byte, 8*len(vals)+1)
	for _, off := range []int{0, 1} {
		dense := buf[off : off+8*len(vals)]
		for i, v := range vals {
			binary.LittleEndian.PutUint64(dense[8*i:], uint64(v))
		}
		a := expandFixed[int64](len(vals), nil, dense)
		for i, v := range vals {
			if a.Values[i] != v {
				t.Fatalf("offset %d: value %d = %d, want %d", off, i, a.Values[i], v)
			}
		}
		shared := unsafe.Pointer(&a.Values[0]) == unsafe.Pointer(&dense[0])
		aligned := uintptr(unsafe.Pointer(&dense[0]))%8 == 0
		if shared != (aligned && littleEndian) {
			t.Fatalf("offset %d: shared %v, aligned %v", off, shared, aligned)
		}
		if a.Valid != nil {
			t.Fatalf("offset %d: a validity bitmap appeared", off)
		}
	}
	// With nulls the slot-per-row array is built as before.
	dense := make([]byte, 16)
	binary.LittleEndian.PutUint64(dense, 7)
	binary.LittleEndian.PutUint64(dense[8:], 9)
	valid := Bitmap{0b101}
	a := expandFixed[int64](3, valid, dense)
	if a.Values[0] != 7 || a.Values[1] != 0 || a.Values[2] != 9 {
		t.Fatalf("with nulls: %v", a.Values)
	}
}
