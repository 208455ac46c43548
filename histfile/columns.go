package histfile

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/acta-remote/acta-remote/acta"
)

// Column names and IDs of a histogram series file (docs/format/histogram.md).
// Frozen: files on disk carry them.
const (
	SchemaID = 2 // Acta schema ID of histogram series files (float series files are 1)
	// SealedSchemaID is the schema ID of a histogram file rewritten by the
	// store's compaction or a tier merge: the same columns, a different ID
	// so that the store knows the file is final (float series files: 5).
	SealedSchemaID = 6

	ColTimestamp      = "timestamp"        // timestamp64(ms, UTC), primary
	ColFloat          = "float"            // bool: FloatHistogram (true) or Histogram
	ColResetHint      = "reset_hint"       // uint8: model/histogram.CounterResetHint
	ColSchema         = "schema"           // int32: -4..8, or -53 for custom buckets
	ColZeroThreshold  = "zero_threshold"   // float64 bits
	ColCount          = "count"            // uint64: integer histograms, else 0
	ColZeroCount      = "zero_count"       // uint64: integer histograms, else 0
	ColFloatCount     = "float_count"      // float64 bits: float histograms, else 0
	ColFloatZeroCount = "float_zero_count" // float64 bits: float histograms, else 0
	ColSum            = "sum"              // float64 bits; the stale NaN marks a stale sample
	ColPosSpans       = "positive_spans"   // binary: spans
	ColNegSpans       = "negative_spans"   // binary: spans
	ColPosBuckets     = "positive_buckets" // binary: mode byte, then deltas (integer) or counts (float), see buckets.go
	ColNegBuckets     = "negative_buckets" // binary: as positive_buckets
	ColCustomValues   = "custom_values"    // binary: float64 bits, schema -53 only
)

var columns = []acta.Column{
	{ID: 1, Name: ColTimestamp, Type: acta.Timestamp(acta.Millisecond)},
	{ID: 2, Name: ColFloat, Type: acta.Of(acta.TypeBool)},
	{ID: 3, Name: ColResetHint, Type: acta.Of(acta.TypeUint8)},
	{ID: 4, Name: ColSchema, Type: acta.Of(acta.TypeInt32)},
	{ID: 5, Name: ColZeroThreshold, Type: acta.Of(acta.TypeFloat64)},
	{ID: 6, Name: ColCount, Type: acta.Of(acta.TypeUint64)},
	{ID: 7, Name: ColZeroCount, Type: acta.Of(acta.TypeUint64)},
	{ID: 8, Name: ColFloatCount, Type: acta.Of(acta.TypeFloat64)},
	{ID: 9, Name: ColFloatZeroCount, Type: acta.Of(acta.TypeFloat64)},
	{ID: 10, Name: ColSum, Type: acta.Of(acta.TypeFloat64)},
	{ID: 11, Name: ColPosSpans, Type: acta.Of(acta.TypeBinary)},
	{ID: 12, Name: ColNegSpans, Type: acta.Of(acta.TypeBinary)},
	{ID: 13, Name: ColPosBuckets, Type: acta.Of(acta.TypeBinary)},
	{ID: 14, Name: ColNegBuckets, Type: acta.Of(acta.TypeBinary)},
	{ID: 15, Name: ColCustomValues, Type: acta.Of(acta.TypeBinary)},
}

var schema = func() *acta.Schema {
	s, err := acta.NewSchema(SchemaID, columns, ColTimestamp)
	if err != nil {
		panic("BUG: histogram schema: " + err.Error())
	}
	return s
}()

var sealedSchema = func() *acta.Schema {
	s, err := acta.NewSchema(SealedSchemaID, columns, ColTimestamp)
	if err != nil {
		panic("BUG: histogram schema: " + err.Error())
	}
	return s
}()

// Schema returns the schema of histogram series files. Callers must not
// modify it.
func Schema() *acta.Schema { return schema }

// SealedSchema is Schema with SealedSchemaID. Callers must not modify it.
func SealedSchema() *acta.Schema { return sealedSchema }

// binCol builds one binary column row by row.
type binCol struct{ a acta.BytesArray }

func (c *binCol) add(b []byte) {
	if len(c.a.Offsets) == 0 {
		c.a.Offsets = append(c.a.Offsets, 0)
	}
	c.a.Data = append(c.a.Data, b...)
	c.a.Offsets = append(c.a.Offsets, len(c.a.Data))
}

