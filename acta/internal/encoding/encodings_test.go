package encoding

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// fixedOptions lists every PolicyFixed encoding.
func fixedOptions() []Options {
	var out []Options
	for t := TransformRaw; t <= TransformBoolRLE; t++ {
		out = append(out, Options{Policy: PolicyFixed, Transform: t})
	}
	for _, l := range []uint16{LayoutConstant, LayoutDictionary, LayoutRunLength} {
		out = append(out, Options{Policy: PolicyFixed, FixedLayout: l})
	}
	return out
}

// edgeCases are the edge cases for every class.
func edgeCases() []testColumn {
	var cs []testColumn
	add := func(name string, class Class, width int, v Values) {
		cs = append(cs, testColumn{name: name, class: class, width: width, rows: v.N, vals: v})
	}
	add("int64 one row", ClassSigned, 8, int64Vals(42))
	add("int64 two rows", ClassSigned, 8, int64Vals(-5, 9))
	add("int64 all equal", ClassSigned, 8, int64Vals(7, 7, 7, 7, 7))
	add("int64 extremes", ClassSigned, 8, int64Vals(math.MinInt64, math.MaxInt64, math.MinInt64, 0, math.MaxInt64))
	add("int64 near extremes", ClassSigned, 8, int64Vals(math.MaxInt64, math.MaxInt64-1, math.MaxInt64-3, math.MaxInt64-6))
	add("int64 negative deltas", ClassSigned, 8, int64Vals(100, 90, 70, 40, 0, -50, -110))
	add("uint64 extremes", ClassUnsigned, 8, fixedVals(8, math.MaxUint64, 0, math.MaxUint64, 1<<63))
	add("uint64 descending", ClassUnsigned, 8, fixedVals(8, math.MaxUint64, math.MaxUint64-1, math.MaxUint64-5, 3))
	add("int8 range", ClassSigned, 1, fixedVals(1, 0x80, 0x7f, 0xff, 0, 0x80))
	add("uint8 range", ClassUnsigned, 1, fixedVals(1, 0xff, 0, 0x7f, 0xff))
	add("int16", ClassSigned, 2, fixedVals(2, 0x8000, 0x7fff, 0xffff, 1))
	add("int32 date32", ClassSigned, 4, fixedVals(4, 20455, 20458, 20459, 0xffffffff))
	add("uint32", ClassUnsigned, 4, fixedVals(4, 0xffffffff, 0, 5))
	add("float64 specials", ClassFloat, 8, float64Vals(math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), math.Float64frombits(0x7ff8000000000042), math.Float64frombits(0xfff0000000000001), 1.5))
	add("float64 one", ClassFloat, 8, float64Vals(math.NaN()))
	add("float64 equal", ClassFloat, 8, float64Vals(2.5, 2.5, 2.5))
	add("float32", ClassFloat, 4, fixedVals(4, 0x80000000, 0x7fc00001, 0x3f800000, 0x3f800000))
	add("fixed16", ClassFixed, 16, Values{N: 3, Width: 16, Fixed: []byte("0123456789abcdef0123456789abcdefZZZZZZZZZZZZZZZZ")})
	add("fixed3", ClassFixed, 3, Values{N: 4, Width: 3, Fixed: []byte("abcabcxyzabc")})
	add("bool one", ClassBool, 0, Values{N: 1, Bools: []bool{true}})
	add("bool all false", ClassBool, 0, Values{N: 9, Bools: make([]bool, 9)})
	add("bool mixed", ClassBool, 0, Values{N: 11, Bools: []bool{true, true, false, true, false, false, false, true, true, true, false}})
	add("utf8", ClassVar, 0, varVals("a", "", "a", "bbb", "bbb", ""))
	add("utf8 one empty", ClassVar, 0, varVals(""))
	add("utf8 equal", ClassVar, 0, varVals("x", "x", "x"))
	// Nulls at block edges.
	cs = append(cs,
		testColumn{name: "nullable int edges", class: ClassSigned, width: 8, nullable: true, rows: 10, validity: []byte{0b01111110, 0b01}, vals: int64Vals(1, 2, 4, 8, 16, 32, 64)},
		testColumn{name: "nullable float first null", class: ClassFloat, width: 8, nullable: true, rows: 3, validity: []byte{0b110}, vals: float64Vals(1, 1)},
		testColumn{name: "nullable var last null", class: ClassVar, nullable: true, rows: 3, validity: []byte{0b011}, vals: varVals("p", "q")},
		testColumn{name: "nullable bool", class: ClassBool, nullable: true, rows: 9, validity: []byte{0xff, 0x00}, vals: Values{N: 8, Bools: []bool{true, false, true, false, true, false, true, false}}},
		testColumn{name: "all null", class: ClassSigned, width: 4, nullable: true, rows: 5, validity: []byte{0}, vals: Values{Width: 4, Fixed: []byte{}}},
	)
	return cs
}

