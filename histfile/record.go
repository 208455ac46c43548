package histfile

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// AppendRecord appends the binary form of one sample that the store's WAL
// carries (docs/format/histogram.md):
//
//	kind byte (0 integer, 1 float) | reset_hint byte | t varint | schema varint |
//	zero_threshold u64 LE | count, zero_count (uvarint each, or u64 LE bits if float) |
//	sum u64 LE | 5 × (len uvarint | bytes): positive spans, negative spans,
//	positive buckets, negative buckets, custom values
//
// The five byte strings are the same as the file's binary columns.
func AppendRecord(dst []byte, s Sample) []byte {
	put := func(b []byte) {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	var scratch []byte
	if fh := s.FH; fh != nil {
		dst = append(dst, 1, byte(fh.CounterResetHint))
		dst = binary.AppendVarint(dst, s.T)
		dst = binary.AppendVarint(dst, int64(fh.Schema))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(fh.ZeroThreshold))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(fh.Count))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(fh.ZeroCount))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(fh.Sum))
		put(appendSpans(scratch[:0], fh.PositiveSpans))
		put(appendSpans(scratch[:0], fh.NegativeSpans))
		put(appendFloats(scratch[:0], fh.PositiveBuckets))
		put(appendFloats(scratch[:0], fh.NegativeBuckets))
		put(appendFloats(scratch[:0], fh.CustomValues))
		return dst
	}
	h := s.H
	dst = append(dst, 0, byte(h.CounterResetHint))
	dst = binary.AppendVarint(dst, s.T)
	dst = binary.AppendVarint(dst, int64(h.Schema))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.ZeroThreshold))
	dst = binary.AppendUvarint(dst, h.Count)
	dst = binary.AppendUvarint(dst, h.ZeroCount)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Sum))
	put(appendSpans(scratch[:0], h.PositiveSpans))
	put(appendSpans(scratch[:0], h.NegativeSpans))
	put(appendDeltas(scratch[:0], h.PositiveBuckets))
	put(appendDeltas(scratch[:0], h.NegativeBuckets))
	put(appendFloats(scratch[:0], h.CustomValues))
	return dst
}

// recReader consumes a record with a sticky error.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail(what string) {
	if r.err == nil {
		r.err = corrupt(what)
	}
	r.b = nil
}

func (r *recReader) varint(what string) int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) f64(what string) float64 {
	if len(r.b) < 8 {
		r.fail(what)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *recReader) bytes(what string) []byte {
	n := r.uvarint(what)
	if n > uint64(len(r.b)) {
		r.fail(what)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// DecodeRecord decodes one sample written by AppendRecord and returns the
// bytes after it. The sample does not alias src.
func DecodeRecord(src []byte) (Sample, []byte, error) {
	if len(src) < 2 || src[0] > 1 {
		return Sample{}, nil, corrupt("histogram record kind")
	}
	isFloat, hint := src[0] == 1, histogram.CounterResetHint(src[1])
	r := &recReader{b: src[2:]}
	s := Sample{T: r.varint("timestamp")}
	sch := r.varint("schema")
	if sch < math.MinInt32 || sch > math.MaxInt32 {
		r.fail("schema")
	}
	zt := r.f64("zero threshold")
	var cnt, zc uint64
	var fcnt, fzc float64
	if isFloat {
		fcnt, fzc = r.f64("count"), r.f64("zero count")
	} else {
		cnt, zc = r.uvarint("count"), r.uvarint("zero count")
	}
	sum := r.f64("sum")
	psB, nsB := r.bytes("positive spans"), r.bytes("negative spans")
	pbB, nbB, cvB := r.bytes("positive buckets"), r.bytes("negative buckets"), r.bytes("custom values")
	if r.err != nil {
		return Sample{}, nil, r.err
	}
	ps, err := decodeSpans(psB)
	if err != nil {
		return Sample{}, nil, err
	}
	ns, err := decodeSpans(nsB)
	if err != nil {
		return Sample{}, nil, err
	}
	cv, err := decodeFloats(cvB)
	if err != nil {
		return Sample{}, nil, err
	}
	if isFloat {
		pb, err := decodeFloats(pbB)
		if err != nil {
			return Sample{}, nil, err
		}
		nb, err := decodeFloats(nbB)
		if err != nil {
			return Sample{}, nil, err
		}
		s.FH = &histogram.FloatHistogram{CounterResetHint: hint, Schema: int32(sch), ZeroThreshold: zt,
			ZeroCount: fzc, Count: fcnt, Sum: sum, PositiveSpans: ps, NegativeSpans: ns,
			PositiveBuckets: pb, NegativeBuckets: nb, CustomValues: cv}
		return s, r.b, nil
	}
	pb, err := decodeDeltas(pbB)
	if err != nil {
		return Sample{}, nil, err
	}
	nb, err := decodeDeltas(nbB)
	if err != nil {
		return Sample{}, nil, err
	}
	s.H = &histogram.Histogram{CounterResetHint: hint, Schema: int32(sch), ZeroThreshold: zt,
		ZeroCount: zc, Count: cnt, Sum: sum, PositiveSpans: ps, NegativeSpans: ns,
		PositiveBuckets: pb, NegativeBuckets: nb, CustomValues: cv}
	return s, r.b, nil
}
