package acta

import (
	"encoding/hex"
	"math"
	"path/filepath"
	"testing"
)

// The v0.2 compatibility fixtures (copied from shared/fixtures/acta-v0.2,
// values from its MANIFEST.tsv). Every value of every fixture is asserted.

func fixture(name string) string { return filepath.Join("testdata", "fixtures", name) }

func readOnly(t *testing.T, name string) (*Reader, *Batch) {
	t.Helper()
	r, err := Open(fixture(name))
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { r.Close() })
	if n := len(r.Blocks()); n != 1 {
		t.Fatalf("%s: %d blocks, want 1", name, n)
	}
	b, err := r.ReadBlock(0)
	if err != nil {
		t.Fatalf("%s: read block 0: %v", name, err)
	}
	return r, b
}

func eqSlice[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d]: got %v, want %v", what, i, got[i], want[i])
		}
	}
}

func col[T Fixed](t *testing.T, b *Batch, i int) []T {
	t.Helper()
	a, ok := b.Columns[i].(*FixedArray[T])
	if !ok {
		t.Fatalf("column %d is %T", i, b.Columns[i])
	}
	if a.Valid != nil {
		for r := 0; r < a.Len(); r++ {
			if !a.Valid.Valid(r) {
				t.Fatalf("column %d row %d unexpectedly null", i, r)
			}
		}
	}
	return a.Values
}

func strs(t *testing.T, b *Batch, i int, hexed bool) []string {
	t.Helper()
	a, ok := b.Columns[i].(*BytesArray)
	if !ok {
		t.Fatalf("column %d is %T", i, b.Columns[i])
	}
	out := make([]string, a.Len())
	for r := range out {
		if hexed {
			out[r] = hex.EncodeToString(a.Value(r))
		} else {
			out[r] = string(a.Value(r))
		}
	}
	return out
}

func checkInfo(t *testing.T, got, want BlockInfo) {
	t.Helper()
	if got != want {
		t.Fatalf("block info %+v, want %+v", got, want)
	}
}

func TestFixtureMinimal(t *testing.T) {
	r, b := readOnly(t, "minimal.acta")
	s := r.Schema()
	if s.ID != 1 || s.Primary != 1 || len(s.Columns) != 1 {
		t.Fatalf("schema %+v", s)
	}
	if c := s.Columns[0]; c.Name != "time" || c.Type != Timestamp(Microsecond) || c.Nullable {
		t.Fatalf("column %+v", c)
	}
	if id := r.FileID(); hex.EncodeToString(id[:]) != "000102030405060708090a0b0c0d0e0f" {
		t.Fatalf("file ID %x", id)
	}
	if r.RowIDs() {
		t.Fatal("row IDs on")
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 0xd0, Bytes: 264, Rows: 3, BaseRowID: math.MaxUint64, Min: 1000000, Max: 3000000})
	eqSlice(t, "time", col[int64](t, b, 0), []int64{1000000, 2000000, 3000000})
	if r.CommittedSize() != 472 || r.IncompleteTail() {
		t.Fatalf("committed %d tail %v", r.CommittedSize(), r.IncompleteTail())
	}
}

func TestFixtureTSSorted(t *testing.T) {
	r, b := readOnly(t, "ts_sorted.acta")
	if id := r.FileID(); string(id[:]) != "ACTA-TS-SORTED!!" {
		t.Fatalf("file ID %q", id)
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 0xd0, Bytes: 272, Rows: 4, BaseRowID: math.MaxUint64, Min: 1000000, Max: 3000000, Sorted: true})
	eqSlice(t, "time", col[int64](t, b, 0), []int64{1000000, 2000000, 2000000, 3000000})
}

func TestFixtureDate32(t *testing.T) {
	r, b := readOnly(t, "date32.acta")
	s := r.Schema()
	if string(r.fh.pro.FileID[:]) != "ACTA-DATE32-EOD!" || s.Primary != 1 {
		t.Fatalf("file ID %q primary %d", r.fh.pro.FileID, s.Primary)
	}
	if s.Columns[0].Name != "date" || s.Columns[0].Type.ID != TypeDate32 || s.Columns[1].Name != "close" || s.Columns[1].Type.ID != TypeFloat64 {
		t.Fatalf("schema %+v", s.Columns)
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 232, Bytes: 360, Rows: 3, BaseRowID: math.MaxUint64, Min: 20455, Max: 20459, Sorted: true})
	eqSlice(t, "date", col[int32](t, b, 0), []int32{20455, 20458, 20459})
	eqSlice(t, "close", col[float64](t, b, 1), []float64{101.25, 102.5, 101.75})
}

func TestFixtureNoPrimary(t *testing.T) {
	r, b := readOnly(t, "no_primary.acta")
	s := r.Schema()
	if s.Primary != 0 || string(r.fh.pro.FileID[:]) != "ACTA-NO-PRIMARY!" {
		t.Fatalf("primary %d", s.Primary)
	}
	if s.Columns[0].Type.ID != TypeUTF8 || s.Columns[1].Type.ID != TypeInt64 {
		t.Fatalf("schema %+v", s.Columns)
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 232, Bytes: 408, Rows: 3, BaseRowID: math.MaxUint64})
	eqSlice(t, "event", strs(t, b, 0, false), []string{"alpha", "beta", "gamma"})
	eqSlice(t, "value", col[int64](t, b, 1), []int64{10, 20, 30})
	if _, err := r.Scan(ScanOptions{Range: &PrimaryRange{0, 1}}); err == nil {
		t.Fatal("range scan accepted without a primary column")
	}
}

