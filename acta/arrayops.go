package acta

// Row selection on decoded arrays, used by range filtering.

func sliceBitmap(b Bitmap, lo, hi int) Bitmap {
	if b == nil {
		return nil
	}
	out := NewBitmap(hi - lo)
	for i := lo; i < hi; i++ {
		if b.Valid(i) {
			out.Set(i-lo, true)
		}
	}
	return out
}

func gatherBitmap(b Bitmap, idx []int) Bitmap {
	if b == nil {
		return nil
	}
	out := NewBitmap(len(idx))
	for k, i := range idx {
		if b.Valid(i) {
			out.Set(k, true)
		}
	}
	return out
}

func sliceFixed[T Fixed](a *FixedArray[T], lo, hi int) *FixedArray[T] {
	return &FixedArray[T]{Values: a.Values[lo:hi:hi], Valid: sliceBitmap(a.Valid, lo, hi)}
}

func gatherFixed[T Fixed](a *FixedArray[T], idx []int) *FixedArray[T] {
	v := make([]T, len(idx))
	for k, i := range idx {
		v[k] = a.Values[i]
	}
	return &FixedArray[T]{Values: v, Valid: gatherBitmap(a.Valid, idx)}
}

func sliceBytes(a *BytesArray, lo, hi int) *BytesArray {
	return &BytesArray{Offsets: a.Offsets[lo : hi+1 : hi+1], Data: a.Data, Valid: sliceBitmap(a.Valid, lo, hi)}
}

func gatherBytes(a *BytesArray, idx []int) *BytesArray {
	off := make([]int, 1, len(idx)+1)
	var data []byte
	for _, i := range idx {
		data = append(data, a.Value(i)...)
		off = append(off, len(data))
	}
	return &BytesArray{Offsets: off, Data: data, Valid: gatherBitmap(a.Valid, idx)}
}

// sliceArray returns rows [lo, hi) of a, sharing values where it can.
func sliceArray(a Array, lo, hi int) Array {
	switch x := a.(type) {
	case *FixedArray[bool]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[int8]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[int16]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[int32]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[int64]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[uint8]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[uint16]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[uint32]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[uint64]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[float32]:
		return sliceFixed(x, lo, hi)
	case *FixedArray[float64]:
		return sliceFixed(x, lo, hi)
	case *BytesArray:
		return sliceBytes(x, lo, hi)
	}
	panic("BUG: acta: sliceArray on unknown array type")
}

// gatherArray returns the rows idx of a, in that order.
func gatherArray(a Array, idx []int) Array {
	switch x := a.(type) {
	case *FixedArray[bool]:
		return gatherFixed(x, idx)
	case *FixedArray[int8]:
		return gatherFixed(x, idx)
	case *FixedArray[int16]:
		return gatherFixed(x, idx)
	case *FixedArray[int32]:
		return gatherFixed(x, idx)
	case *FixedArray[int64]:
		return gatherFixed(x, idx)
	case *FixedArray[uint8]:
		return gatherFixed(x, idx)
	case *FixedArray[uint16]:
		return gatherFixed(x, idx)
	case *FixedArray[uint32]:
		return gatherFixed(x, idx)
	case *FixedArray[uint64]:
		return gatherFixed(x, idx)
	case *FixedArray[float32]:
		return gatherFixed(x, idx)
	case *FixedArray[float64]:
		return gatherFixed(x, idx)
	case *BytesArray:
		return gatherBytes(x, idx)
	}
	panic("BUG: acta: gatherArray on unknown array type")
}
