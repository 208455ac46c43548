package encoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// testColumn is one column case: class, width and the dense values with
// their validity.
type testColumn struct {
	name     string
	class    Class
	width    int
	nullable bool
	rows     int
	validity []byte
	vals     Values
}

func fixedVals(width int, xs ...uint64) Values {
	v := Values{N: len(xs), Width: width, Fixed: []byte{}}
	for _, x := range xs {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		v.Fixed = append(v.Fixed, b[:width]...)
	}
	return v
}

func int64Vals(xs ...int64) Values {
	u := make([]uint64, len(xs))
	for i, x := range xs {
		u[i] = uint64(x)
	}
	return fixedVals(8, u...)
}

func float64Vals(xs ...float64) Values {
	u := make([]uint64, len(xs))
	for i, x := range xs {
		u[i] = math.Float64bits(x)
	}
	return fixedVals(8, u...)
}

func varVals(xs ...string) Values {
	v := Values{N: len(xs), Offsets: []int{0}, Data: []byte{}}
	for _, x := range xs {
		v.Data = append(v.Data, x...)
		v.Offsets = append(v.Offsets, len(v.Data))
	}
	return v
}

// sameValues compares dense values bit for bit.
func sameValues(t *testing.T, class Class, got, want Values) {
	t.Helper()
	if got.N != want.N {
		t.Fatalf("N = %d, want %d", got.N, want.N)
	}
	switch class {
	case ClassBool:
		for i := 0; i < want.N; i++ {
			if got.Bools[i] != want.Bools[i] {
				t.Fatalf("bool %d = %v, want %v", i, got.Bools[i], want.Bools[i])
			}
		}
	case ClassVar:
		for i := 0; i < want.N; i++ {
			g := got.Data[got.Offsets[i]:got.Offsets[i+1]]
			w := want.Data[want.Offsets[i]:want.Offsets[i+1]]
			if !bytes.Equal(g, w) {
				t.Fatalf("value %d = %q, want %q", i, g, w)
			}
		}
	default:
		if !bytes.Equal(got.Fixed, want.Fixed) {
			t.Fatalf("fixed values differ:\n got %x\nwant %x", got.Fixed, want.Fixed)
		}
	}
}

func sameValidity(t *testing.T, rows int, got, want []byte) {
	t.Helper()
	for i := 0; i < rows; i++ {
		g := got == nil || bitAt(got, i)
		w := want == nil || bitAt(want, i)
		if g != w {
			t.Fatalf("row %d valid = %v, want %v", i, g, w)
		}
	}
}

// roundTrip encodes tc with opts, decodes the result and compares.
func roundTrip(t *testing.T, opts Options, tc testColumn) Column {
	t.Helper()
	e, err := NewEncoder(opts)
	if err != nil {
		t.Fatal(err)
	}
	col, err := e.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
	if err != nil {
		t.Fatalf("%s: encode: %v", tc.name, err)
	}
	budget := &Budget{Remaining: 1 << 30}
	validity, got, err := Decode(tc.class, tc.width, tc.nullable, tc.rows, col.Layout, col.NullCount, col.Implicit, col.Streams, budget)
	if err != nil {
		t.Fatalf("%s: decode: %v (layout %d, streams %+v)", tc.name, err, col.Layout, col.Streams)
	}
	sameValidity(t, tc.rows, validity, tc.validity)
	sameValues(t, tc.class, got, tc.vals)
	return col
}

