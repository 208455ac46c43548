package encoding

import (
	"bytes"
	"errors"
	"testing"
)

func rawStream(kind, transform uint16, count int, data ...byte) Stream {
	return Stream{Kind: kind, Transform: transform, Count: uint64(count), RawLen: uint64(len(data)), Data: data}
}

// TestLayoutBytes pins the stream shapes of each layout on small inputs,
// following the reference writer's conventions.
func TestLayoutBytes(t *testing.T) {
	enc := func(opts Options, class Class, width int, v Values) Column {
		t.Helper()
		e, err := NewEncoder(opts)
		if err != nil {
			t.Fatal(err)
		}
		col, err := e.Encode(class, width, false, v.N, nil, v)
		if err != nil {
			t.Fatal(err)
		}
		return col
	}
	// Delta of delta of 10, 12, 15: first value, first delta 2, then
	// zigzag(1) = 2 at width 2.
	col := enc(Options{Policy: PolicyFixed, Transform: TransformDeltaOfDelta}, ClassSigned, 8, int64Vals(10, 12, 15))
	want := append(append(int64Vals(10).Fixed, int64Vals(2).Fixed...), 2, 0x02)
	if s := col.Streams[0]; !bytes.Equal(s.Data, want) || s.Count != 3 {
		t.Fatalf("delta of delta %x, want %x", s.Data, want)
	}
	// int32 delta of delta keeps a 4-byte first value and an 8-byte delta.
	col = enc(Options{Policy: PolicyFixed, Transform: TransformDeltaOfDelta}, ClassSigned, 4, fixedVals(4, 1, 3))
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("int32 delta of delta %x", s.Data)
	}
	// One-value delta is just the value.
	col = enc(Options{Policy: PolicyFixed, Transform: TransformDelta}, ClassSigned, 2, fixedVals(2, 0xbeef))
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{0xef, 0xbe}) {
		t.Fatalf("one-value delta %x", s.Data)
	}
	// It is read in that form and, §9.4 with §9.2 read literally, followed
	// by an empty bit-packed stream (width byte 00); nothing else follows.
	for _, tc := range []struct {
		data []byte
		ok   bool
	}{
		{[]byte{0xef, 0xbe}, true},
		{[]byte{0xef, 0xbe, 0}, true},
		{[]byte{0xef, 0xbe, 3}, false},
		{[]byte{0xef, 0xbe, 0, 0}, false},
		{[]byte{0xef}, false},
	} {
		got, err := decodeInts(false, 2, TransformDelta, tc.data, 1, nil)
		if tc.ok && (err != nil || !bytes.Equal(got, []byte{0xef, 0xbe})) {
			t.Fatalf("one-value delta % x: %x, %v", tc.data, got, err)
		}
		if !tc.ok && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("one-value delta % x: %v, want ErrCorrupt", tc.data, err)
		}
	}
	// Frame of reference stores the minimum at the canonical width.
	col = enc(Options{Policy: PolicyFixed, Transform: TransformFrameOfRef}, ClassSigned, 2, fixedVals(2, 0xfffe, 0xffff, 1))
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{0xfe, 0xff, 2, 0b00_11_01_00}) {
		t.Fatalf("frame of reference %x", s.Data)
	}
	// Constant: one value, count 1; variable width adds one length.
	col = enc(Options{Policy: PolicyFixed, FixedLayout: LayoutConstant}, ClassVar, 0, varVals("up", "up", "up"))
	if col.Layout != LayoutConstant || len(col.Streams) != 2 || string(col.Streams[0].Data) != "up" || col.Streams[0].Count != 1 ||
		!bytes.Equal(col.Streams[1].Data, []byte{2, 0, 0, 0}) || col.Streams[1].Kind != KindLengths {
		t.Fatalf("constant %+v", col.Streams)
	}
	// Dictionary: entries in first-appearance order, lengths, 1-bit indices.
	col = enc(Options{Policy: PolicyFixed, FixedLayout: LayoutDictionary}, ClassVar, 0, varVals("b", "a", "b", "b"))
	if len(col.Streams) != 3 || string(col.Streams[0].Data) != "ba" || col.Streams[0].Kind != KindDictionaryValues || col.Streams[0].Count != 2 ||
		col.Streams[1].Kind != KindDictionaryLengths || !bytes.Equal(col.Streams[1].Data, []byte{1, 0, 0, 0, 1, 0, 0, 0}) ||
		col.Streams[2].Kind != KindIndices || col.Streams[2].Count != 4 || !bytes.Equal(col.Streams[2].Data, []byte{1, 0b0010}) {
		t.Fatalf("dictionary %+v", col.Streams)
	}
	// Run length: run values, then run lengths 2, 1 at width 2.
	col = enc(Options{Policy: PolicyFixed, FixedLayout: LayoutRunLength}, ClassFloat, 8, float64Vals(1, 1, 2))
	if len(col.Streams) != 2 || !bytes.Equal(col.Streams[0].Data, float64Vals(1, 2).Fixed) || col.Streams[0].Kind != KindRunValues || col.Streams[0].Count != 2 ||
		col.Streams[1].Kind != KindRunLengths || !bytes.Equal(col.Streams[1].Data, []byte{2, 0b01_10}) {
		t.Fatalf("run length %+v", col.Streams)
	}
	// Byte-stream split of two float32s.
	col = enc(Options{Policy: PolicyFixed, Transform: TransformByteStreamSplit}, ClassFloat, 4, fixedVals(4, 0x04030201, 0x08070605))
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{1, 5, 2, 6, 3, 7, 4, 8}) {
		t.Fatalf("byte-stream split %x", s.Data)
	}
	// Bit-packed booleans use width 1, or width 0 when all are false.
	col = enc(Options{Policy: PolicyFixed, Transform: TransformBitPacked}, ClassBool, 0, Values{N: 3, Bools: []bool{true, false, true}})
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{1, 0b101}) {
		t.Fatalf("bit-packed bools %x", s.Data)
	}
	col = enc(Options{Policy: PolicyFixed, Transform: TransformBitPacked}, ClassBool, 0, Values{N: 3, Bools: make([]bool, 3)})
	if s := col.Streams[0]; !bytes.Equal(s.Data, []byte{0}) {
		t.Fatalf("all-false bit-packed bools %x", s.Data)
	}
}

