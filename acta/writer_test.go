package acta

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// tsSchema is the store's per-series schema.
func tsSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := NewSchema(1, []Column{
		{ID: 1, Name: "timestamp", Type: Timestamp(Millisecond)},
		{ID: 2, Name: "value", Type: Of(TypeFloat64)},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tsBatch(s *Schema, ts []int64, vs []float64) *Batch {
	return &Batch{Schema: s, Rows: len(ts), Columns: []Array{
		&FixedArray[int64]{Values: ts}, &FixedArray[float64]{Values: vs}}}
}

// writeTS writes blocks of (timestamp, value) rows, one Flush per block.
func writeTS(t testing.TB, path string, opts WriterOptions, blocks ...[]int64) {
	t.Helper()
	s := tsSchema(t)
	w, err := Create(path, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range blocks {
		vs := make([]float64, len(ts))
		for i, x := range ts {
			vs[i] = float64(x) / 2
		}
		if err := w.Append(tsBatch(s, ts, vs)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

// allTypesSchema has one nullable column of every logical type.
func allTypesSchema(t testing.TB) *Schema {
	t.Helper()
	types := []Type{Timestamp(Nanosecond), Of(TypeBool), Of(TypeInt8), Of(TypeInt16), Of(TypeInt32), Of(TypeInt64),
		Of(TypeUint8), Of(TypeUint16), Of(TypeUint32), Of(TypeUint64), Of(TypeFloat32), Of(TypeFloat64),
		{ID: TypeDecimal64, Precision: 10, Scale: -3}, Of(TypeUTF8), {ID: TypeCategorical, Ordered: true},
		Of(TypeBinary), {ID: TypeFixedBinary, Width: 3}, Of(TypeDate32),
		{ID: TypeTimestamp64, Unit: Second, TZMode: TZIANA, TZName: "America/New_York"}}
	cols := make([]Column, len(types))
	for i, ty := range types {
		// IDs deliberately not ascending: the column table is sorted by ID,
		// schema order is not.
		cols[i] = Column{ID: uint32(100 - i), Name: ty.ID.String() + string(rune('a'+i)), Type: ty, Nullable: i > 0}
	}
	s, err := NewSchema(7, cols, "auto")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// allTypesBatch builds n rows; every third row is null in nullable columns
// when nulls is set, and the float columns carry NaN payloads and -0.
func allTypesBatch(s *Schema, n, base int, nulls bool) *Batch {
	var valid Bitmap
	if nulls {
		valid = NewBitmap(n)
		for i := 0; i < n; i++ {
			valid.Set(i, (base+i)%3 != 0)
		}
	}
	b := &Batch{Schema: s, Rows: n}
	bytesCol := func(f func(i int) []byte) *BytesArray {
		a := &BytesArray{Offsets: []int{0}, Valid: valid}
		for i := 0; i < n; i++ {
			if valid.Valid(i) {
				a.Data = append(a.Data, f(base+i)...)
			}
			a.Offsets = append(a.Offsets, len(a.Data))
		}
		return a
	}
	for ci, c := range s.Columns {
		var a Array
		v := valid
		if ci == 0 {
			v = nil
		}
		switch c.Type.ID {
		case TypeTimestamp64:
			x := make([]int64, n)
			for i := range x {
				x[i] = int64(base+i)*1000 - 5
			}
			a = &FixedArray[int64]{Values: x, Valid: v}
		case TypeBool:
			x := make([]bool, n)
			for i := range x {
				x[i] = (base+i)%2 == 0
			}
			a = &FixedArray[bool]{Values: x, Valid: v}
		case TypeInt8:
			x := make([]int8, n)
			for i := range x {
				x[i] = int8(-base - i)
			}
			a = &FixedArray[int8]{Values: x, Valid: v}
		case TypeInt16:
			x := make([]int16, n)
			for i := range x {
				x[i] = int16(-300 * (base + i))
			}
			a = &FixedArray[int16]{Values: x, Valid: v}
		case TypeInt32, TypeDate32:
			x := make([]int32, n)
			for i := range x {
				x[i] = int32(-70000 * (base + i))
			}
			a = &FixedArray[int32]{Values: x, Valid: v}
		case TypeInt64, TypeDecimal64:
			x := make([]int64, n)
			for i := range x {
				x[i] = math.MinInt64 + int64(base+i)
			}
			a = &FixedArray[int64]{Values: x, Valid: v}
		case TypeUint8:
			x := make([]uint8, n)
			for i := range x {
				x[i] = uint8(255 - base - i)
			}
			a = &FixedArray[uint8]{Values: x, Valid: v}
		case TypeUint16:
			x := make([]uint16, n)
			for i := range x {
				x[i] = uint16(65535 - base - i)
			}
			a = &FixedArray[uint16]{Values: x, Valid: v}
		case TypeUint32:
			x := make([]uint32, n)
			for i := range x {
				x[i] = math.MaxUint32 - uint32(base+i)
			}
			a = &FixedArray[uint32]{Values: x, Valid: v}
		case TypeUint64:
			x := make([]uint64, n)
			for i := range x {
				x[i] = math.MaxUint64 - uint64(base+i)
			}
			a = &FixedArray[uint64]{Values: x, Valid: v}
		case TypeFloat32:
			x := make([]float32, n)
			for i := range x {
				x[i] = math.Float32frombits(0x7fc00001 + uint32(base+i)) // NaN payloads
			}
			a = &FixedArray[float32]{Values: x, Valid: v}
		case TypeFloat64:
			x := make([]float64, n)
			for i := range x {
				switch (base + i) % 4 {
				case 0:
					x[i] = math.Copysign(0, -1)
				case 1:
					x[i] = math.Float64frombits(0x7ff0000000000002) // Prometheus stale marker
				case 2:
					x[i] = math.Inf(-1)
				default:
					x[i] = float64(base+i) * 1.1
				}
			}
			a = &FixedArray[float64]{Values: x, Valid: v}
		case TypeUTF8, TypeCategorical:
			a = bytesCol(func(i int) []byte { return []byte("héllo-" + string(rune('a'+i%26)) + string(make([]byte, i%3))) })
		case TypeBinary:
			a = bytesCol(func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, i%5) })
		case TypeFixedBinary:
			a = bytesCol(func(i int) []byte { return []byte{byte(i), byte(i >> 8), 0xff} })
		}
		b.Columns = append(b.Columns, a)
	}
	return b
}

// sameArray compares two arrays bit for bit (floats by their bits), over
// values and validity.
func sameArray(t *testing.T, what string, got, want Array) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Fatalf("%s: %d rows, want %d", what, got.Len(), want.Len())
	}
	gv, wv := got.Validity(), want.Validity()
	for i := 0; i < got.Len(); i++ {
		if gv.Valid(i) != wv.Valid(i) {
			t.Fatalf("%s row %d: valid %v, want %v", what, i, gv.Valid(i), wv.Valid(i))
		}
		if !wv.Valid(i) {
			continue
		}
		var g, w any
		switch x := got.(type) {
		case *FixedArray[float64]:
			g, w = math.Float64bits(x.Values[i]), math.Float64bits(want.(*FixedArray[float64]).Values[i])
		case *FixedArray[float32]:
			g, w = math.Float32bits(x.Values[i]), math.Float32bits(want.(*FixedArray[float32]).Values[i])
		case *BytesArray:
			g, w = string(x.Value(i)), string(want.(*BytesArray).Value(i))
		default:
			g, w = cell(got, i), cell(want, i)
		}
		if g != w {
			t.Fatalf("%s row %d: got %v, want %v", what, i, g, w)
		}
	}
}

func cell(a Array, i int) any {
	switch x := a.(type) {
	case *FixedArray[bool]:
		return x.Values[i]
	case *FixedArray[int8]:
		return x.Values[i]
	case *FixedArray[int16]:
		return x.Values[i]
	case *FixedArray[int32]:
		return x.Values[i]
	case *FixedArray[int64]:
		return x.Values[i]
	case *FixedArray[uint8]:
		return x.Values[i]
	case *FixedArray[uint16]:
		return x.Values[i]
	case *FixedArray[uint32]:
		return x.Values[i]
	case *FixedArray[uint64]:
		return x.Values[i]
	}
	return nil
}

func TestRoundTripAllTypes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  WriterOptions
		nulls bool
	}{
		{"raw", WriterOptions{}, false},
		{"raw-nulls", WriterOptions{}, true},
		{"rowids-nulls", WriterOptions{RowIDs: true, RowBlockTarget: 7}, true},
		{"zstd-minmax", WriterOptions{Codec: CodecZstd, Statistics: StatsMinMax}, true},
		{"adaptive", WriterOptions{Encoding: EncodingAdaptive, Statistics: StatsMinMax}, false},
		{"adaptive-zstd-nulls", WriterOptions{Encoding: EncodingAdaptive, Codec: CodecZstd, Statistics: StatsAutomatic}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "all.acta")
			s := allTypesSchema(t)
			w, err := Create(path, s, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := []*Batch{allTypesBatch(s, 10, 0, tc.nulls), allTypesBatch(s, 5, 10, tc.nulls)}
			for _, b := range want {
				if err := w.Append(b); err != nil {
					t.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			sum, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if sum.RowsWritten != 15 {
				t.Fatalf("summary %+v", sum)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Schema(); !sameSchema(got, s) {
				t.Fatalf("schema %+v, want %+v", got, s)
			}
			all := allTypesBatch(s, 15, 0, tc.nulls)
			row := 0
			var next uint64
			for i, bi := range r.Blocks() {
				if tc.opts.RowIDs && bi.BaseRowID != next {
					t.Fatalf("block %d base row ID %d, want %d", i, bi.BaseRowID, next)
				}
				next += uint64(bi.Rows)
				b, err := r.ReadBlock(i)
				if err != nil {
					t.Fatal(err)
				}
				for c := range s.Columns {
					sameArray(t, s.Columns[c].Name, b.Columns[c], sliceArray(all.Columns[c], row, row+b.Rows))
				}
				row += b.Rows
			}
			if row != 15 {
				t.Fatalf("%d rows read", row)
			}
			if err := Validate(path, ValidateFull); err != nil {
				t.Fatalf("full validation: %v", err)
			}
		})
	}
}

func sameSchema(a, b *Schema) bool {
	if a.ID != b.ID || a.Primary != b.Primary || len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		if a.Columns[i] != b.Columns[i] {
			return false
		}
	}
	return true
}

func TestScanRangesAndProjection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ts.acta")
	writeTS(t, path, WriterOptions{}, []int64{10, 20, 20, 30}, []int64{40, 50}, []int64{35, 5, 60})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bl := r.Blocks()
	if !bl[0].Sorted || !bl[1].Sorted || bl[2].Sorted || bl[2].Min != 5 || bl[2].Max != 60 || bl[0].Min != 10 || bl[0].Max != 30 {
		t.Fatalf("blocks %+v", bl)
	}
	collect := func(o ScanOptions) ([]int64, ScanMetrics) {
		t.Helper()
		sc, err := r.Scan(o)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for {
			b, err := sc.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Columns) == 0 {
				got = append(got, int64(b.Rows))
				continue
			}
			got = append(got, b.Columns[0].(*FixedArray[int64]).Values...)
		}
		return got, sc.Metrics()
	}
	if sc, _ := r.Scan(ScanOptions{Range: &PrimaryRange{20, 40}}); sc.RemainingCandidateBlocks() != 2 {
		t.Fatalf("candidate blocks %d, want 2", sc.RemainingCandidateBlocks())
	}
	got, m := collect(ScanOptions{Columns: []string{"timestamp"}, Range: &PrimaryRange{20, 40}})
	eqSlice(t, "[20,40)", got, []int64{20, 20, 30, 35})
	if m.BlocksConsidered != 3 || m.BlocksPruned != 1 || m.RowsReturned != 4 || m.StreamsDecoded != 2 {
		t.Fatalf("metrics %+v", m)
	}
	got, m = collect(ScanOptions{Columns: []string{"timestamp"}, Range: &PrimaryRange{40, 51}})
	eqSlice(t, "[40,51)", got, []int64{40, 50})
	if m.BlocksPruned != 1 {
		t.Fatalf("metrics %+v", m)
	}
	got, _ = collect(ScanOptions{Columns: []string{"timestamp"}, Range: &PrimaryRange{30, 30}})
	eqSlice(t, "[30,30)", got, nil)
	got, _ = collect(ScanOptions{Columns: []string{"timestamp"}, Range: &PrimaryRange{31, 35}})
	eqSlice(t, "[31,35)", got, nil)
	got, m = collect(ScanOptions{Columns: []string{}, Range: &PrimaryRange{0, 1000}})
	eqSlice(t, "empty projection", got, []int64{4, 2, 3})
	if m.StreamsDecoded != 3 {
		t.Fatalf("range with empty projection decoded %d streams, want 3 (primary only)", m.StreamsDecoded)
	}
	got, m = collect(ScanOptions{Columns: []string{}})
	eqSlice(t, "empty projection, no range", got, []int64{4, 2, 3})
	if m.StreamsDecoded != 0 {
		t.Fatalf("empty projection decoded %d streams", m.StreamsDecoded)
	}
	// Requested order is the batch order; values bit-exact.
	sc, err := r.Scan(ScanOptions{Columns: []string{"value", "timestamp"}, Range: &PrimaryRange{5, 6}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sc.Next()
	if err != nil {
		t.Fatal(err)
	}
	if b.Schema.Columns[0].Name != "value" || b.Columns[0].(*FixedArray[float64]).Values[0] != 2.5 || b.Columns[1].(*FixedArray[int64]).Values[0] != 5 {
		t.Fatalf("batch %+v", b)
	}
	if _, err := r.Scan(ScanOptions{Columns: []string{"nope"}}); err == nil {
		t.Fatal("unknown column accepted")
	}
}

func TestWriterRulesAndTargets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.acta")
	s := tsSchema(t)
	w, err := Create(path, s, WriterOptions{RowBlockTarget: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, s, WriterOptions{}); err == nil {
		t.Fatal("Create overwrote an existing path")
	}
	if _, err := OpenWriter(path, WriterOptions{}); !errors.Is(err, ErrWriterLocked) {
		t.Fatalf("second writer: %v, want ErrWriterLocked", err)
	}
	if err := w.Append(tsBatch(s, []int64{1, 2, 3, 4, 5, 6, 7}, make([]float64, 7))); err != nil {
		t.Fatal(err)
	}
	if w.Buffered() != 1 {
		t.Fatalf("buffered %d, want 1", w.Buffered())
	}
	bad := &Batch{Rows: 1, Columns: []Array{&FixedArray[int32]{Values: []int32{1}}, &FixedArray[float64]{Values: []float64{1}}}}
	if err := w.Append(bad); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("wrong type: %v", err)
	}
	nulls := &Batch{Rows: 1, Columns: []Array{&FixedArray[int64]{Values: []int64{9}, Valid: NewBitmap(1)}, &FixedArray[float64]{Values: []float64{1}}}}
	if err := w.Append(nulls); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("null in non-nullable: %v", err)
	}
	if err := w.Close(); err != nil { // drops the buffered row
		t.Fatal(err)
	}
	w, err = OpenWriter(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(tsBatch(s, []int64{8}, []float64{8})); err != nil {
		t.Fatal(err)
	}
	sum, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if sum.BlocksWritten != 1 || sum.LastSeq != 3 || sum.BytesWritten != fileSize(t, path) {
		t.Fatalf("summary %+v", sum)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []int
	for _, b := range r.Blocks() {
		rows = append(rows, b.Rows)
	}
	eqSlice(t, "block rows", rows, []int{3, 3, 1})
	if _, err := OpenWriter(path, WriterOptions{RowIDs: true}); err == nil {
		t.Fatal("RowIDs disagreement accepted")
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestAdaptiveLargeBlocks writes series-shaped data under every writer
// policy: values come back bit-exact, full validation passes (statistics,
// bounds, TS_SORTED), and adaptive+zstd is smaller than raw.
func TestAdaptiveLargeBlocks(t *testing.T) {
	const n = 20000
	ts := make([]int64, n)
	vs := make([]float64, n)
	for i := range ts {
		ts[i] = 1_700_000_000_000 + int64(i)*15_000
		vs[i] = float64(i % 100)
		if i%777 == 0 {
			vs[i] = math.Float64frombits(0x7ff0000000000002)
		}
	}
	s := tsSchema(t)
	sizes := map[string]int64{}
	for name, opts := range map[string]WriterOptions{
		"raw":           {},
		"adaptive-zstd": {Encoding: EncodingAdaptive, Codec: CodecZstd, Statistics: StatsMinMax},
	} {
		path := filepath.Join(t.TempDir(), name+".acta")
		w, err := Create(path, s, WriterOptions{RowBlockTarget: 8192, Encoding: opts.Encoding, Codec: opts.Codec, Statistics: opts.Statistics})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := w.Append(tsBatch(s, ts, vs)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sum, err := w.Finish()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sizes[name] = sum.BytesWritten
		if err := Validate(path, ValidateFull); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		row := 0
		for i := range r.Blocks() {
			b, err := r.ReadBlock(i)
			if err != nil {
				t.Fatalf("%s block %d: %v", name, i, err)
			}
			sameArray(t, name+" ts", b.Columns[0], &FixedArray[int64]{Values: ts[row : row+b.Rows]})
			sameArray(t, name+" value", b.Columns[1], &FixedArray[float64]{Values: vs[row : row+b.Rows]})
			row += b.Rows
		}
		r.Close()
		if row != n {
			t.Fatalf("%s: %d rows", name, row)
		}
	}
	// A fixed transform one column's type does not offer is refused by
	// Create, before anything is written.
	if _, err := Create(filepath.Join(t.TempDir(), "d.acta"), s, WriterOptions{Encoding: FixedEncoding(TransformDelta)}); err == nil {
		t.Fatal("fixed delta accepted for a float64 column")
	}
	if sizes["adaptive-zstd"] >= sizes["raw"]/2 {
		t.Fatalf("adaptive+zstd %d bytes vs raw %d", sizes["adaptive-zstd"], sizes["raw"])
	}
	t.Logf("sizes: %v", sizes)
}

func TestWriterPoisonAndByteTarget(t *testing.T) {
	dir := t.TempDir()
	s := tsSchema(t)
	// 16 bytes a row: a 100-byte target publishes every 6 rows.
	path := filepath.Join(dir, "bytes.acta")
	w, err := Create(path, s, WriterOptions{ByteBlockTarget: 100})
	if err != nil {
		t.Fatal(err)
	}
	ts := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	if err := w.Append(tsBatch(s, ts, make([]float64, len(ts)))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r, _ := Open(path)
	eqSlice(t, "byte-target blocks", blockRows(r), []int{6, 6, 2})
	r.Close()

	// A write failure poisons the writer for good.
	path = filepath.Join(dir, "poison.acta")
	w, err = Create(path, s, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.f.Close() // the next write fails
	w.Append(tsBatch(s, []int64{1}, []float64{1}))
	if err := w.Flush(); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("flush after failed write: %v", err)
	}
	if err := w.Append(tsBatch(s, []int64{2}, []float64{2})); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append on poisoned writer: %v", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("sync on poisoned writer: %v", err)
	}
}

func TestOpenWriterBodyCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.acta")
	writeTS(t, path, WriterOptions{}, []int64{1, 2, 3})
	data, _ := os.ReadFile(path)
	data[len(data)-trailerSize-1] ^= 1 // last payload byte: only the body CRC covers it
	os.WriteFile(path, data, 0o644)
	if _, err := OpenWriter(path, WriterOptions{}); !IsCorruption(err) {
		t.Fatalf("default OpenWriter: %v, want corruption", err)
	}
	w, err := OpenWriter(path, WriterOptions{SkipBodyCheck: true})
	if err != nil {
		t.Fatalf("SkipBodyCheck: %v", err)
	}
	w.Close()
}

// TestAllNullAndAllValidBlocks: implicit validity both ways (§8.1) for every
// type, raw and adaptive.
func TestAllNullAndAllValidBlocks(t *testing.T) {
	for _, opts := range []WriterOptions{{}, {Encoding: EncodingAdaptive, Codec: CodecZstd}} {
		s := allTypesSchema(t)
		path := filepath.Join(t.TempDir(), "n.acta")
		w, err := Create(path, s, opts)
		if err != nil {
			t.Fatal(err)
		}
		allNull := allTypesBatch(s, 4, 0, false)
		for i := 1; i < len(allNull.Columns); i++ {
			switch a := allNull.Columns[i].(type) {
			case *BytesArray:
				allNull.Columns[i] = &BytesArray{Offsets: make([]int, 5), Valid: NewBitmap(4)}
			default:
				allNull.Columns[i] = gatherArray(a, []int{0, 1, 2, 3})
				setValid(allNull.Columns[i], NewBitmap(4))
			}
		}
		valid := allTypesBatch(s, 6, 4, false)
		for _, b := range []*Batch{allNull, valid} {
			if err := w.Append(b); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := Validate(path, ValidateFull); err != nil {
			t.Fatal(err)
		}
		r, _ := Open(path)
		for bi, want := range []*Batch{allNull, valid} {
			got, err := r.ReadBlock(bi)
			if err != nil {
				t.Fatal(err)
			}
			for c := range s.Columns {
				sameArray(t, s.Columns[c].Name, got.Columns[c], want.Columns[c])
			}
		}
		r.Close()
	}
}

func setValid(a Array, v Bitmap) {
	switch x := a.(type) {
	case *FixedArray[bool]:
		x.Valid = v
	case *FixedArray[int8]:
		x.Valid = v
	case *FixedArray[int16]:
		x.Valid = v
	case *FixedArray[int32]:
		x.Valid = v
	case *FixedArray[int64]:
		x.Valid = v
	case *FixedArray[uint8]:
		x.Valid = v
	case *FixedArray[uint16]:
		x.Valid = v
	case *FixedArray[uint32]:
		x.Valid = v
	case *FixedArray[uint64]:
		x.Valid = v
	case *FixedArray[float32]:
		x.Valid = v
	case *FixedArray[float64]:
		x.Valid = v
	}
}
