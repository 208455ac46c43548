package encoding

import (
	"fmt"
	"math/bits"
)

// Decode decodes one column of one block from its verified streams (stream
// CRCs already checked by the caller). It returns the validity bitmap (nil
// when every row is present) and the dense values. It charges budget before
// each allocation and returns errors wrapping ErrCorrupt, ErrLimit or
// ErrUnsupported.
//
// Element counts follow the reference implementation: every stream counts
// values, not bytes (a variable-width values stream counts strings); a
// validity stream counts rows; dictionary values and lengths count entries;
// indices count dense values; run values, run-value lengths and run lengths
// count runs. A constant column is a one-value plain column.
func Decode(class Class, width int, nullable bool, rows int, layout uint16, nullCount int, implicit bool, streams []Stream, budget *Budget) (validity []byte, vals Values, err error) {
	if err := checkClass(class, width); err != nil {
		return nil, Values{}, err
	}
	if rows < 0 || nullCount < 0 || nullCount > rows {
		return nil, Values{}, corruptf("null count %d outside 0..%d rows", nullCount, rows)
	}
	if !nullable && nullCount != 0 {
		return nil, Values{}, corruptf("non-nullable column has null count %d", nullCount)
	}
	d := decoder{class: class, width: width, budget: budget}
	if err := d.index(layout, streams); err != nil {
		return nil, Values{}, err
	}
	if validity, err = d.validity(nullable, rows, nullCount, implicit); err != nil {
		return nil, Values{}, err
	}
	dense := rows - nullCount
	if dense == 0 {
		if layout != LayoutPlain {
			return nil, Values{}, corruptf("all-null column uses layout %d, want plain", layout)
		}
		for _, s := range streams {
			if s.Kind != KindValidity {
				return nil, Values{}, corruptf("all-null column has a stream of kind %d", s.Kind)
			}
		}
		vals = Values{Width: width}
		if class == ClassVar {
			vals.Offsets = []int{0}
		}
		return validity, vals, nil
	}
	switch layout {
	case LayoutPlain:
		vals, err = d.plain(KindValues, KindLengths, dense)
	case LayoutConstant:
		var one Values
		if one, err = d.plain(KindValues, KindLengths, 1); err == nil {
			vals, err = d.repeat(one, dense)
		}
	case LayoutDictionary:
		vals, err = d.dictionary(dense)
	case LayoutRunLength:
		vals, err = d.runLength(dense)
	}
	if err != nil {
		return nil, Values{}, err
	}
	return validity, vals, nil
}

// checkClass rejects a class and width pair no logical type has.
func checkClass(class Class, width int) error {
	switch class {
	case ClassBool, ClassVar:
		return nil
	case ClassSigned, ClassUnsigned:
		if width == 1 || width == 2 || width == 4 || width == 8 {
			return nil
		}
	case ClassFloat:
		if width == 4 || width == 8 {
			return nil
		}
	case ClassFixed:
		if width > 0 {
			return nil
		}
	default:
		return fmt.Errorf("%w: class %d", ErrUnsupported, class)
	}
	return fmt.Errorf("%w: class %d has no width %d", ErrUnsupported, class, width)
}

// decoder holds one column's streams, indexed by kind.
type decoder struct {
	class  Class
	width  int
	budget *Budget
	byKind [KindRunLengths + 1]*Stream
}

// layoutKinds is the set of stream kinds each layout may carry (spec §8.1).
var layoutKinds = [...]uint16{
	LayoutPlain:      1<<KindValidity | 1<<KindValues | 1<<KindLengths,
	LayoutConstant:   1<<KindValidity | 1<<KindValues | 1<<KindLengths,
	LayoutDictionary: 1<<KindValidity | 1<<KindDictionaryValues | 1<<KindDictionaryLengths | 1<<KindIndices,
	LayoutRunLength:  1<<KindValidity | 1<<KindRunValues | 1<<KindRunLengths | 1<<KindLengths,
}

func (d *decoder) index(layout uint16, streams []Stream) error {
	if int(layout) >= len(layoutKinds) {
		return fmt.Errorf("%w: column layout %d", ErrUnsupported, layout)
	}
	for i := range streams {
		s := &streams[i]
		if s.Kind == 0 || s.Kind > KindRunLengths || layoutKinds[layout]&(1<<s.Kind) == 0 {
			return corruptf("stream kind %d does not belong to layout %d", s.Kind, layout)
		}
		if d.byKind[s.Kind] != nil {
			return corruptf("duplicate stream kind %d", s.Kind)
		}
		if s.Transform > TransformBoolRLE {
			return fmt.Errorf("%w: transform %d", ErrUnsupported, s.Transform)
		}
		if s.Codec > CodecZstd {
			return fmt.Errorf("%w: codec %d", ErrUnsupported, s.Codec)
		}
		d.byKind[s.Kind] = s
	}
	// Variable-width lengths belong to variable-width columns only.
	if d.class != ClassVar {
		for _, k := range []uint16{KindLengths, KindDictionaryLengths} {
			if d.byKind[k] != nil {
				return corruptf("stream kind %d on a fixed-width column", k)
			}
		}
	}
	return nil
}