// TestEveryEncodingRoundTrips runs every fixed encoding over every edge
// case: when the encoder accepts, the decoder must return the exact bits.
func TestEveryEncodingRoundTrips(t *testing.T) {
	accepted := map[string]int{}
	for _, opts := range fixedOptions() {
		for _, codec := range []uint16{CodecNone, CodecZstd} {
			opts.Codec = codec
			for _, tc := range edgeCases() {
				name := fmt.Sprintf("%v/%d/%s", opts.fixedChoice(), codec, tc.name)
				e, _ := NewEncoder(opts)
				col, err := e.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
				if err != nil {
					if !strings.Contains(err.Error(), "fixed") {
						t.Fatalf("%s: unexpected error %v", name, err)
					}
					continue
				}
				accepted[opts.fixedChoice().String()]++
				validity, got, err := Decode(tc.class, tc.width, tc.nullable, tc.rows, col.Layout, col.NullCount, col.Implicit, col.Streams, nil)
				if err != nil {
					t.Fatalf("%s: decode: %v", name, err)
				}
				sameValidity(t, tc.rows, validity, tc.validity)
				sameValues(t, tc.class, got, tc.vals)
			}
		}
	}
	for ch := chRaw; ch < numChoices; ch++ {
		if accepted[ch.String()] == 0 {
			t.Errorf("no case exercised %v", ch)
		}
	}
}

func TestAdaptiveRoundTripsAndIsDeterministic(t *testing.T) {
	for _, codec := range []uint16{CodecNone, CodecZstd} {
		for _, tc := range append(edgeCases(), metricCases(2000)...) {
			opts := Options{Policy: PolicyAdaptive, Codec: codec, Stats: StatsMinMax}
			col := roundTrip(t, opts, tc)
			// A fresh encoder and a reused one give identical bytes.
			e1, _ := NewEncoder(opts)
			e1.Encode(ClassSigned, 8, false, 3, nil, int64Vals(1, 2, 3))
			c1, _ := e1.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
			if c1.Layout != col.Layout || len(c1.Streams) != len(col.Streams) {
				t.Fatalf("%s: encoder reuse changed the layout", tc.name)
			}
			for i := range c1.Streams {
				a, b := c1.Streams[i], col.Streams[i]
				if a.Kind != b.Kind || a.Transform != b.Transform || a.Codec != b.Codec || !bytes.Equal(a.Data, b.Data) {
					t.Fatalf("%s: stream %d differs on reuse", tc.name, i)
				}
			}
		}
	}
}

// metricCases are realistic metric shapes of n samples.
func metricCases(n int) []testColumn {
	rng := rand.New(rand.NewSource(1))
	ts := make([]int64, n)
	counter := make([]float64, n)
	gauge := make([]float64, n)
	flag := make([]float64, n)
	t0 := int64(1767225600000)
	c := 0.0
	g := 50.0
	for i := range ts {
		ts[i] = t0 + int64(i)*15000 + int64(rng.Intn(5)) - 2
		c += float64(rng.Intn(100))
		counter[i] = c
		g += float64(rng.Intn(21)-10) / 100
		gauge[i] = math.Round(g*100) / 100
		if rng.Intn(50) == 0 {
			flag[i] = 1
		}
	}
	ints := make([]int64, n)
	for i := range ints {
		ints[i] = int64(counter[i])
	}
	return []testColumn{
		{name: "timestamps", class: ClassSigned, width: 8, rows: n, vals: int64Vals(ts...)},
		{name: "float counter", class: ClassFloat, width: 8, rows: n, vals: float64Vals(counter...)},
		{name: "int counter", class: ClassSigned, width: 8, rows: n, vals: int64Vals(ints...)},
		{name: "gauge", class: ClassFloat, width: 8, rows: n, vals: float64Vals(gauge...)},
		{name: "flag", class: ClassFloat, width: 8, rows: n, vals: float64Vals(flag...)},
	}
}