func TestLayoutDecodeRejects(t *testing.T) {
	i64 := func(xs ...int64) []byte { return int64Vals(xs...).Fixed }
	cases := []struct {
		name    string
		class   Class
		width   int
		rows    int
		layout  uint16
		streams []Stream
		want    error
	}{
		{"index out of range", ClassSigned, 8, 2, LayoutDictionary, []Stream{
			rawStream(KindDictionaryValues, TransformRaw, 1, i64(5)...), rawStream(KindIndices, TransformBitPacked, 2, 1, 0b10)}, ErrCorrupt},
		{"empty dictionary", ClassSigned, 8, 2, LayoutDictionary, []Stream{
			rawStream(KindDictionaryValues, TransformRaw, 0), rawStream(KindIndices, TransformBitPacked, 2, 0)}, ErrCorrupt},
		{"indices not bit packed", ClassSigned, 8, 1, LayoutDictionary, []Stream{
			rawStream(KindDictionaryValues, TransformRaw, 1, i64(5)...), rawStream(KindIndices, TransformRaw, 1, 0, 0, 0, 0, 0, 0, 0, 0)}, ErrUnsupported},
		{"zero run", ClassSigned, 8, 2, LayoutRunLength, []Stream{
			rawStream(KindRunValues, TransformRaw, 2, i64(1, 2)...), rawStream(KindRunLengths, TransformBitPacked, 2, 2, 0b0010)}, ErrCorrupt},
		{"runs short", ClassSigned, 8, 4, LayoutRunLength, []Stream{
			rawStream(KindRunValues, TransformRaw, 2, i64(1, 2)...), rawStream(KindRunLengths, TransformBitPacked, 2, 2, 0b0101)}, ErrCorrupt},
		{"runs long", ClassSigned, 8, 2, LayoutRunLength, []Stream{
			rawStream(KindRunValues, TransformRaw, 2, i64(1, 2)...), rawStream(KindRunLengths, TransformBitPacked, 2, 2, 0b1010)}, ErrCorrupt},
		{"run values count", ClassSigned, 8, 2, LayoutRunLength, []Stream{
			rawStream(KindRunValues, TransformRaw, 1, i64(1)...), rawStream(KindRunLengths, TransformBitPacked, 2, 1, 0b11)}, ErrCorrupt},
		{"constant two values", ClassSigned, 8, 3, LayoutConstant, []Stream{
			rawStream(KindValues, TransformRaw, 2, i64(1, 2)...)}, ErrCorrupt},
		{"delta overflow", ClassSigned, 8, 2, LayoutPlain, []Stream{
			rawStream(KindValues, TransformDelta, 2, append(i64(1<<62), 64, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)...)}, ErrCorrupt},
		{"delta of delta one value", ClassSigned, 8, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformDeltaOfDelta, 1, i64(1)...)}, ErrCorrupt},
		{"int8 frame of reference overflow", ClassSigned, 1, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformFrameOfRef, 1, 0x7f, 1, 1)}, ErrCorrupt},
		{"uint8 delta below zero", ClassUnsigned, 1, 2, LayoutPlain, []Stream{
			rawStream(KindValues, TransformDelta, 2, 0, 1, 1)}, ErrCorrupt},
		{"bit width 65", ClassUnsigned, 8, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformBitPacked, 1, 65, 0, 0, 0, 0, 0, 0, 0, 0, 0)}, ErrCorrupt},
		{"packed padding", ClassUnsigned, 8, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformBitPacked, 1, 3, 0xff)}, ErrCorrupt},
		{"float delta", ClassFloat, 8, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformDelta, 1, i64(1)...)}, ErrCorrupt},
		{"int byte-stream split", ClassSigned, 8, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformByteStreamSplit, 1, i64(1)...)}, ErrCorrupt},
		{"var values delta", ClassVar, 0, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformDelta, 1, 'a'), rawStream(KindLengths, TransformRaw, 1, 1, 0, 0, 0)}, ErrCorrupt},
		{"bool RLE zero runs", ClassBool, 0, 2, LayoutPlain, []Stream{
			rawStream(KindValues, TransformBoolRLE, 2, 0, 0, 0, 0)}, ErrCorrupt},
		{"bool RLE too many runs", ClassBool, 0, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformBoolRLE, 1, 2, 0, 0, 0, 1, 1, 0b11)}, ErrCorrupt},
		{"bool packed 2", ClassBool, 0, 1, LayoutPlain, []Stream{
			rawStream(KindValues, TransformBitPacked, 1, 2, 0b10)}, ErrCorrupt},
		{"all-null with values", ClassSigned, 8, 0, LayoutPlain, []Stream{
			rawStream(KindValues, TransformRaw, 0)}, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode(tc.class, tc.width, false, tc.rows, tc.layout, 0, false, tc.streams, &Budget{Remaining: 1 << 20})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecodeAcceptsNonMinimalWidths: §9.2 does not require the smallest
// width, and the byte-aligned zstd variant relies on that.
func TestDecodeAcceptsNonMinimalWidths(t *testing.T) {
	s := rawStream(KindValues, TransformBitPacked, 2, 8, 3, 4)
	_, v, err := Decode(ClassUnsigned, 8, false, 2, LayoutPlain, 0, false, []Stream{s}, nil)
	if err != nil || !bytes.Equal(v.Fixed, fixedVals(8, 3, 4).Fixed) {
		t.Fatalf("width 8 for 3, 4: %x %v", v.Fixed, err)
	}
}