func rawCases() []testColumn {
	return []testColumn{
		{name: "int8", class: ClassSigned, width: 1, rows: 3, vals: fixedVals(1, 0xff, 0x80, 0x7f)},
		{name: "int16", class: ClassSigned, width: 2, rows: 2, vals: fixedVals(2, 0x8000, 1)},
		{name: "int32", class: ClassSigned, width: 4, rows: 3, vals: fixedVals(4, 0xffffffff, 194, 0)},
		{name: "int64", class: ClassSigned, width: 8, rows: 3, vals: int64Vals(math.MinInt64, math.MaxInt64, -1)},
		{name: "uint64", class: ClassUnsigned, width: 8, rows: 2, vals: fixedVals(8, math.MaxUint64, 0)},
		{name: "float64", class: ClassFloat, width: 8, rows: 4, vals: float64Vals(math.Copysign(0, -1), math.Inf(1), math.Float64frombits(0x7ff8000000000042), 0.97)},
		{name: "float32", class: ClassFloat, width: 4, rows: 1, vals: fixedVals(4, 0x7fc00001)},
		{name: "fixed16", class: ClassFixed, width: 16, rows: 1, vals: Values{N: 1, Width: 16, Fixed: []byte("0123456789abcdef")}},
		{name: "bool", class: ClassBool, rows: 3, vals: Values{N: 3, Bools: []bool{false, true, true}}},
		{name: "utf8", class: ClassVar, rows: 3, vals: varVals("alpha", "", "gamma")},
		{name: "nullable all valid", class: ClassSigned, width: 8, nullable: true, rows: 2, vals: int64Vals(1, 2)},
		{name: "nullable all null", class: ClassSigned, width: 8, nullable: true, rows: 9, validity: make([]byte, 2), vals: Values{Width: 8, Fixed: []byte{}}},
		{name: "nulls at edges", class: ClassFloat, width: 8, nullable: true, rows: 10, validity: []byte{0b01111110, 0b01}, vals: float64Vals(1, 2, 3, 4, 5, 6, 7)},
		{name: "nullable var", class: ClassVar, nullable: true, rows: 3, validity: []byte{0b101}, vals: varVals("a", "bc")},
		{name: "nullable bool", class: ClassBool, nullable: true, rows: 3, validity: []byte{0b110}, vals: Values{N: 2, Bools: []bool{true, false}}},
	}
}

func TestRawRoundTrip(t *testing.T) {
	for _, tc := range rawCases() {
		t.Run(tc.name, func(t *testing.T) {
			col := roundTrip(t, Options{}, tc)
			if col.Layout != LayoutPlain {
				t.Fatalf("layout %d, want plain", col.Layout)
			}
			for _, s := range col.Streams {
				if s.Transform != TransformRaw || s.Codec != CodecNone {
					t.Fatalf("stream %+v is not raw/none", s)
				}
			}
		})
	}
}