func TestAdaptivePicksMetricEncodings(t *testing.T) {
	cs := metricCases(1024)
	want := map[string]struct {
		layout    uint16
		transform uint16
	}{
		"timestamps":  {LayoutPlain, TransformDeltaOfDelta},
		"int counter": {LayoutPlain, TransformDelta},
		"flag":        {LayoutDictionary, TransformRaw},
	}
	for _, tc := range cs {
		col := roundTrip(t, Options{Policy: PolicyAdaptive}, tc)
		w, ok := want[tc.name]
		if !ok {
			continue
		}
		if col.Layout != w.layout || col.Streams[0].Transform != w.transform {
			t.Errorf("%s: layout %d transform %d, want %d/%d", tc.name, col.Layout, col.Streams[0].Transform, w.layout, w.transform)
		}
	}
	// A constant column becomes one 8-byte value.
	col := roundTrip(t, Options{Policy: PolicyAdaptive}, testColumn{name: "const", class: ClassFloat, width: 8, rows: 500, vals: float64Vals(make([]float64, 500)...)})
	if col.Layout != LayoutConstant || len(col.Streams) != 1 || len(col.Streams[0].Data) != 8 {
		t.Fatalf("constant column: layout %d streams %+v", col.Layout, col.Streams)
	}
	// Random bytes stay raw: nothing beats raw by the margin.
	rng := rand.New(rand.NewSource(2))
	noise := make([]float64, 300)
	for i := range noise {
		noise[i] = rng.NormFloat64()
	}
	col = roundTrip(t, Options{Policy: PolicyAdaptive}, testColumn{name: "noise", class: ClassFloat, width: 8, rows: 300, vals: float64Vals(noise...)})
	if col.Layout != LayoutPlain || col.Streams[0].Transform != TransformRaw {
		t.Fatalf("noise: layout %d transform %d, want raw", col.Layout, col.Streams[0].Transform)
	}
}

func TestFixedRefusals(t *testing.T) {
	e, _ := NewEncoder(Options{Policy: PolicyFixed, Transform: TransformDeltaOfDelta})
	if _, err := e.Encode(ClassSigned, 8, false, 1, nil, int64Vals(1)); err == nil || !strings.Contains(err.Error(), "fewer than 2") {
		t.Fatalf("one-value delta of delta: %v", err)
	}
	if _, err := e.Encode(ClassFloat, 8, false, 2, nil, float64Vals(1, 2)); err == nil || !strings.Contains(err.Error(), "not offered for float") {
		t.Fatalf("delta of delta on floats: %v", err)
	}
	e, _ = NewEncoder(Options{Policy: PolicyFixed, Transform: TransformDelta})
	if _, err := e.Encode(ClassSigned, 8, false, 2, nil, int64Vals(math.MinInt64, math.MaxInt64)); err == nil {
		t.Fatal("delta across the int64 range accepted")
	}
}

// TestReferenceVectors pins bytes the reference implementation's own tests
// state (rust/codec/transform.rs and write/encode/candidates.rs).
func TestReferenceVectors(t *testing.T) {
	// Bit packing [2, 4] at width 3 is 03 22.
	bw := newBitWriter(nil, 3)
	bw.put(2)
	bw.put(4)
	if got := bw.finish(); !bytes.Equal(got, []byte{3, 0x22}) {
		t.Fatalf("pack = %x, want 0322", got)
	}
	// Boolean RLE of [t, t, f] is 02000000 01 02 06.
	if got := appendBoolRLE(nil, []bool{true, true, false}, 2, 2); !bytes.Equal(got, []byte{2, 0, 0, 0, 1, 2, 6}) {
		t.Fatalf("bool RLE = %x", got)
	}
	// Delta 10,11,13 and FOR 10,11,13 decode from the reference bytes.
	delta := append(int64Vals(10).Fixed, 3, 0x22)
	got, err := decodeInts(true, 8, TransformDelta, delta, 3, nil)
	if err != nil || !bytes.Equal(got, int64Vals(10, 11, 13).Fixed) {
		t.Fatalf("delta: %x %v", got, err)
	}
	fr := append(int64Vals(10).Fixed, 2, 0x34)
	got, err = decodeInts(true, 8, TransformFrameOfRef, fr, 3, nil)
	if err != nil || !bytes.Equal(got, int64Vals(10, 11, 13).Fixed) {
		t.Fatalf("frame of reference: %x %v", got, err)
	}
	// A bit-packed 128 does not fit int8.
	if _, err := decodeInts(true, 1, TransformBitPacked, []byte{8, 0x80}, 1, nil); err == nil {
		t.Fatal("128 accepted as int8")
	}
	// Byte-stream split [1,3,2,4] of two 2-byte values is 01 02 03 04.
	if got := unsplit(make([]byte, 4), []byte{1, 3, 2, 4}, 2); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Fatalf("unsplit = %x", got)
	}
	bm, err := decodeBitmap(TransformBoolRLE, []byte{2, 0, 0, 0, 1, 2, 9}, 3, nil)
	if err != nil || bm[0] != 0b001 {
		t.Fatalf("bool RLE decode = %x %v", bm, err)
	}
}