// stream returns the stream of kind, checked to declare count elements
// (count < 0 accepts any), with its transformed bytes.
func (d *decoder) stream(kind uint16, count int) (*Stream, []byte, error) {
	s := d.byKind[kind]
	if s == nil {
		return nil, nil, corruptf("missing stream kind %d", kind)
	}
	if count >= 0 && s.Count != uint64(count) {
		return nil, nil, corruptf("stream kind %d declares %d elements, want %d", kind, s.Count, count)
	}
	if s.Count > 1<<40 {
		return nil, nil, corruptf("stream kind %d declares %d elements", kind, s.Count)
	}
	b, err := transformed(s, d.budget)
	if err != nil {
		return nil, nil, fmt.Errorf("stream kind %d: %w", kind, err)
	}
	return s, b, nil
}

// transformed undoes a stream's codec.
func transformed(s *Stream, budget *Budget) ([]byte, error) {
	switch s.Codec {
	case CodecNone:
		if uint64(len(s.Data)) != s.RawLen {
			return nil, corruptf("uncompressed stream stores %d bytes but declares %d", len(s.Data), s.RawLen)
		}
		return s.Data, nil
	case CodecZstd:
		return zstdDecode(s.Data, s.RawLen, budget)
	}
	return nil, fmt.Errorf("%w: codec %d", ErrUnsupported, s.Codec)
}

func (d *decoder) validity(nullable bool, rows, nullCount int, implicit bool) ([]byte, error) {
	s := d.byKind[KindValidity]
	switch {
	case !nullable:
		if s != nil {
			return nil, corruptf("non-nullable column has a validity stream")
		}
		return nil, nil
	case implicit:
		if s != nil {
			return nil, corruptf("implicit validity with a validity stream")
		}
		if nullCount == 0 {
			return nil, nil
		}
		if nullCount != rows {
			return nil, corruptf("implicit validity with %d nulls in %d rows", nullCount, rows)
		}
		if err := d.budget.Charge(int64(bitmapLen(rows))); err != nil {
			return nil, err
		}
		return make([]byte, bitmapLen(rows)), nil
	case s == nil:
		if nullCount != 0 {
			return nil, corruptf("column with %d nulls has no validity stream", nullCount)
		}
		return nil, nil
	}
	s, b, err := d.stream(KindValidity, rows)
	if err != nil {
		return nil, err
	}
	bm, err := decodeBitmap(s.Transform, b, rows, d.budget)
	if err != nil {
		return nil, fmt.Errorf("validity: %w", err)
	}
	valid := 0
	for _, x := range bm {
		valid += bits.OnesCount8(x)
	}
	if rows-valid != nullCount {
		return nil, corruptf("validity stream has %d nulls, column declares %d", rows-valid, nullCount)
	}
	if nullCount == 0 {
		return nil, nil
	}
	return bm, nil
}

// plain decodes a values stream (and its lengths for variable width) of
// count elements.
func (d *decoder) plain(valuesKind, lengthsKind uint16, count int) (Values, error) {
	s, b, err := d.stream(valuesKind, count)
	if err != nil {
		return Values{}, err
	}
	if d.class != ClassVar {
		v, err := decodeFixed(d.class, d.width, s.Transform, b, count, d.budget)
		if err != nil {
			return Values{}, fmt.Errorf("stream kind %d: %w", valuesKind, err)
		}
		return v, nil
	}
	if s.Transform != TransformRaw {
		return Values{}, corruptf("variable-width values use transform %d, want raw", s.Transform)
	}
	ls, lb, err := d.stream(lengthsKind, count)
	if err != nil {
		return Values{}, err
	}
	if err := d.budget.Charge(int64(count+1) * 8); err != nil {
		return Values{}, err
	}
	offsets := make([]int, count+1)
	if err := decodeLengths(ls.Transform, lb, count, offsets, d.budget); err != nil {
		return Values{}, fmt.Errorf("stream kind %d: %w", lengthsKind, err)
	}
	if offsets[count] != len(b) {
		return Values{}, corruptf("value lengths sum to %d, values stream holds %d bytes", offsets[count], len(b))
	}
	if err := d.budget.Charge(int64(len(b))); err != nil {
		return Values{}, err
	}
	return Values{N: count, Offsets: offsets, Data: append([]byte(nil), b...)}, nil
}

