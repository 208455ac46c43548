package histfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// Sample is one native histogram sample: T in milliseconds since the Unix
// epoch and exactly one of H (integer counts) or FH (float counts).
type Sample struct {
	T  int64
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
}

// IsFloat reports whether the sample is a float histogram.
func (s Sample) IsFloat() bool { return s.FH != nil }

// Sum returns the sample's sum (stale markers are a stale NaN here).
func (s Sample) Sum() float64 {
	if s.FH != nil {
		return s.FH.Sum
	}
	return s.H.Sum
}

// ErrCorrupt marks bytes that do not decode as a histogram; the caller wraps
// it with the file or record it came from.
var ErrCorrupt = errors.New("histfile: corrupt histogram encoding")

func corrupt(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }

// appendSpans encodes spans: per span, zigzag varint offset then uvarint
// length (the order of prompb.BucketSpan's fields).
func appendSpans(dst []byte, spans []histogram.Span) []byte {
	for _, sp := range spans {
		dst = binary.AppendVarint(dst, int64(sp.Offset))
		dst = binary.AppendUvarint(dst, uint64(sp.Length))
	}
	return dst
}

func decodeSpans(src []byte) ([]histogram.Span, error) {
	var out []histogram.Span
	for len(src) > 0 {
		off, n := binary.Varint(src)
		if n <= 0 || off < math.MinInt32 || off > math.MaxInt32 {
			return nil, corrupt("span offset")
		}
		src = src[n:]
		l, n := binary.Uvarint(src)
		if n <= 0 || l > math.MaxUint32 {
			return nil, corrupt("span length")
		}
		src = src[n:]
		out = append(out, histogram.Span{Offset: int32(off), Length: uint32(l)})
	}
	return out, nil
}

// appendDeltas encodes integer bucket deltas as zigzag varints.
func appendDeltas(dst []byte, ds []int64) []byte {
	for _, d := range ds {
		dst = binary.AppendVarint(dst, d)
	}
	return dst
}

func decodeDeltas(src []byte) ([]int64, error) {
	var out []int64
	for len(src) > 0 {
		d, n := binary.Varint(src)
		if n <= 0 {
			return nil, corrupt("bucket delta")
		}
		out = append(out, d)
		src = src[n:]
	}
	return out, nil
}

// appendFloats encodes float64 values as their 8-byte little-endian bits.
func appendFloats(dst []byte, fs []float64) []byte {
	for _, f := range fs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return dst
}

func decodeFloats(src []byte) ([]float64, error) {
	if len(src)%8 != 0 {
		return nil, corrupt(fmt.Sprintf("float list of %d bytes is not a multiple of 8", len(src)))
	}
	if len(src) == 0 {
		return nil, nil
	}
	out := make([]float64, len(src)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
	}
	return out, nil
}
