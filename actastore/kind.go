package actastore

import (
	"github.com/acta-remote/acta-remote/acta"
)

// kindID names a kind of sample in WAL records, file paths and metrics.
type kindID uint8

const (
	kindFloat     kindID = iota // float64 samples: Sample
	kindHistogram               // native histograms, integer and float: HistogramSample
	numKinds
)

// kind is everything that differs between the kinds of samples a series
// holds, and nothing else. The head, the WAL replay, flush, rotation,
// compaction, retention, repair and Select are written once, over it
// (track.go and the files named after those steps); kind_float.go and
// kind_histogram.go are its two implementations. A kind value is
// stateless.
type kind[S any] interface {
	id() kindID
	name() string // "float", "histogram": logs and metric labels
	// dir is the directory under the store root holding this kind's series
	// files (<dir>/<ab>/<ref>-<start>.acta, filenames.go).
	dir() string

	// track is the series' track of this kind; nil when the series has
	// none and create is false.
	track(ms *memSeries, create bool) *track[S]

	ts(S) int64
	// same is the duplicate rule: bit for bit over every field.
	same(a, b S) bool
	// size is what one sample costs in the head, in bytes (the head's
	// memory accounting, Options.MaxHeadBytes).
	size(S) int64
	// xorHead says whether the head keeps this kind's in-order samples in
	// a Prometheus XOR chunk (headbuf.go); xorPair and fromXOR convert a
	// sample to and from the chunk's (ms, float64) pair bit-exactly, and
	// are called only when it does.
	xorHead() bool
	xorPair(S) (t int64, v float64)
	fromXOR(t int64, v float64) S
	// headAgeFactor: a head is flushed after headAgeFactor × MaxHeadAge.
	headAgeFactor() int64
	// valid checks one incoming sample beyond its timestamp (nil: fine).
	valid(S) error

	// WAL: the record type holding this kind's samples, and the payload of
	// one series' n samples in it (docs/format/wal.md).
	recordType() byte
	appendSamples(dst []byte, ss []S) []byte
	// decodeSamples reads n samples, appending them to dst, and returns the
	// unread rest. It never allocates more than src can hold.
	decodeSamples(dst []S, src []byte, n int) ([]S, []byte, error)

	// Files: the schema new files get, the writer options of flushed
	// blocks, and the conversions between samples and Acta blocks.
	schema() *acta.Schema
	writerOptions(fo fileOptions) acta.WriterOptions
	// maxBlockRows bounds the rows of one block this kind writes.
	maxBlockRows(fo fileOptions) int
	// batch turns sorted samples into one block. sealed is set when the
	// block goes to a sealed file being compacted: the kind may then pick
	// a different (still bit-exact) representation.
	batch(ss []S, sealed bool) (*acta.Batch, error)
	// sealedBatches turns the sorted, deduplicated samples of a sealed
	// file into its blocks, at most rows rows each, all of one schema: the
	// kind may choose a representation from every value of the file (the
	// float kind's value type, valuetype.go), always bit-exact.
	sealedBatches(ss []S, rows int) ([]*acta.Batch, error)
	// adapt converts a flush's batch (the kind's flush schema) to the
	// schema of the file it is appended to, which compaction may have
	// rewritten (errNotRepresentable: it cannot hold some value).
	adapt(b *acta.Batch, file *acta.Schema) (*acta.Batch, error)
	// final reports whether a file of schema s was written by compaction
	// or a tier merge (sealedBatches): compaction leaves it alone.
	final(s *acta.Schema) bool
	// decode appends the samples of one decoded block that fall in
	// [mint, maxt] to dst, in stored order.
	decode(dst []S, s *acta.Schema, b *acta.Batch, mint, maxt int64) ([]S, error)
}

// The two kinds, as values of their codec types.
var (
	floats     kind[Sample]          = floatKind{}
	histograms kind[HistogramSample] = histKind{}
)
