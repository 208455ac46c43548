package actastore

import (
	"errors"
	"fmt"
	"math"

	"github.com/acta-remote/acta-remote/acta"
)

// The value type of a sealed float file (docs/format/series.md, "Value
// types"). A flush writes float64 values; compaction and tier merges
// rewrite a sealed file with the narrowest type that gives every value
// back bit for bit, because Acta v0.2's integer transforms (delta, frame
// of reference, bit packing) compress integers and fixed decimals far
// better than any float layout:
//
//   - int64, when every value is an integer in [-2^63, 2^63): the reader's
//     float64(v) is exactly the value;
//   - decimal64(18, s) with the smallest scale s in 1..18 at which every
//     value is u×10^-s for an integer |u| <= 2^53: both u and 10^s are
//     exact in float64, so the correctly rounded quotient u/10^s (what the
//     store's reader computes, and the float64 nearest to the decimal the
//     spec defines) is the value;
//   - float64 otherwise.
//
// Values no integer or decimal holds — NaNs of any payload (the stale
// marker among them), ±Inf, -0 — are exceptions: the value column is null
// on their rows and a nullable float64 column, value_float64, holds their
// bits there (and is null everywhere else). A file whose exceptions exceed
// maxExceptionShare of its rows stays float64: the second column would
// cost more than the integer one saves.

const (
	colValueExc   = "value_float64"
	colValueExcID = 3

	// sealedSchemaID marks a float series file written by compaction or a
	// tier merge (its value type chosen, its blocks compact): maintenance
	// does not rewrite it again, except to merge it with its neighbours.
	// Flushes write seriesSchemaID.
	sealedSchemaID = 5

	// A file with more exceptions than rows/maxExceptionShare stays float64.
	maxExceptionShare = 16

	// maxExactInt is 2^53: integers up to it in magnitude convert to and
	// from float64 exactly, which the decimal rule relies on.
	maxExactInt = 1 << 53
)

// valueType is the value layout of one sealed float file.
type valueType struct {
	typ acta.Type // int64, decimal64 or float64
	exc bool      // a value_float64 exceptions column exists
}

// special reports whether v is an exception for every integer type: a
// NaN, ±Inf or -0.
func special(v float64) bool {
	return v != v || math.IsInf(v, 0) || (v == 0 && math.Signbit(v))
}

// asInt64 reports whether v is an integer int64 holds; float64(int64(v))
// is then v exactly.
func asInt64(v float64) (int64, bool) {
	if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
		return 0, false
	}
	return int64(v), true
}

// asDecimal reports whether v is u×10^-scale for an integer |u| <= 2^53
// that converts back to v bit for bit (p is 10^scale). v×p is one
// rounding away from u×10^-scale×p, so within 2 of u for |u| <= 2^53: the
// integers around it are tried.
func asDecimal(v, p float64) (int64, bool) {
	c := math.Round(v * p)
	if !(c >= -maxExactInt-2 && c <= maxExactInt+2) {
		return 0, false
	}
	for _, d := range [...]float64{0, -1, 1, -2, 2} {
		if u := c + d; u >= -maxExactInt && u <= maxExactInt && u/p == v {
			return int64(u), true
		}
	}
	return 0, false
}

// chooseValueType picks the value layout of a sealed file holding vs.
func chooseValueType(vs []float64) valueType {
	f64 := valueType{typ: acta.Of(acta.TypeFloat64)}
	exc := 0
	allInt := true
	for _, v := range vs {
		if special(v) {
			exc++
			continue
		}
		if allInt {
			_, allInt = asInt64(v)
		}
	}
	if exc == len(vs) || exc > len(vs)/maxExceptionShare {
		return f64
	}
	if allInt {
		return valueType{typ: acta.Of(acta.TypeInt64), exc: exc > 0}
	}
	// The smallest scale that holds every value; a value fails most
	// scales at once, so a float file costs a few checks per scale.
scales:
	for s := 1; s <= 18; s++ {
		p := math.Pow10(s)
		for _, v := range vs {
			if _, ok := asDecimal(v, p); !ok && !special(v) {
				continue scales
			}
		}
		return valueType{typ: acta.Type{ID: acta.TypeDecimal64, Precision: 18, Scale: int16(s)}, exc: exc > 0}
	}
	return f64
}

