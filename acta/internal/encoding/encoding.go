// Package encoding implements the column layer of Acta v0.2: column layouts
// (spec §8.1), stream transforms (§9), compression codecs (§10), min/max
// statistics values (§11) and per-block encoding selection (§12).
//
// It knows nothing of frames, files or logical types beyond their physical
// class: values travel as dense canonical little-endian bytes (only the
// non-null rows, in row order, spec §3), and the caller (package acta) turns
// them into typed slot-per-row arrays. Encode turns one column of one block
// into physical streams; Decode turns verified stream bytes back into values.
//
// Points the spec leaves open, settled by reading the reference
// implementation (chengus/Acta, rust/codec/transform.rs, rust/read/decode.rs,
// rust/write/encode/):
//
//   - Element counts count values, never bytes: a variable-width values
//     stream counts strings; validity counts rows; dictionary values and
//     dictionary lengths count entries; indices count dense values; run
//     values, run-value lengths (kind 3 under run-length layout) and run
//     lengths count runs. A constant column is a one-value plain column.
//   - Dictionary indices and run lengths are always bit packed, at the
//     minimal width when we write them; any width up to 64 is read.
//   - Frame of reference, delta and delta of delta store their first value
//     or base at the canonical width (1, 2, 4 or 8 bytes); the first delta of
//     delta of delta is always an 8-byte int64. Delta of one value is
//     written as just the value (the reference's form); it is also read
//     followed by the width byte 00 of an empty bit-packed stream, the
//     literal reading of §9.4 with §9.2. An empty stream is empty; delta of
//     delta needs two values. Every reconstructed value must fit the
//     column's type.
//   - Raw booleans and validity are LSB-first bitmaps with no width byte;
//     bit-packed booleans use width 1, or 0 when all are false; boolean RLE
//     is a uint32 run count, run value bits, then bit-packed lengths. Padding
//     bits must be zero.
//   - Variable-width values are always raw; their lengths stream may use any
//     integer transform. Byte-stream split applies to floats and
//     fixed_binary only.
//   - With codec none the stored and transformed lengths are equal.
//     Zstandard output is kept only when it saves at least 8 bytes (§10),
//     and a decoder never produces more than the declared transformed
//     length. The stored bytes must be whole zstd frames (skippable frames
//     included, anywhere): bytes after the last frame are corrupt, as
//     libzstd and the reference reader treat them.
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