// TestRawBytes pins the exact bytes of raw streams against the fixture
// conventions (MANIFEST.tsv of the v0.2 fixtures).
func TestRawBytes(t *testing.T) {
	e, _ := NewEncoder(Options{})
	col, err := e.Encode(ClassBool, 0, false, 3, nil, Values{N: 3, Bools: []bool{false, true, true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(col.Streams) != 1 || !bytes.Equal(col.Streams[0].Data, []byte{0x06}) || col.Streams[0].Count != 3 {
		t.Fatalf("bool stream %+v, want one byte 06 count 3", col.Streams)
	}
	col, err = e.Encode(ClassVar, 0, false, 3, nil, varVals("alpha", "beta", "gamma"))
	if err != nil {
		t.Fatal(err)
	}
	if len(col.Streams) != 2 {
		t.Fatalf("%d streams, want values and lengths", len(col.Streams))
	}
	v, l := col.Streams[0], col.Streams[1]
	if v.Kind != KindValues || string(v.Data) != "alphabetagamma" || v.Count != 3 || v.RawLen != 14 {
		t.Fatalf("values stream %+v", v)
	}
	if l.Kind != KindLengths || !bytes.Equal(l.Data, []byte{5, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0}) || l.Count != 3 {
		t.Fatalf("lengths stream %+v", l)
	}
	// Nullable with some nulls: a raw validity bitmap, count = rows.
	col, err = e.Encode(ClassSigned, 8, true, 3, []byte{0xfd}, int64Vals(7, 8))
	if err != nil {
		t.Fatal(err)
	}
	if col.Implicit || col.NullCount != 1 || len(col.Streams) != 2 {
		t.Fatalf("column %+v", col)
	}
	if s := col.Streams[0]; s.Kind != KindValidity || s.Count != 3 || !bytes.Equal(s.Data, []byte{0b101}) {
		t.Fatalf("validity stream %+v, want 05 (padding cleared)", s)
	}
	// All valid and all null are implicit.
	col, _ = e.Encode(ClassSigned, 8, true, 2, nil, int64Vals(1, 2))
	if !col.Implicit || len(col.Streams) != 1 {
		t.Fatalf("all-valid column %+v", col)
	}
	col, _ = e.Encode(ClassSigned, 8, true, 2, []byte{0}, Values{Width: 8, Fixed: []byte{}})
	if !col.Implicit || col.NullCount != 2 || len(col.Streams) != 0 {
		t.Fatalf("all-null column %+v", col)
	}
}

func TestEncodeRejectsBadInput(t *testing.T) {
	e, _ := NewEncoder(Options{})
	if _, err := e.Encode(ClassSigned, 3, false, 1, nil, fixedVals(3, 1)); err == nil {
		t.Fatal("width 3 accepted")
	}
	if _, err := e.Encode(ClassSigned, 8, false, 2, []byte{1}, int64Vals(1)); err == nil {
		t.Fatal("nulls in a non-nullable column accepted")
	}
	if _, err := e.Encode(ClassSigned, 8, false, 2, nil, int64Vals(1)); err == nil {
		t.Fatal("1 value for 2 rows accepted")
	}
	if _, err := NewEncoder(Options{Codec: 7}); err == nil {
		t.Fatal("codec 7 accepted")
	}
}

func TestDecodeRejectsRaw(t *testing.T) {
	s := func(kind uint16, data []byte, count uint64) Stream {
		return Stream{Kind: kind, Data: data, RawLen: uint64(len(data)), Count: count}
	}
	cases := []struct {
		name      string
		class     Class
		width     int
		nullable  bool
		rows      int
		layout    uint16
		nulls     int
		implicit  bool
		streams   []Stream
		wantError error
	}{
		{"short raw", ClassSigned, 8, false, 2, LayoutPlain, 0, false, []Stream{s(KindValues, make([]byte, 15), 2)}, ErrCorrupt},
		{"count mismatch", ClassSigned, 8, false, 2, LayoutPlain, 0, false, []Stream{s(KindValues, make([]byte, 16), 3)}, ErrCorrupt},
		{"missing values", ClassSigned, 8, false, 2, LayoutPlain, 0, false, nil, ErrCorrupt},
		{"rawlen mismatch", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{{Kind: KindValues, Data: make([]byte, 8), RawLen: 9, Count: 1}}, ErrCorrupt},
		{"bool padding", ClassBool, 0, false, 3, LayoutPlain, 0, false, []Stream{s(KindValues, []byte{0x0f}, 3)}, ErrCorrupt},
		{"nulls without validity", ClassSigned, 8, true, 2, LayoutPlain, 1, false, []Stream{s(KindValues, make([]byte, 8), 1)}, ErrCorrupt},
		{"validity null count", ClassSigned, 8, true, 2, LayoutPlain, 1, false, []Stream{s(KindValidity, []byte{3}, 2), s(KindValues, make([]byte, 8), 1)}, ErrCorrupt},
		{"implicit partial", ClassSigned, 8, true, 2, LayoutPlain, 1, true, []Stream{s(KindValues, make([]byte, 8), 1)}, ErrCorrupt},
		{"non-nullable validity", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{s(KindValidity, []byte{1}, 1), s(KindValues, make([]byte, 8), 1)}, ErrCorrupt},
		{"duplicate kind", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{s(KindValues, make([]byte, 8), 1), s(KindValues, make([]byte, 8), 1)}, ErrCorrupt},
		{"foreign kind", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{s(KindIndices, []byte{0}, 1)}, ErrCorrupt},
		{"lengths overrun", ClassVar, 0, false, 1, LayoutPlain, 0, false, []Stream{s(KindValues, []byte("ab"), 1), s(KindLengths, []byte{3, 0, 0, 0}, 1)}, ErrCorrupt},
		{"unknown layout", ClassSigned, 8, false, 1, 9, 0, false, nil, ErrUnsupported},
		{"unknown codec", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{{Kind: KindValues, Codec: 5, Data: make([]byte, 8), RawLen: 8, Count: 1}}, ErrUnsupported},
		{"budget", ClassSigned, 8, false, 1, LayoutPlain, 0, false, []Stream{s(KindValues, make([]byte, 8), 1)}, ErrLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			budget := &Budget{Remaining: 1 << 20}
			if tc.wantError == ErrLimit {
				budget.Remaining = 4
			}
			_, _, err := Decode(tc.class, tc.width, tc.nullable, tc.rows, tc.layout, tc.nulls, tc.implicit, tc.streams, budget)
			if !errors.Is(err, tc.wantError) {
				t.Fatalf("err = %v, want %v", err, tc.wantError)
			}
		})
	}
}