// schema is the file schema of layout vt.
func (vt valueType) schema() (*acta.Schema, error) {
	cols := []acta.Column{
		{ID: colTimestampID, Name: colTimestamp, Type: acta.Timestamp(acta.Millisecond)},
		{ID: colValueID, Name: colValue, Type: vt.typ, Nullable: vt.exc},
	}
	if vt.exc {
		cols = append(cols, acta.Column{ID: colValueExcID, Name: colValueExc, Type: acta.Of(acta.TypeFloat64), Nullable: true})
	}
	return acta.NewSchema(sealedSchemaID, cols, colTimestamp)
}

// sealedFloatBatches turns sorted samples into the blocks of a sealed file
// (at most rows rows each, cut at outliers: blocksplit.go), all of one
// schema: the value layout chosen from every value of the file.
func sealedFloatBatches(ss []Sample, rows int) ([]*acta.Batch, error) {
	n := len(ss)
	vs := make([]float64, n)
	ts := make([]int64, n)
	for i, s := range ss {
		vs[i], ts[i] = s.V, s.T
	}
	vt := chooseValueType(vs)
	schema, err := vt.schema()
	if err != nil {
		return nil, fmt.Errorf("BUG: sealed schema %s: %w", vt.typ, err)
	}
	// Integer values (dense: exception rows have none) and their rows.
	var units []int64
	var unitRows []int
	if vt.typ.ID != acta.TypeFloat64 {
		var p float64
		if vt.typ.ID == acta.TypeDecimal64 {
			p = math.Pow10(int(vt.typ.Scale))
		}
		units = make([]int64, 0, n)
		unitRows = make([]int, 0, n)
		for i, v := range vs {
			if special(v) {
				if !vt.exc {
					return nil, fmt.Errorf("BUG: exception value %#x in a %s file without exceptions", math.Float64bits(v), vt.typ)
				}
				continue
			}
			u, ok := asInt64(v)
			if p != 0 {
				u, ok = asDecimal(v, p)
			}
			if !ok {
				return nil, fmt.Errorf("BUG: value %v (bits %#x) does not fit %s", v, math.Float64bits(v), vt.typ)
			}
			units = append(units, u)
			unitRows = append(unitRows, i)
		}
	}
	allRows := make([]int, n)
	for i := range allRows {
		allRows[i] = i
	}
	cuts := outlierCuts(ts, allRows, 2)
	if units != nil {
		cuts = append(cuts, outlierCuts(units, unitRows, 1)...)
	}
	bounds := append(blockBounds(n, rows, cuts), n)
	var out []*acta.Batch
	lo := 0
	for _, hi := range bounds {
		cols, ok := encodeValues(vs[lo:hi], vt)
		if !ok {
			return nil, fmt.Errorf("BUG: a value of rows %d..%d does not fit %s", lo, hi, vt.typ)
		}
		out = append(out, &acta.Batch{Schema: schema, Rows: hi - lo,
			Columns: append([]acta.Array{&acta.FixedArray[int64]{Values: ts[lo:hi]}}, cols...)})
		lo = hi
	}
	return out, nil
}

// encodeValues returns the value columns of layout vt holding vs (value,
// and value_float64 with exceptions); ok is false when a value does not fit.
func encodeValues(vs []float64, vt valueType) (cols []acta.Array, ok bool) {
	if vt.typ.ID == acta.TypeFloat64 {
		return []acta.Array{&acta.FixedArray[float64]{Values: vs}}, !vt.exc
	}
	var p float64
	if vt.typ.ID == acta.TypeDecimal64 {
		p = math.Pow10(int(vt.typ.Scale))
	}
	m := len(vs)
	iv := &acta.FixedArray[int64]{Values: make([]int64, m)}
	var ev *acta.FixedArray[float64]
	if vt.exc {
		iv.Valid = acta.NewBitmap(m)
		ev = &acta.FixedArray[float64]{Values: make([]float64, m), Valid: acta.NewBitmap(m)}
	}
	for i, v := range vs {
		if special(v) {
			if !vt.exc {
				return nil, false
			}
			ev.Values[i] = v
			ev.Valid.Set(i, true)
			continue
		}
		u, fits := asInt64(v)
		if p != 0 {
			u, fits = asDecimal(v, p)
		}
		if !fits {
			return nil, false
		}
		iv.Values[i] = u
		if vt.exc {
			iv.Valid.Set(i, true)
		}
	}
	if vt.exc {
		return []acta.Array{iv, ev}, true
	}
	return []acta.Array{iv}, true
}