// Batch turns samples into one Acta batch of the histogram schema, rows in
// the order given. The batch must be written as one block (bucket columns
// refer to the previous row of their block): callers keep batches within
// the writer's row and byte block targets.
func Batch(ss []Sample) *acta.Batch {
	n := len(ss)
	ts := make([]int64, n)
	isF := make([]bool, n)
	hint := make([]uint8, n)
	sch := make([]int32, n)
	zt := make([]float64, n)
	cnt := make([]uint64, n)
	zc := make([]uint64, n)
	fcnt := make([]float64, n)
	fzc := make([]float64, n)
	sum := make([]float64, n)
	var ps, ns, pb, nb, cv binCol
	var scratch []byte
	for i, s := range ss {
		ts[i] = s.T
		if fh := s.FH; fh != nil {
			isF[i], hint[i], sch[i], zt[i] = true, uint8(fh.CounterResetHint), fh.Schema, fh.ZeroThreshold
			fcnt[i], fzc[i], sum[i] = fh.Count, fh.ZeroCount, fh.Sum
			ps.add(appendSpans(scratch[:0], fh.PositiveSpans))
			ns.add(appendSpans(scratch[:0], fh.NegativeSpans))
			var prevPos, prevNeg []float64
			if i > 0 && ss[i-1].FH != nil {
				prevPos, prevNeg = ss[i-1].FH.PositiveBuckets, ss[i-1].FH.NegativeBuckets
			}
			pb.add(appendFloatBuckets(scratch[:0], fh.PositiveBuckets, prevPos))
			nb.add(appendFloatBuckets(scratch[:0], fh.NegativeBuckets, prevNeg))
			cv.add(appendFloats(scratch[:0], fh.CustomValues))
			continue
		}
		h := s.H
		hint[i], sch[i], zt[i] = uint8(h.CounterResetHint), h.Schema, h.ZeroThreshold
		cnt[i], zc[i], sum[i] = h.Count, h.ZeroCount, h.Sum
		ps.add(appendSpans(scratch[:0], h.PositiveSpans))
		ns.add(appendSpans(scratch[:0], h.NegativeSpans))
		var prevPos, prevNeg []int64
		if i > 0 && ss[i-1].H != nil {
			prevPos, prevNeg = ss[i-1].H.PositiveBuckets, ss[i-1].H.NegativeBuckets
		}
		pb.add(appendIntBuckets(scratch[:0], h.PositiveBuckets, prevPos))
		nb.add(appendIntBuckets(scratch[:0], h.NegativeBuckets, prevNeg))
		cv.add(appendFloats(scratch[:0], h.CustomValues))
	}
	if n == 0 {
		for _, c := range []*binCol{&ps, &ns, &pb, &nb, &cv} {
			c.a.Offsets = []int{0}
		}
	}
	return &acta.Batch{Schema: schema, Rows: n, Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts},
		&acta.FixedArray[bool]{Values: isF},
		&acta.FixedArray[uint8]{Values: hint},
		&acta.FixedArray[int32]{Values: sch},
		&acta.FixedArray[float64]{Values: zt},
		&acta.FixedArray[uint64]{Values: cnt},
		&acta.FixedArray[uint64]{Values: zc},
		&acta.FixedArray[float64]{Values: fcnt},
		&acta.FixedArray[float64]{Values: fzc},
		&acta.FixedArray[float64]{Values: sum},
		&ps.a, &ns.a, &pb.a, &nb.a, &cv.a,
	}}
}

// col fetches column name of b as the array type T.
func col[T acta.Array](b *acta.Batch, name string) (T, error) {
	var zero T
	i := b.Schema.Index(name)
	if i < 0 {
		return zero, fmt.Errorf("histfile: column %q missing", name)
	}
	a, ok := b.Columns[i].(T)
	if !ok {
		return zero, fmt.Errorf("histfile: column %q is %T, want %T", name, b.Columns[i], zero)
	}
	if a.Len() != b.Rows {
		return zero, fmt.Errorf("histfile: column %q has %d rows, batch %d", name, a.Len(), b.Rows)
	}
	return a, nil
}

