package encoding

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"testing"
)

// The fuzz targets feed arbitrary bytes to every decoder. Whatever the
// input, a decoder must not panic, must stay within its Budget, and must
// report bad input as ErrCorrupt (or ErrLimit / ErrUnsupported). Seeds live
// in testdata/fuzz and come from valid encodings (see writeFuzzSeeds).

const fuzzBudget = 1 << 22

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("error wraps no sentinel: %v", err)
	}
}

// fuzzColumn is the wire form FuzzDecode reads: a small header, then the
// streams. It exists only to let the fuzzer reach every Decode argument.
//
//	class u8 | width u8 | flags u8 (1 nullable, 2 implicit) | layout u8 |
//	rows u16 | nulls u16 | nstreams u8 |
//	per stream: kind u8 | transform u8 | codec u8 | count u16 | rawLen u32 | len u16 | data
type fuzzColumn struct {
	class     Class
	width     int
	nullable  bool
	implicit  bool
	layout    uint16
	rows      int
	nullCount int
	streams   []Stream
}

func parseFuzzColumn(b []byte) (fuzzColumn, bool) {
	if len(b) < 9 {
		return fuzzColumn{}, false
	}
	c := fuzzColumn{
		class:     Class(b[0]),
		width:     int(b[1]),
		nullable:  b[2]&1 != 0,
		implicit:  b[2]&2 != 0,
		layout:    uint16(b[3]),
		rows:      int(binary.LittleEndian.Uint16(b[4:])),
		nullCount: int(binary.LittleEndian.Uint16(b[6:])),
	}
	n := int(b[8])
	b = b[9:]
	for i := 0; i < n; i++ {
		if len(b) < 11 {
			return fuzzColumn{}, false
		}
		s := Stream{
			Kind:      uint16(b[0]),
			Transform: uint16(b[1]),
			Codec:     uint16(b[2]),
			Count:     uint64(binary.LittleEndian.Uint16(b[3:])),
			RawLen:    uint64(binary.LittleEndian.Uint32(b[5:])),
		}
		l := int(binary.LittleEndian.Uint16(b[9:]))
		b = b[11:]
		if len(b) < l {
			return fuzzColumn{}, false
		}
		s.Data = b[:l]
		b = b[l:]
		c.streams = append(c.streams, s)
	}
	return c, true
}

func appendFuzzColumn(dst []byte, class Class, width int, nullable bool, rows int, col Column) []byte {
	flags := byte(0)
	if nullable {
		flags |= 1
	}
	if col.Implicit {
		flags |= 2
	}
	dst = append(dst, byte(class), byte(width), flags, byte(col.Layout))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(rows))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(col.NullCount))
	dst = append(dst, byte(len(col.Streams)))
	for _, s := range col.Streams {
		dst = append(dst, byte(s.Kind), byte(s.Transform), byte(s.Codec))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s.Count))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(s.RawLen))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s.Data)))
		dst = append(dst, s.Data...)
	}
	return dst
}

func FuzzDecode(f *testing.F) {
	for _, seed := range columnSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := parseFuzzColumn(b)
		if !ok {
			return
		}
		budget := &Budget{Remaining: fuzzBudget}
		validity, vals, err := Decode(c.class, c.width, c.nullable, c.rows, c.layout, c.nullCount, c.implicit, c.streams, budget)
		checkDecodeError(t, err)
		if budget.Remaining < 0 {
			t.Fatalf("budget overdrawn: %d", budget.Remaining)
		}
		if err != nil {
			return
		}
		// What decodes must describe rows and nulls consistently and
		// survive a raw re-encode bit for bit.
		if vals.N != c.rows-c.nullCount {
			t.Fatalf("%d values for %d rows, %d nulls", vals.N, c.rows, c.nullCount)
		}
		e, _ := NewEncoder(Options{Policy: PolicyAdaptive})
		col, err := e.Encode(c.class, c.width, c.nullable, c.rows, validity, vals)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v2, vals2, err := Decode(c.class, c.width, c.nullable, c.rows, col.Layout, col.NullCount, col.Implicit, col.Streams, nil)
		if err != nil {
			t.Fatalf("decode of re-encode: %v", err)
		}
		sameValidity(t, c.rows, v2, validity)
		sameValues(t, c.class, vals2, vals)
	})
}

func FuzzDecodeInts(f *testing.F) {
	f.Add(byte(TransformDelta), byte(8), true, uint16(3), append(int64Vals(10).Fixed, 3, 0x22))
	f.Add(byte(TransformFrameOfRef), byte(8), true, uint16(3), append(int64Vals(10).Fixed, 2, 0x34))
	f.Add(byte(TransformDeltaOfDelta), byte(4), false, uint16(4), []byte{1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0x09})
	f.Add(byte(TransformBitPacked), byte(1), true, uint16(1), []byte{8, 0x80})
	f.Fuzz(func(t *testing.T, transform, width byte, signed bool, count uint16, b []byte) {
		w := []int{1, 2, 4, 8}[width&3]
		budget := &Budget{Remaining: fuzzBudget}
		out, err := decodeInts(signed, w, uint16(transform), b, int(count), budget)
		checkDecodeError(t, err)
		if err == nil && len(out) != int(count)*w {
			t.Fatalf("%d bytes for %d values of %d", len(out), count, w)
		}
	})
}

