package acta

import "github.com/acta-remote/acta-remote/acta/internal/encoding"

// Codec is the compression codec the writer applies to every stream (§10).
type Codec uint8

const (
	CodecNone Codec = iota // default: stored bytes are the transformed bytes
	CodecZstd              // independent Zstandard frame per stream
)

// Transform names a v0.2 transform or a non-plain layout, for Fixed.
type Transform uint16

const (
	TransformRaw Transform = iota
	TransformBitPacked
	TransformFrameOfReference
	TransformDelta
	TransformDeltaOfDelta
	TransformByteStreamSplit
	TransformBoolRLE
	// Layouts (§8.1) requested through FixedEncoding.
	LayoutConstant   Transform = 101
	LayoutDictionary Transform = 102
	LayoutRunLength  Transform = 103
)

// Encoding selects how the writer chooses encodings per block.
type Encoding struct {
	policy encoding.Policy
	fixed  Transform
}

var (
	// EncodingRaw (the default) writes plain layout, raw transform.
	EncodingRaw = Encoding{policy: encoding.PolicyRaw}
	// EncodingAdaptive lets each block pick the smallest v0.2 encoding.
	EncodingAdaptive = Encoding{policy: encoding.PolicyAdaptive}
)

// FixedEncoding applies transform or layout t to every value stream. (The
// name Fixed is taken by the array element constraint.)
func FixedEncoding(t Transform) Encoding { return Encoding{policy: encoding.PolicyFixed, fixed: t} }

// Statistics selects block-local min/max statistics (§11).
type Statistics uint8

const (
	StatsNone      Statistics = iota // default
	StatsMinMax                      // every fixed-width column with a non-NaN value
	StatsAutomatic                   // only where they pay (see the column layer)
)

// WriterOptions configure a Writer. The zero value writes raw, uncompressed
// 65,536-row blocks without statistics or row IDs.
type WriterOptions struct {
	Codec     Codec
	ZstdLevel int // 0 means 3
	// CodecMinRows writes blocks of fewer rows than this without the
	// codec (0: every block uses Codec). Zstandard pays on large blocks
	// and mostly burns CPU on a few dozen rows (spec §10 leaves the codec
	// decision to each stream).
	CodecMinRows    int
	Encoding        Encoding
	Statistics      Statistics
	RowBlockTarget  int   // rows per block, 0 means 65536
	ByteBlockTarget int64 // estimated raw bytes per block, 0 means 64 MiB
	RowIDs          bool  // implicit row IDs (prologue feature bit 0)
	// Limits bound what OpenWriter reads from an existing file.
	Limits Limits
	// SkipBodyCheck makes OpenWriter check existing frames' structure,
	// header and trailer CRCs but not their body CRCs, so reopening costs
	// the headers rather than the file size (for callers that reopen
	// writers often, such as an LRU of open files). Readers and Validate
	// still check every body.
	SkipBodyCheck bool
}

const (
	defaultRowBlockTarget  = 65536
	defaultByteBlockTarget = 64 << 20
)

// encodingOptions maps the writer options to the column layer's, for one
// column.
func (o WriterOptions) encodingOptions(primary bool) encoding.Options {
	e := encoding.Options{Policy: o.Encoding.policy, ZstdLevel: o.ZstdLevel, Stats: encoding.StatsPolicy(o.Statistics), Primary: primary}
	if o.Codec == CodecZstd {
		e.Codec = encoding.CodecZstd
	}
	if o.Encoding.policy == encoding.PolicyFixed {
		switch o.Encoding.fixed {
		case LayoutConstant:
			e.FixedLayout = encoding.LayoutConstant
		case LayoutDictionary:
			e.FixedLayout = encoding.LayoutDictionary
		case LayoutRunLength:
			e.FixedLayout = encoding.LayoutRunLength
		default:
			e.Transform = uint16(o.Encoding.fixed)
		}
	}
	return e
}