func TestStatistics(t *testing.T) {
	e, _ := NewEncoder(Options{Stats: StatsMinMax})
	col, _ := e.Encode(ClassFloat, 8, false, 4, nil, float64Vals(math.NaN(), 3, -1, math.Inf(1)))
	if !bytes.Equal(col.Stats, float64Vals(-1, math.Inf(1)).Fixed) {
		t.Fatalf("float stats %x", col.Stats)
	}
	col, _ = e.Encode(ClassFloat, 8, false, 1, nil, float64Vals(math.NaN()))
	if col.Stats != nil {
		t.Fatalf("all-NaN stats %x, want none", col.Stats)
	}
	col, _ = e.Encode(ClassSigned, 4, false, 3, nil, fixedVals(4, 5, 0xfffffffe, 7))
	if !bytes.Equal(col.Stats, fixedVals(4, 0xfffffffe, 7).Fixed) {
		t.Fatalf("int32 stats %x", col.Stats)
	}
	col, _ = e.Encode(ClassBool, 0, false, 2, nil, Values{N: 2, Bools: []bool{true, true}})
	if !bytes.Equal(col.Stats, []byte{1, 1}) {
		t.Fatalf("bool stats %x", col.Stats)
	}
	col, _ = e.Encode(ClassVar, 0, false, 1, nil, varVals("a"))
	if col.Stats != nil {
		t.Fatal("utf8 stats written")
	}
	// Automatic: 63 values no, 64 yes; primary never; bool needs 121.
	auto, _ := NewEncoder(Options{Stats: StatsAutomatic})
	xs := make([]int64, 64)
	if col, _ := auto.Encode(ClassSigned, 8, false, 63, nil, int64Vals(xs[:63]...)); col.Stats != nil {
		t.Fatal("automatic stats for 63 values")
	}
	if col, _ := auto.Encode(ClassSigned, 8, false, 64, nil, int64Vals(xs...)); len(col.Stats) != 16 {
		t.Fatal("no automatic stats for 64 values")
	}
	bs := make([]bool, 121)
	if col, _ := auto.Encode(ClassBool, 0, false, 120, nil, Values{N: 120, Bools: bs[:120]}); col.Stats != nil {
		t.Fatal("automatic stats for 120 bools")
	}
	if col, _ := auto.Encode(ClassBool, 0, false, 121, nil, Values{N: 121, Bools: bs}); len(col.Stats) != 2 {
		t.Fatal("no automatic stats for 121 bools")
	}
	prim, _ := NewEncoder(Options{Stats: StatsAutomatic, Primary: true})
	if col, _ := prim.Encode(ClassSigned, 8, false, 64, nil, int64Vals(xs...)); col.Stats != nil {
		t.Fatal("automatic stats on the primary column")
	}
}

// TestDictBoundChangesNothing: stopping the dictionary profile early must
// give the same bytes as profiling it to the end.
func TestDictBoundChangesNothing(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tc := randomColumn(rng, 1+rng.Intn(3000), byte(rng.Intn(256)), byte(rng.Intn(256)))
		for _, codec := range []uint16{CodecNone, CodecZstd} {
			a, _ := NewEncoder(Options{Policy: PolicyAdaptive, Codec: codec})
			b, _ := NewEncoder(Options{Policy: PolicyAdaptive, Codec: codec})
			b.noDictBound = true
			ca, err := a.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			cb, _ := b.Encode(tc.class, tc.width, tc.nullable, tc.rows, tc.validity, tc.vals)
			if ca.Layout != cb.Layout || len(ca.Streams) != len(cb.Streams) {
				t.Fatalf("seed %d codec %d: layout %d vs %d", seed, codec, ca.Layout, cb.Layout)
			}
			for i := range ca.Streams {
				if !bytes.Equal(ca.Streams[i].Data, cb.Streams[i].Data) || ca.Streams[i].Transform != cb.Streams[i].Transform {
					t.Fatalf("seed %d codec %d: stream %d differs", seed, codec, i)
				}
			}
		}
	}
}