func FuzzDecodeBitmap(f *testing.F) {
	f.Add(byte(TransformBoolRLE), uint16(3), []byte{2, 0, 0, 0, 1, 2, 9})
	f.Add(byte(TransformRaw), uint16(3), []byte{5})
	f.Add(byte(TransformBitPacked), uint16(3), []byte{1, 5})
	f.Fuzz(func(t *testing.T, transform byte, count uint16, b []byte) {
		bm, err := decodeBitmap(uint16(transform), b, int(count), &Budget{Remaining: fuzzBudget})
		checkDecodeError(t, err)
		if err == nil && len(bm) != bitmapLen(int(count)) {
			t.Fatalf("%d bitmap bytes for %d values", len(bm), count)
		}
	})
}

func FuzzDecodeZstd(f *testing.F) {
	z := sharedZstdEncoder(3)
	f.Add(z.encode(nil, make([]byte, 1000)), uint32(1000))
	f.Add(z.encode(nil, []byte("acta stream data acta stream data")), uint32(34))
	f.Fuzz(func(t *testing.T, b []byte, rawLen uint32) {
		budget := &Budget{Remaining: fuzzBudget}
		out, err := zstdDecode(b, uint64(rawLen), budget)
		checkDecodeError(t, err)
		if err == nil && len(out) != int(rawLen) {
			t.Fatalf("%d bytes, declared %d", len(out), rawLen)
		}
	})
}

// FuzzEncode checks the encoder side: arbitrary values under every policy
// decode back bit for bit.
func FuzzEncode(f *testing.F) {
	f.Add(int64(1), uint16(100), byte(0), byte(8))
	f.Add(int64(2), uint16(7), byte(3), byte(1))
	f.Fuzz(func(t *testing.T, seed int64, n uint16, shape, width byte) {
		rng := rand.New(rand.NewSource(seed))
		rows := int(n%3000) + 1
		tc := randomColumn(rng, rows, shape, width)
		for _, opts := range append(fixedOptions(), Options{Policy: PolicyAdaptive}, Options{Policy: PolicyAdaptive, Codec: CodecZstd}) {
			e, _ := NewEncoder(opts)
			col, err := e.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
			if err != nil {
				continue // a fixed encoding that does not apply
			}
			validity, got, err := Decode(tc.class, tc.width, tc.nullable, tc.rows, col.Layout, col.NullCount, col.Implicit, col.Streams, nil)
			if err != nil {
				t.Fatalf("%+v: %v", opts, err)
			}
			sameValidity(t, tc.rows, validity, tc.validity)
			sameValues(t, tc.class, got, tc.vals)
		}
	})
}

// randomColumn builds a column of a class chosen by shape with values drawn
// from a few distributions that exercise runs, small ranges and extremes.
func randomColumn(rng *rand.Rand, rows int, shape, width byte) testColumn {
	classes := []Class{ClassSigned, ClassUnsigned, ClassFloat, ClassFixed, ClassBool, ClassVar}
	class := classes[int(shape)%len(classes)]
	w := []int{1, 2, 4, 8}[width&3]
	switch class {
	case ClassFloat:
		w = []int{4, 8}[width&1]
	case ClassFixed:
		w = int(width%20) + 1
	case ClassBool, ClassVar:
		w = 0
	}
	tc := testColumn{name: "random", class: class, width: w, rows: rows}
	var validity []byte
	if shape&0x40 != 0 {
		tc.nullable = true
		validity = make([]byte, bitmapLen(rows))
		for i := 0; i < rows; i++ {
			if rng.Intn(4) != 0 {
				validity[i>>3] |= 1 << (uint(i) & 7)
			}
		}
		tc.validity = validity
	}
	dense := 0
	for i := 0; i < rows; i++ {
		if validity == nil || bitAt(validity, i) {
			dense++
		}
	}
	mode := rng.Intn(4)
	v := Values{N: dense, Width: w}
	draw := func(i int) uint64 {
		switch mode {
		case 0:
			return rng.Uint64()
		case 1:
			return uint64(rng.Intn(3))
		case 2:
			return uint64(i/7) * 1000
		}
		return uint64(int64(i)*15000 + int64(rng.Intn(7)) - 3)
	}
	switch class {
	case ClassBool:
		for i := 0; i < dense; i++ {
			v.Bools = append(v.Bools, draw(i)%2 == 1)
		}
	case ClassVar:
		v.Offsets = []int{0}
		for i := 0; i < dense; i++ {
			x := draw(i) % 5
			for k := uint64(0); k < x; k++ {
				v.Data = append(v.Data, byte('a'+x))
			}
			v.Offsets = append(v.Offsets, len(v.Data))
		}
	default:
		v.Fixed = []byte{}
		for i := 0; i < dense; i++ {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], draw(i))
			for k := 0; k < w; k++ {
				v.Fixed = append(v.Fixed, b[k%8])
			}
		}
	}
	tc.vals = v
	return tc
}

// columnSeeds are valid encodings of the edge cases under every policy.
func columnSeeds() [][]byte {
	var out [][]byte
	opts := append(fixedOptions(), Options{Policy: PolicyAdaptive}, Options{Policy: PolicyAdaptive, Codec: CodecZstd})
	for _, o := range opts {
		cases := edgeCases()
		if o.Policy == PolicyAdaptive {
			cases = append(cases, metricCases(2048)...) // 2048+: byte-aligned zstd variants
		}
		for _, tc := range cases {
			e, _ := NewEncoder(o)
			col, err := e.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
			if err != nil {
				continue
			}
			out = append(out, appendFuzzColumn(nil, tc.class, tc.width, tc.nullable, tc.rows, col))
		}
	}
	return out
}