// errNotRepresentable: a flush's value does not fit the value type of the
// file it goes to (a compacted newest file): the file is rewritten with a
// layout chosen over all of it (writeBlocks).
var errNotRepresentable = errors.New("value does not fit the file's value type")

// adaptFloatBatch converts a flush's float64 batch to the schema of the
// file it is appended to: itself for a flushed (float64) file, the value
// type of a compacted one otherwise.
func adaptFloatBatch(b *acta.Batch, fs *acta.Schema) (*acta.Batch, error) {
	if fs.ID == seriesSchemaID {
		return b, nil
	}
	vi := fs.Index(colValue)
	if vi != 1 || fs.Index(colTimestamp) != 0 {
		return nil, fmt.Errorf("file schema %d has no value column in place", fs.ID)
	}
	vt := valueType{typ: fs.Columns[vi].Type, exc: fs.Index(colValueExc) >= 0}
	cols, ok := encodeValues(b.Columns[1].(*acta.FixedArray[float64]).Values, vt)
	if !ok {
		return nil, errNotRepresentable
	}
	return &acta.Batch{Schema: fs, Rows: b.Rows, Columns: append([]acta.Array{b.Columns[0]}, cols...)}, nil
}

// valuesAsFloat64 converts a decoded value column to float64 bit-exactly:
// float64 as stored, int64 by conversion, decimal64 as the correctly
// rounded quotient u/10^scale (exact for the files the store writes,
// chooseValueType). Null rows (exception rows of a sealed file) come back
// as 0 with valid false; exc, when the file has a value_float64 column,
// must hold exactly those rows.
func valuesAsFloat64(t acta.Type, arr acta.Array, exc acta.Array) ([]float64, error) {
	var out []float64
	aliased := false // out is the decoded column itself
	switch a := arr.(type) {
	case *acta.FixedArray[float64]:
		out, aliased = a.Values, true
	case *acta.FixedArray[int64]:
		out = make([]float64, len(a.Values))
		switch t.ID {
		case acta.TypeInt64:
			for i, v := range a.Values {
				out[i] = float64(v)
			}
		case acta.TypeDecimal64:
			if t.Scale < 0 || t.Scale > 22 {
				return nil, fmt.Errorf("value column type %s: scale outside 0..22 has no exact power of ten", t)
			}
			p := math.Pow10(int(t.Scale))
			for i, v := range a.Values {
				out[i] = float64(v) / p
			}
		default:
			return nil, fmt.Errorf("value column type %s not readable as float64", t)
		}
	default:
		return nil, fmt.Errorf("value column type %s (%T) not readable as float64", t, arr)
	}
	valid := arr.Validity()
	if valid == nil && exc == nil {
		return out, nil
	}
	var ev *acta.FixedArray[float64]
	if exc != nil {
		var ok bool
		if ev, ok = exc.(*acta.FixedArray[float64]); !ok {
			return nil, fmt.Errorf("%s column is %T", colValueExc, exc)
		}
		if len(ev.Values) != len(out) {
			return nil, fmt.Errorf("%d values, %d %s rows", len(out), len(ev.Values), colValueExc)
		}
	}
	if aliased {
		out = append([]float64(nil), out...) // never write into the decoded column
	}
	for i := range out {
		inValue, inExc := valid.Valid(i), ev != nil && ev.Valid.Valid(i)
		switch {
		case inValue && !inExc:
		case !inValue && inExc:
			out[i] = ev.Values[i]
		case inValue:
			return nil, fmt.Errorf("row %d has both a value and a %s", i, colValueExc)
		default:
			return nil, fmt.Errorf("row %d has neither a value nor a %s", i, colValueExc)
		}
	}
	return out, nil
}