// Decode appends the samples of a batch read from a histogram series file
// (all columns projected) to dst.
func Decode(dst []Sample, b *acta.Batch) ([]Sample, error) {
	var errs [15]error
	ts, e0 := col[*acta.FixedArray[int64]](b, ColTimestamp)
	isF, e1 := col[*acta.FixedArray[bool]](b, ColFloat)
	hint, e2 := col[*acta.FixedArray[uint8]](b, ColResetHint)
	sch, e3 := col[*acta.FixedArray[int32]](b, ColSchema)
	zt, e4 := col[*acta.FixedArray[float64]](b, ColZeroThreshold)
	cnt, e5 := col[*acta.FixedArray[uint64]](b, ColCount)
	zc, e6 := col[*acta.FixedArray[uint64]](b, ColZeroCount)
	fcnt, e7 := col[*acta.FixedArray[float64]](b, ColFloatCount)
	fzc, e8 := col[*acta.FixedArray[float64]](b, ColFloatZeroCount)
	sum, e9 := col[*acta.FixedArray[float64]](b, ColSum)
	ps, e10 := col[*acta.BytesArray](b, ColPosSpans)
	ns, e11 := col[*acta.BytesArray](b, ColNegSpans)
	pb, e12 := col[*acta.BytesArray](b, ColPosBuckets)
	nb, e13 := col[*acta.BytesArray](b, ColNegBuckets)
	cv, e14 := col[*acta.BytesArray](b, ColCustomValues)
	errs = [15]error{e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14}
	for _, e := range errs {
		if e != nil {
			return dst, e
		}
	}
	var prev Sample // the block's previous row: bucket columns may refer to it
	for i := 0; i < b.Rows; i++ {
		pspans, err := decodeSpans(ps.Value(i))
		if err != nil {
			return dst, fmt.Errorf("row %d positive spans: %w", i, err)
		}
		nspans, err := decodeSpans(ns.Value(i))
		if err != nil {
			return dst, fmt.Errorf("row %d negative spans: %w", i, err)
		}
		custom, err := decodeFloats(cv.Value(i))
		if err != nil {
			return dst, fmt.Errorf("row %d custom values: %w", i, err)
		}
		s := Sample{T: ts.Values[i]}
		if isF.Values[i] {
			var prevPos, prevNeg []float64
			if prev.FH != nil {
				prevPos, prevNeg = prev.FH.PositiveBuckets, prev.FH.NegativeBuckets
			}
			pos, err := decodeFloatBuckets(pb.Value(i), prevPos)
			if err != nil {
				return dst, fmt.Errorf("row %d positive buckets: %w", i, err)
			}
			neg, err := decodeFloatBuckets(nb.Value(i), prevNeg)
			if err != nil {
				return dst, fmt.Errorf("row %d negative buckets: %w", i, err)
			}
			s.FH = &histogram.FloatHistogram{
				CounterResetHint: histogram.CounterResetHint(hint.Values[i]), Schema: sch.Values[i],
				ZeroThreshold: zt.Values[i], ZeroCount: fzc.Values[i], Count: fcnt.Values[i], Sum: sum.Values[i],
				PositiveSpans: pspans, NegativeSpans: nspans, PositiveBuckets: pos, NegativeBuckets: neg,
				CustomValues: custom,
			}
		} else {
			var prevPos, prevNeg []int64
			if prev.H != nil {
				prevPos, prevNeg = prev.H.PositiveBuckets, prev.H.NegativeBuckets
			}
			pos, err := decodeIntBuckets(pb.Value(i), prevPos)
			if err != nil {
				return dst, fmt.Errorf("row %d positive buckets: %w", i, err)
			}
			neg, err := decodeIntBuckets(nb.Value(i), prevNeg)
			if err != nil {
				return dst, fmt.Errorf("row %d negative buckets: %w", i, err)
			}
			s.H = &histogram.Histogram{
				CounterResetHint: histogram.CounterResetHint(hint.Values[i]), Schema: sch.Values[i],
				ZeroThreshold: zt.Values[i], ZeroCount: zc.Values[i], Count: cnt.Values[i], Sum: sum.Values[i],
				PositiveSpans: pspans, NegativeSpans: nspans, PositiveBuckets: pos, NegativeBuckets: neg,
				CustomValues: custom,
			}
		}
		dst = append(dst, s)
		prev = s
	}
	return dst, nil
}
