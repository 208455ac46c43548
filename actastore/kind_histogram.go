package actastore

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/value"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
)

// histKind is the codec of native histograms, integer and float. Their
// files use package histfile's schema (docs/format/histogram.md), under
// histograms/ with the same names as float series files.
type histKind struct{}

// maxHistBlockRows bounds a histogram block: histfile's bucket columns
// refer to the block's previous row, so a block is written as one batch.
const maxHistBlockRows = 4096

func (histKind) id() kindID                 { return kindHistogram }
func (histKind) name() string               { return "histogram" }
func (histKind) dir() string                { return histDirName }
func (histKind) ts(h HistogramSample) int64 { return h.T }

func (histKind) track(ms *memSeries, create bool) *track[HistogramSample] {
	if ms.hists() == nil && create {
		t := newTrack[HistogramSample]()
		ms.extrasLocked().hists = &t
	}
	return ms.hists()
}

// same compares two samples bit for bit, every field (through the WAL
// record encoding, which holds each of them with float bits).
func (histKind) same(a, b HistogramSample) bool {
	if a.T != b.T || a.IsFloat() != b.IsFloat() || math.Float64bits(a.Sum()) != math.Float64bits(b.Sum()) {
		return false
	}
	return string(histfile.AppendRecord(nil, a)) == string(histfile.AppendRecord(nil, b))
}

// size is the histogram struct with its span and bucket slices, plus the
// sample's own slot in the head.
func (histKind) size(h HistogramSample) int64 {
	const sample, hist, span = 24, 200, 8
	n := int64(sample + hist)
	if h.FH != nil {
		n += int64(len(h.FH.PositiveSpans)+len(h.FH.NegativeSpans))*span +
			int64(len(h.FH.PositiveBuckets)+len(h.FH.NegativeBuckets)+len(h.FH.CustomValues))*8
	} else if h.H != nil {
		n += int64(len(h.H.PositiveSpans)+len(h.H.NegativeSpans))*span +
			int64(len(h.H.PositiveBuckets)+len(h.H.NegativeBuckets)+len(h.H.CustomValues))*8
	}
	return n
}

// xorHead: histogram heads stay uncompressed (a histogram is not one
// float); xorPair and fromXOR are never called.
func (histKind) xorHead() bool { return false }
func (histKind) xorPair(HistogramSample) (int64, float64) {
	panic("BUG: histograms are not XOR-compressed in the head")
}
func (histKind) fromXOR(int64, float64) HistogramSample {
	panic("BUG: histograms are not XOR-compressed in the head")
}

// headAgeFactor: histograms wait 4 × MaxHeadAge in the head (durable in
// the WAL) before a timed flush, because each flush is one block per series
// and small blocks cost: at a 15 s scrape, 5 minutes make 20-row blocks of
// 131 bytes a sample, 20 minutes 80-row blocks of 51 (histfile's
// BenchmarkBytesPerHistogram). Compaction rebuilds sealed files anyway.
func (histKind) headAgeFactor() int64 { return 4 }

// valid checks a histogram as Prometheus's TSDB does before appending it;
// stale markers are exempt (their counts are meaningless).
func (histKind) valid(x HistogramSample) error {
	if value.IsStaleNaN(x.Sum()) {
		return nil
	}
	if x.FH != nil {
		return x.FH.Validate()
	}
	if x.H == nil {
		return fmt.Errorf("neither integer nor float histogram")
	}
	return x.H.Validate()
}

func (histKind) recordType() byte     { return recHistograms }
func (histKind) schema() *acta.Schema { return histfile.Schema() }

// appendSamples is the per-series payload of a type-5 record: n histfile
// records (histfile.AppendRecord). Frozen.
func (histKind) appendSamples(dst []byte, ss []HistogramSample) []byte {
	for _, h := range ss {
		dst = histfile.AppendRecord(dst, h)
	}
	return dst
}

func (histKind) decodeSamples(dst []HistogramSample, src []byte, n int) ([]HistogramSample, []byte, error) {
	// A record takes at least 27 bytes (histfile.AppendRecord of an empty
	// integer histogram): never trust a count the bytes
	// cannot hold.
	if n < 0 || n > len(src)/27 {
		return dst, nil, fmt.Errorf("%w: %d histograms in %d bytes", errRecord, n, len(src))
	}
	for j := 0; j < n; j++ {
		h, rest, err := histfile.DecodeRecord(src)
		if err != nil {
			return dst, nil, fmt.Errorf("%w: histogram %d: %v", errRecord, j, err)
		}
		dst = append(dst, h)
		src = rest
	}
	return dst, src, nil
}

// writerOptions: histogram blocks are small and their binary columns
// repetitive, so zstd always.
func (histKind) writerOptions(fo fileOptions) acta.WriterOptions {
	return acta.WriterOptions{Codec: acta.CodecZstd, ZstdLevel: fo.zstdLevel, Encoding: acta.EncodingAdaptive,
		RowBlockTarget: maxHistBlockRows}
}

func (histKind) maxBlockRows(fileOptions) int { return maxHistBlockRows }

func (histKind) batch(ss []HistogramSample, sealed bool) (*acta.Batch, error) {
	return histfile.Batch(ss), nil
}

// sealedBatches: histfile's columns under its sealed schema ID, one block
// per batch (bucket columns refer to the block's previous row).
func (histKind) sealedBatches(ss []HistogramSample, rows int) ([]*acta.Batch, error) {
	var out []*acta.Batch
	for lo := 0; lo < len(ss); lo += rows {
		b := histfile.Batch(ss[lo:min(lo+rows, len(ss))])
		b.Schema = histfile.SealedSchema()
		out = append(out, b)
	}
	return out, nil
}

// adapt: a compacted histogram file has the flush columns.
func (histKind) adapt(b *acta.Batch, fs *acta.Schema) (*acta.Batch, error) { return b, nil }

func (histKind) final(s *acta.Schema) bool { return s.ID == histfile.SealedSchemaID }

func (histKind) decode(dst []HistogramSample, _ *acta.Schema, b *acta.Batch, mint, maxt int64) ([]HistogramSample, error) {
	base := len(dst)
	dst, err := histfile.Decode(dst, b)
	if err != nil {
		return dst[:base], err
	}
	keep := dst[:base]
	for _, h := range dst[base:] {
		if h.T >= mint && h.T <= maxt {
			keep = append(keep, h)
		}
	}
	return keep, nil
}