// dictionary decodes layout 2: entries, then one bit-packed index per value.
func (d *decoder) dictionary(dense int) (Values, error) {
	ds := d.byKind[KindDictionaryValues]
	if ds == nil {
		return Values{}, corruptf("missing stream kind %d", KindDictionaryValues)
	}
	if ds.Count == 0 || ds.Count > uint64(dense) {
		return Values{}, corruptf("dictionary of %d entries for %d values", ds.Count, dense)
	}
	dict, err := d.plain(KindDictionaryValues, KindDictionaryLengths, int(ds.Count))
	if err != nil {
		return Values{}, err
	}
	is, ib, err := d.stream(KindIndices, dense)
	if err != nil {
		return Values{}, err
	}
	if is.Transform != TransformBitPacked {
		return Values{}, fmt.Errorf("%w: dictionary indices use transform %d, only bit packing is defined", ErrUnsupported, is.Transform)
	}
	r, err := newBitReader(ib, dense)
	if err != nil {
		return Values{}, fmt.Errorf("dictionary indices: %w", err)
	}
	return d.gather(dict, dense, func() (int, int, error) {
		i := r.next()
		if i >= uint64(dict.N) {
			return 0, 0, corruptf("dictionary index %d >= %d entries", i, dict.N)
		}
		return int(i), 1, nil
	})
}

// runLength decodes layout 3: run values and bit-packed positive run lengths.
func (d *decoder) runLength(dense int) (Values, error) {
	ls := d.byKind[KindRunLengths]
	if ls == nil {
		return Values{}, corruptf("missing stream kind %d", KindRunLengths)
	}
	if ls.Count == 0 || ls.Count > uint64(dense) {
		return Values{}, corruptf("%d runs for %d values", ls.Count, dense)
	}
	runs := int(ls.Count)
	ls, lb, err := d.stream(KindRunLengths, runs)
	if err != nil {
		return Values{}, err
	}
	if ls.Transform != TransformBitPacked {
		return Values{}, fmt.Errorf("%w: run lengths use transform %d, only bit packing is defined", ErrUnsupported, ls.Transform)
	}
	r, err := newBitReader(lb, runs)
	if err != nil {
		return Values{}, fmt.Errorf("run lengths: %w", err)
	}
	// Check the lengths before allocating what they describe.
	check := r
	total := uint64(0)
	for i := 0; i < runs; i++ {
		n := check.next()
		if n == 0 {
			return Values{}, corruptf("run %d has length 0", i)
		}
		if n > uint64(dense) || total+n > uint64(dense) {
			return Values{}, corruptf("run lengths exceed %d values", dense)
		}
		total += n
	}
	if total != uint64(dense) {
		return Values{}, corruptf("run lengths sum to %d, want %d", total, dense)
	}
	rv, err := d.plain(KindRunValues, KindLengths, runs)
	if err != nil {
		return Values{}, err
	}
	run := 0
	return d.gather(rv, dense, func() (int, int, error) {
		i := run
		run++
		return i, int(r.next()), nil
	})
}

// repeat expands a one-value column to n values (constant layout).
func (d *decoder) repeat(one Values, n int) (Values, error) {
	done := false
	return d.gather(one, n, func() (int, int, error) {
		if done {
			return 0, 0, corruptf("constant value repeated twice")
		}
		done = true
		return 0, n, nil
	})
}

// gather builds n values from src by calling next for (source index,
// repeat count) pairs until n values are produced.
func (d *decoder) gather(src Values, n int, next func() (int, int, error)) (Values, error) {
	out := Values{N: n, Width: src.Width}
	switch d.class {
	case ClassBool:
		if err := d.budget.Charge(int64(n)); err != nil {
			return Values{}, err
		}
		out.Bools = make([]bool, 0, n)
		for len(out.Bools) < n {
			i, k, err := next()
			if err != nil {
				return Values{}, err
			}
			v := src.Bools[i]
			for ; k > 0; k-- {
				out.Bools = append(out.Bools, v)
			}
		}
	case ClassVar:
		// The total size is known only by walking the indices once.
		total := uint64(0)
		if err := d.budget.Charge(int64(n+1) * 8); err != nil {
			return Values{}, err
		}
		out.Offsets = make([]int, 1, n+1)
		var reps []int32 // source index per produced value
		if err := d.budget.Charge(int64(n) * 4); err != nil {
			return Values{}, err
		}
		reps = make([]int32, 0, n)
		for len(reps) < n {
			i, k, err := next()
			if err != nil {
				return Values{}, err
			}
			l := uint64(src.Offsets[i+1] - src.Offsets[i])
			for ; k > 0; k-- {
				reps = append(reps, int32(i))
				total += l
				out.Offsets = append(out.Offsets, int(total))
			}
		}
		if total > 1<<40 {
			return Values{}, fmt.Errorf("%w: %d expanded value bytes", ErrLimit, total)
		}
		if err := d.budget.Charge(int64(total)); err != nil {
			return Values{}, err
		}
		out.Data = make([]byte, 0, total)
		for _, i := range reps {
			out.Data = append(out.Data, src.Data[src.Offsets[i]:src.Offsets[i+1]]...)
		}
	default:
		w := d.width
		if err := d.budget.Charge(int64(n) * int64(w)); err != nil {
			return Values{}, err
		}
		out.Fixed = make([]byte, 0, n*w)
		for len(out.Fixed) < n*w {
			i, k, err := next()
			if err != nil {
				return Values{}, err
			}
			v := src.Fixed[i*w : i*w+w]
			for ; k > 0; k-- {
				out.Fixed = append(out.Fixed, v...)
			}
		}
	}
	return out, nil
}