func TestFixtureTimezone(t *testing.T) {
	r, b := readOnly(t, "timezone.acta")
	s := r.Schema()
	want := Type{ID: TypeTimestamp64, Unit: Millisecond, TZMode: TZIANA, TZName: "Europe/Berlin"}
	if s.Columns[0].Type != want || s.Columns[1].Type.ID != TypeInt64 || string(r.fh.pro.FileID[:]) != "ACTA-TIMEZONE!!!" {
		t.Fatalf("schema %+v", s.Columns)
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 256, Bytes: 352, Rows: 3, BaseRowID: math.MaxUint64, Min: 1767340800000, Max: 1767344400000, Sorted: true})
	eqSlice(t, "time", col[int64](t, b, 0), []int64{1767340800000, 1767342600000, 1767344400000})
	eqSlice(t, "value", col[int64](t, b, 1), []int64{101, 102, 103})
}

func TestFixtureTaxi(t *testing.T) {
	r, b := readOnly(t, "nyc_taxi_3_rows.acta")
	s := r.Schema()
	if string(r.fh.pro.FileID[:]) != "ACTA-TAXI-3ROWS!" || !r.RowIDs() || s.Primary != 7 || len(s.Columns) != 16 {
		t.Fatalf("file %q rowids %v primary %d cols %d", r.fh.pro.FileID, r.RowIDs(), s.Primary, len(s.Columns))
	}
	types := []Type{Of(TypeBool), Of(TypeInt32), Of(TypeUint32), Of(TypeInt64), Of(TypeFloat64),
		{ID: TypeDecimal64, Precision: 18, Scale: 2}, {ID: TypeTimestamp64, Unit: Microsecond, TZMode: TZNaive},
		Of(TypeUTF8), Of(TypeCategorical), Of(TypeBinary), {ID: TypeFixedBinary, Width: 16}, Of(TypeBool),
		{ID: TypeTimestamp64, Unit: Microsecond, TZMode: TZNaive}, Of(TypeUint64), Of(TypeFloat64), Of(TypeBool)}
	names := []string{"stored_and_forwarded", "zone_delta", "pickup_zone", "passenger_count", "trip_distance",
		"fare_cents", "pickup_time", "route", "payment", "route_key", "trip_id", "passenger_validity",
		"regular_sensor_time", "monotonic_counter", "smooth_sensor", "sparse_validity"}
	for i, c := range s.Columns {
		if c.ID != uint32(i+1) || c.Name != names[i] || c.Type != types[i] || c.Nullable != (i == 3) {
			t.Fatalf("column %d: %+v", i, c)
		}
	}
	checkInfo(t, r.Blocks()[0], BlockInfo{Seq: 1, Offset: 856, Bytes: 2008, Rows: 3, BaseRowID: 0, Min: 1767227644000000, Max: 1767229026000000})
	eqSlice(t, "c1", col[bool](t, b, 0), []bool{false, false, false})
	eqSlice(t, "c2", col[int32](t, b, 1), []int32{-1, -1, 194})
	eqSlice(t, "c3", col[uint32](t, b, 2), []uint32{239, 163, 43})
	eqSlice(t, "c4", col[int64](t, b, 3), []int64{1, 0, 0})
	eqSlice(t, "c5", col[float64](t, b, 4), []float64{0.97, 0.9, 1.4})
	eqSlice(t, "c6", col[int64](t, b, 5), []int64{720, 790, 1070})
	eqSlice(t, "c7", col[int64](t, b, 6), []int64{1767228844000000, 1767227644000000, 1767229026000000})
	eqSlice(t, "c8", strs(t, b, 7, false), []string{"zone:239->zone:238", "zone:163->zone:162", "zone:43->zone:237"})
	eqSlice(t, "c9", strs(t, b, 8, false), []string{"credit_card", "cash", "credit_card"})
	eqSlice(t, "c10", strs(t, b, 9, true), []string{"ef000000ee00000001", "a3000000a200000002", "2b000000ed00000001"})
	eqSlice(t, "c11", strs(t, b, 10, true), []string{"4ff64384c5e171e154cd3f6a63d9bdd6", "d8334a1b4071932f75b5bc0b2948113f", "4d97ac7fc5767286b2afeb64d7397dd6"})
	eqSlice(t, "c12", col[bool](t, b, 11), []bool{true, true, true})
	eqSlice(t, "c13", col[int64](t, b, 12), []int64{1700000002000000, 1700000003000000, 1700000004000000})
	eqSlice(t, "c14", col[uint64](t, b, 13), []uint64{2, 3, 4})
	eqSlice(t, "c15", col[float64](t, b, 14), []float64{0.013989386228953918, 0.10332694225775996, 0.18895417315694527})
	eqSlice(t, "c16", col[bool](t, b, 15), []bool{false, true, true})

	// An unsorted block keeps row order under a range filter.
	sc, err := r.Scan(ScanOptions{Columns: []string{"route"}, Range: &PrimaryRange{1767228844000000, 1767229026000001}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sc.Next()
	if err != nil {
		t.Fatal(err)
	}
	eqSlice(t, "filtered route", strs(t, got, 0, false), []string{"zone:239->zone:238", "zone:43->zone:237"})
}
