package actastore

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
)

// floatKind is the codec of float64 samples. Their series files are Acta
// v0.2 files: column 1 "timestamp" = timestamp64(ms, UTC), the primary
// column; column 2 "value", float64 when written by a flush (docs/format/
// series.md). Every block is appended sorted, so the writer marks it
// TS_SORTED and its primary bounds let readers skip it undecoded.
type floatKind struct{}

const (
	seriesSchemaID = 1
	colTimestamp   = "timestamp"
	colValue       = "value"
	colTimestampID = 1
	colValueID     = 2
)

// seriesSchema is the schema of a float series file whose value column has
// type valueType (float64 for flushed files; a compacted file may hold
// int64 or decimal64, which readers convert back bit-exactly).
func seriesSchema(valueType acta.Type) (*acta.Schema, error) {
	return acta.NewSchema(seriesSchemaID, []acta.Column{
		{ID: colTimestampID, Name: colTimestamp, Type: acta.Timestamp(acta.Millisecond)},
		{ID: colValueID, Name: colValue, Type: valueType},
	}, colTimestamp)
}

var floatSchema = mustSchema(seriesSchema(acta.Of(acta.TypeFloat64)))

func mustSchema(s *acta.Schema, err error) *acta.Schema {
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return s
}

func (floatKind) id() kindID        { return kindFloat }
func (floatKind) name() string      { return "float" }
func (floatKind) dir() string       { return seriesDirName }
func (floatKind) ts(s Sample) int64 { return s.T }

func (floatKind) track(ms *memSeries, _ bool) *track[Sample] { return &ms.floats }

// same compares values bit for bit: NaNs with equal bits are equal (a
// resent stale marker is a duplicate), 0 and -0 differ.
func (floatKind) same(a, b Sample) bool {
	return a.T == b.T && math.Float64bits(a.V) == math.Float64bits(b.V)
}

// size: a 16-byte sample in a slice that append grows by up to 2x (an
// out-of-order head sample, a flushing one; in-order head samples are
// XOR-compressed and cost what their chunk costs, headbuf.go).
func (floatKind) size(Sample) int64 { return 32 }

// xorHead: float heads are XOR chunks of (T, V) with V's bits as they are.
func (floatKind) xorHead() bool                     { return true }
func (floatKind) xorPair(s Sample) (int64, float64) { return s.T, s.V }
func (floatKind) fromXOR(t int64, v float64) Sample { return Sample{T: t, V: v} }
func (floatKind) headAgeFactor() int64              { return 1 }
func (floatKind) valid(Sample) error                { return nil }
func (floatKind) recordType() byte                  { return recSamples }
func (floatKind) schema() *acta.Schema              { return floatSchema }

// appendSamples is the per-series payload of a type-2 record:
// t0 varint | (n-1) × Δt varint | n × value bits uint64 LE. Timestamps are
// delta-coded (one to three bytes each for regular scrapes); values keep
// their exact IEEE 754 bits. Frozen.
func (floatKind) appendSamples(dst []byte, ss []Sample) []byte {
	prev := int64(0)
	for i, s := range ss {
		if i == 0 {
			dst = binary.AppendVarint(dst, s.T)
		} else {
			dst = binary.AppendVarint(dst, s.T-prev)
		}
		prev = s.T
	}
	for _, s := range ss {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.V))
	}
	return dst
}

func (floatKind) decodeSamples(dst []Sample, src []byte, n int) ([]Sample, []byte, error) {
	// Each sample needs at least 9 bytes; never allocate from a count the
	// record cannot hold.
	if n < 0 || n > len(src)/9 {
		return dst, nil, fmt.Errorf("%w: %d samples in %d bytes", errRecord, n, len(src))
	}
	base := len(dst)
	t := int64(0)
	for j := 0; j < n; j++ {
		d, k := binary.Varint(src)
		if k <= 0 {
			return dst, nil, fmt.Errorf("%w: timestamp %d", errRecord, j)
		}
		if j == 0 {
			t = d
		} else {
			t += d
		}
		dst = append(dst, Sample{T: t})
		src = src[k:]
	}
	if len(src) < 8*n {
		return dst, nil, fmt.Errorf("%w: values cut short", errRecord)
	}
	for j := 0; j < n; j++ {
		dst[base+j].V = math.Float64frombits(binary.LittleEndian.Uint64(src[8*j:]))
	}
	return dst, src[8*n:], nil
}

func (floatKind) writerOptions(fo fileOptions) acta.WriterOptions {
	codec := acta.CodecNone
	if fo.zstd {
		codec = acta.CodecZstd
	}
	return acta.WriterOptions{
		Codec:          codec,
		CodecMinRows:   fo.zstdMinRows,
		ZstdLevel:      fo.zstdLevel,
		Encoding:       acta.EncodingAdaptive,
		RowBlockTarget: fo.blockRows,
	}
}

func (floatKind) maxBlockRows(fo fileOptions) int { return fo.blockRows }

func (floatKind) batch(ss []Sample, sealed bool) (*acta.Batch, error) {
	ts := make([]int64, len(ss))
	vs := make([]float64, len(ss))
	for i, s := range ss {
		ts[i], vs[i] = s.T, s.V
	}
	return &acta.Batch{Schema: floatSchema, Rows: len(ss), Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs},
	}}, nil
}

// sealedBatches: the value type is chosen over the whole file
// (valuetype.go).
func (floatKind) sealedBatches(ss []Sample, rows int) ([]*acta.Batch, error) {
	return sealedFloatBatches(ss, rows)
}

func (floatKind) adapt(b *acta.Batch, fs *acta.Schema) (*acta.Batch, error) {
	return adaptFloatBatch(b, fs)
}

// final: a file compaction or a merge wrote.
func (floatKind) final(s *acta.Schema) bool { return s.ID == sealedSchemaID }

func (floatKind) decode(dst []Sample, s *acta.Schema, b *acta.Batch, mint, maxt int64) ([]Sample, error) {
	ti, vi := s.Index(colTimestamp), s.Index(colValue)
	if ti < 0 || vi < 0 {
		return dst, fmt.Errorf("not a series file (columns %q and %q needed)", colTimestamp, colValue)
	}
	tcol, ok := b.Columns[ti].(*acta.FixedArray[int64])
	if !ok {
		return dst, fmt.Errorf("timestamp column is %T", b.Columns[ti])
	}
	var exc acta.Array
	if ei := s.Index(colValueExc); ei >= 0 {
		exc = b.Columns[ei]
	}
	vs, err := valuesAsFloat64(s.Columns[vi].Type, b.Columns[vi], exc)
	if err != nil {
		return dst, err
	}
	if len(vs) != len(tcol.Values) {
		return dst, fmt.Errorf("%d timestamps, %d values", len(tcol.Values), len(vs))
	}
	ts := tcol.Values
	if n := len(ts); n > 0 && ts[0] >= mint && ts[n-1] <= maxt && slices.IsSorted(ts) {
		// The whole sorted block is in range (the usual case): one exact
		// allocation, no per-row test.
		dst = slices.Grow(dst, n)
		for i, t := range ts {
			dst = append(dst, Sample{T: t, V: vs[i]})
		}
		return dst, nil
	}
	for i, t := range tcol.Values {
		if t >= mint && t <= maxt {
			dst = append(dst, Sample{T: t, V: vs[i]})
		}
	}
	return dst, nil
}
