// Package encoding implements the column layer of Acta v0.2: column layouts
// (spec §8.1), stream transforms (§9), compression codecs (§10), min/max
// statistics values (§11) and per-block encoding selection (§12).
//
// It knows nothing of frames, files or logical types beyond their physical
// class: values travel as dense canonical little-endian bytes (only the
// non-null rows, in row order, spec §3), and the caller (package acta) turns
// them into typed slot-per-row arrays. Encode turns one column of one block
// into physical streams; Decode turns verified stream bytes back into values.
package encoding

import "errors"

// Layout IDs, Acta v0.2 §8.1. Frozen.
const (
	LayoutPlain      uint16 = 0
	LayoutConstant   uint16 = 1
	LayoutDictionary uint16 = 2
	LayoutRunLength  uint16 = 3
)

// Stream kinds, Acta v0.2 §8.2. Frozen.
const (
	KindValidity          uint16 = 1
	KindValues            uint16 = 2
	KindLengths           uint16 = 3
	KindDictionaryValues  uint16 = 4
	KindDictionaryLengths uint16 = 5
	KindIndices           uint16 = 6
	KindRunValues         uint16 = 7
	KindRunLengths        uint16 = 8
)

// Transform IDs, Acta v0.2 §9. Frozen.
const (
	TransformRaw             uint16 = 0
	TransformBitPacked       uint16 = 1
	TransformFrameOfRef      uint16 = 2
	TransformDelta           uint16 = 3
	TransformDeltaOfDelta    uint16 = 4
	TransformByteStreamSplit uint16 = 5
	TransformBoolRLE         uint16 = 6
)

// Codec IDs, Acta v0.2 §10. Frozen.
const (
	CodecNone uint16 = 0
	CodecZstd uint16 = 1
)

// Class is the physical class of a logical type: what the transforms may
// assume about its canonical bytes.
type Class uint8

const (
	ClassBool     Class = iota + 1 // bool: one bit per value
	ClassSigned                    // int8..int64, decimal64, timestamp64, date32
	ClassUnsigned                  // uint8..uint64
	ClassFloat                     // float32, float64
	ClassFixed                     // fixed_binary (opaque bytes of Width)
	ClassVar                       // utf8, categorical, binary (lengths stream)
)

// Values is the dense (non-null rows only) content of one column in one
// block, N values in row order.
//
//   - ClassBool: Bools holds N booleans.
//   - ClassSigned/Unsigned/Float/Fixed: Fixed holds N*Width canonical
//     little-endian bytes.
//   - ClassVar: value i is Data[Offsets[i]:Offsets[i+1]]; len(Offsets) is N+1.
type Values struct {
	N       int
	Width   int
	Bools   []bool
	Fixed   []byte
	Offsets []int
	Data    []byte
}

// Stream is one physical stream of a column (spec §8.2), without its
// payload offset, padding or CRC, which the frame layer owns.
type Stream struct {
	Kind      uint16
	Transform uint16
	Codec     uint16
	Data      []byte // stored bytes: after transform and compression
	RawLen    uint64 // transformed length before compression
	Count     uint64 // element count
}

// Column is one encoded column of one block.
type Column struct {
	Layout    uint16
	NullCount int
	// Implicit is true when validity has no stream: all valid or all null
	// (column flag bit 0, spec §8.1).
	Implicit bool
	Streams  []Stream
	// Stats is the canonical min followed by the canonical max (spec §11),
	// or nil when no statistic is written.
	Stats []byte
}

// Budget bounds what one Decode may allocate; Decode charges it before
// allocating and fails with ErrLimit when it would go negative. A nil
// Budget means no bound.
type Budget struct {
	Remaining int64
}

// Charge takes n bytes from the budget, or returns ErrLimit.
func (b *Budget) Charge(n int64) error {
	if b == nil {
		return nil
	}
	if n < 0 || n > b.Remaining {
		return ErrLimit
	}
	b.Remaining -= n
	return nil
}

var (
	// ErrCorrupt marks stream bytes that break a rule of the spec. The
	// caller wraps it with the file, block and offset.
	ErrCorrupt = errors.New("corrupt stream")
	// ErrLimit marks a decode refused by its Budget.
	ErrLimit = errors.New("decode budget exceeded")
	// ErrUnsupported marks a valid stream this build cannot decode.
	ErrUnsupported = errors.New("unsupported encoding")
)
