package acta

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// salvageFixture is a written file and what each of its blocks holds.
type salvageFixture struct {
	path   string
	data   []byte
	blocks []BlockInfo
	rows   [][]int64   // timestamps per block
	vals   [][]float64 // values per block
}

// writeSalvageFixture writes blocks of distinct sizes (so that a frame
// starting at the wrong offset cannot pass for another), with NaN payloads
// among the values.
func writeSalvageFixture(t testing.TB, dir string, opts WriterOptions, sizes ...int) salvageFixture {
	t.Helper()
	s := tsSchema(t)
	fx := salvageFixture{path: filepath.Join(dir, fmt.Sprintf("src-%d.acta", len(sizes)))}
	w, err := Create(fx.path, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(1700000000000)
	for bi, n := range sizes {
		ts, vs := make([]int64, n), make([]float64, n)
		for i := range ts {
			ts[i] = next
			next += 15000 + int64(i%7)
			vs[i] = float64(bi*1000+i) / 4
			if i%5 == 3 {
				vs[i] = math.Float64frombits(0x7ff0000000000002) // Prometheus stale marker
			}
		}
		if err := w.Append(tsBatch(s, ts, vs)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fx.rows, fx.vals = append(fx.rows, ts), append(fx.vals, vs)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	fx.blocks = append([]BlockInfo(nil), r.Blocks()...)
	r.Close()
	if fx.data, err = os.ReadFile(fx.path); err != nil {
		t.Fatal(err)
	}
	return fx
}

// end is the offset after block i.
func (fx salvageFixture) end(i int) int64 { return fx.blocks[i].Offset + fx.blocks[i].Bytes }

// checkKept checks that rep kept exactly the original blocks want (indexes
// into fx.blocks), in order, renumbered 1..n.
func checkKept(t *testing.T, fx salvageFixture, rep *SalvageReport, want []int) {
	t.Helper()
	if len(rep.Blocks) != len(want) {
		t.Fatalf("kept %d blocks %+v, want originals %v", len(rep.Blocks), rep.Blocks, want)
	}
	var rows int64
	for i, k := range want {
		b, o := rep.Blocks[i], fx.blocks[k]
		if b.Offset != o.Offset || b.Bytes != o.Bytes || b.Seq != o.Seq || b.Rows != o.Rows || b.NewSeq != uint64(i+1) {
			t.Fatalf("kept block %d = %+v, want original block %d %+v as sequence %d", i, b, k, o, i+1)
		}
		rows += int64(o.Rows)
	}
	if rep.Rows != rows {
		t.Fatalf("report counts %d rows, kept blocks hold %d", rep.Rows, rows)
	}
}

// checkOutput checks the salvaged file: it validates fully, its head is the
// input's, and each kept frame is the original bit for bit but for the
// renumbered sequence (and base row ID) and the CRCs covering them, and
// decodes to the original rows (float bits included).
func checkOutput(t *testing.T, fx salvageFixture, rep *SalvageReport, want []int, rowIDs bool) {
	t.Helper()
	if err := Validate(rep.Out, ValidateFull); err != nil {
		t.Fatalf("salvaged file: %v", err)
	}
	out, err := os.ReadFile(rep.Out)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) != rep.OutSize {
		t.Fatalf("output is %d bytes, report says %d", len(out), rep.OutSize)
	}
	if rep.HeadFrom == "" && !bytes.Equal(out[:rep.HeadSize], fx.data[:rep.HeadSize]) {
		t.Fatal("the head was not copied bit for bit")
	}
	r, err := Open(rep.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Blocks()) != len(want) {
		t.Fatalf("output has %d blocks, want %d", len(r.Blocks()), len(want))
	}
	base := uint64(0)
	for i, k := range want {
		b, o := rep.Blocks[i], fx.blocks[k]
		got := out[b.NewOffset : b.NewOffset+b.Bytes]
		orig := fx.data[o.Offset : o.Offset+o.Bytes]
		hl := int64(le.Uint32(orig[16:]))
		same := func(what string, lo, hi int64) {
			if !bytes.Equal(got[lo:hi], orig[lo:hi]) {
				t.Fatalf("block %d (original %d): %s [%d, %d) differs", i, k, what, lo, hi)
			}
		}
		same("prefix", 0, 32)
		if rowIDs {
			same("block header", prefixSize, prefixSize+8)
			same("block header", prefixSize+16, prefixSize+hl)
			if le.Uint64(got[prefixSize+8:]) != base {
				t.Fatalf("block %d base row ID %d, want %d", i, le.Uint64(got[prefixSize+8:]), base)
			}
		} else {
			same("header", prefixSize, prefixSize+hl)
		}
		same("payload", prefixSize+hl, o.Bytes-trailerSize)
		same("trailer length", o.Bytes-trailerSize, o.Bytes-trailerSize+8)
		same("commit magic", o.Bytes-8, o.Bytes)
		if le.Uint64(got[32:]) != uint64(i+1) {
			t.Fatalf("block %d has sequence %d", i, le.Uint64(got[32:]))
		}
		batch, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		eqSlice(t, fmt.Sprintf("block %d timestamps", i), col[int64](t, batch, 0), fx.rows[k])
		gv := col[float64](t, batch, 1)
		for j, v := range fx.vals[k] {
			if math.Float64bits(gv[j]) != math.Float64bits(v) {
				t.Fatalf("block %d row %d value bits %#x, want %#x", i, j, math.Float64bits(gv[j]), math.Float64bits(v))
			}
		}
		base += uint64(o.Rows)
	}
}

func salvageTo(t *testing.T, path string, opts SalvageOptions) *SalvageReport {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.acta")
	rep, err := Salvage(path, out, opts)
	if err != nil {
		t.Fatalf("salvage: %v", err)
	}
	return rep
}

func eqSkipped(t *testing.T, what string, got []SkippedRange, want ...SkippedRange) {
	t.Helper()
	strip := func(s []SkippedRange) []SkippedRange {
		out := make([]SkippedRange, len(s))
		for i, r := range s {
			r.Reason = ""
			out[i] = r
		}
		return out
	}
	if !reflect.DeepEqual(strip(got), strip(want)) {
		t.Fatalf("%s: skipped %+v, want %+v", what, got, want)
	}
	for _, r := range got {
		if r.Reason == "" {
			t.Fatalf("%s: range %+v has no reason", what, r)
		}
	}
}

// TestSalvageDamageInEveryFrame damages each data frame in turn, in its
// prefix, header, payload and trailer, and salvages: every other block
// comes back bit-exact, the damaged one does not, and the one skipped
// range is exactly the damaged frame, naming its sequence as lost. With
// row IDs on, the later blocks' base row IDs are renumbered.
func TestSalvageDamageInEveryFrame(t *testing.T) {
	for _, rowIDs := range []bool{false, true} {
		fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{RowIDs: rowIDs, Encoding: EncodingAdaptive, Codec: CodecZstd, Statistics: StatsMinMax},
			3, 130, 17, 64, 200, 9)
		for k, b := range fx.blocks {
			hl := int64(le.Uint32(fx.data[b.Offset+16:]))
			for _, at := range []struct {
				name string
				off  int64
			}{
				{"prefix magic", 0}, {"prefix type", 8}, {"prefix payload length", 24}, {"prefix sequence", 32}, {"prefix CRC", 44},
				{"header row count", prefixSize + 16}, {"header column table", prefixSize + blockHeaderSize + 4},
				{"first payload byte", prefixSize + hl}, {"last payload byte", b.Bytes - trailerSize - 1},
				{"trailer length", b.Bytes - trailerSize}, {"trailer sequence", b.Bytes - 24}, {"trailer body CRC", b.Bytes - 16},
				{"trailer CRC", b.Bytes - 12}, {"commit magic", b.Bytes - 1},
			} {
				t.Run(fmt.Sprintf("rowIDs=%v/block %d/%s", rowIDs, k+1, at.name), func(t *testing.T) {
					bad := append([]byte(nil), fx.data...)
					bad[b.Offset+at.off] ^= 0x21
					rep := salvageTo(t, writeFile(t, bad), SalvageOptions{})
					var want []int
					for i := range fx.blocks {
						if i != k {
							want = append(want, i)
						}
					}
					checkKept(t, fx, rep, want)
					lostTo := b.Seq
					if k == len(fx.blocks)-1 {
						lostTo = 0 // at the end: how many frames were lost is unknown
					}
					eqSkipped(t, at.name, rep.Skipped, SkippedRange{Offset: b.Offset, End: fx.end(k), Kind: SkipCorrupt, LostFrom: b.Seq, LostTo: lostTo})
					if rep.Lossless() || rep.Intact() {
						t.Fatal("a report with a damaged frame says lossless")
					}
					checkOutput(t, fx, rep, want, rowIDs)
				})
			}
		}
	}
}

// TestSalvageEveryByte flips every byte after the head, one at a time, and
// plans a salvage: exactly the frame holding the byte is skipped, as one
// range of exactly its extent, and every other block is kept.
func TestSalvageEveryByte(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{Encoding: EncodingAdaptive}, 2, 5, 3)
	path := filepath.Join(t.TempDir(), "f.acta")
	for i := fx.blocks[0].Offset; i < int64(len(fx.data)); i++ {
		k := 0
		for fx.end(k) <= i {
			k++
		}
		bad := append([]byte(nil), fx.data...)
		bad[i] ^= 0x01
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := PlanSalvage(path, SalvageOptions{})
		if err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		var want []int
		for j := range fx.blocks {
			if j != k {
				want = append(want, j)
			}
		}
		checkKept(t, fx, rep, want)
		lostTo := fx.blocks[k].Seq
		if k == len(fx.blocks)-1 {
			lostTo = 0
		}
		eqSkipped(t, fmt.Sprintf("byte %d", i), rep.Skipped,
			SkippedRange{Offset: fx.blocks[k].Offset, End: fx.end(k), Kind: SkipCorrupt, LostFrom: fx.blocks[k].Seq, LostTo: lostTo})
	}
}

// TestSalvageSpanAndLostPage: damage across two frames is one range naming
// both; a lost 4 KiB page (bytes gone, later frames shifted) inside a large
// frame leaves that frame's prefix intact while the next frame starts
// before the end it declares, and the scan still finds it.
func TestSalvageSpanAndLostPage(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 10, 1000, 20, 30, 600)
	// Zero from the middle of block 2 to the middle of block 3.
	bad := append([]byte(nil), fx.data...)
	for i := fx.blocks[1].Offset + 100; i < fx.blocks[2].Offset+50; i++ {
		bad[i] = 0
	}
	rep := salvageTo(t, writeFile(t, bad), SalvageOptions{})
	checkKept(t, fx, rep, []int{0, 3, 4})
	eqSkipped(t, "span", rep.Skipped, SkippedRange{Offset: fx.blocks[1].Offset, End: fx.end(2), Kind: SkipCorrupt, LostFrom: 2, LostTo: 3})
	checkOutput(t, fx, rep, []int{0, 3, 4}, false)

	if fx.blocks[1].Bytes < 4096+1024 {
		t.Fatalf("block 2 is %d bytes, too small for a lost page", fx.blocks[1].Bytes)
	}
	cut := fx.blocks[1].Offset + 512
	lost := append(append([]byte(nil), fx.data[:cut]...), fx.data[cut+4096:]...)
	if fx.end(1) > int64(len(lost)) {
		t.Fatal("block 2's declared end must fall inside the shortened file")
	}
	rep = salvageTo(t, writeFile(t, lost), SalvageOptions{})
	if len(rep.Blocks) != 4 || rep.Blocks[1].Seq != 3 || rep.Blocks[1].Offset != fx.blocks[2].Offset-4096 || rep.Blocks[3].Seq != 5 {
		t.Fatalf("lost page: kept %+v", rep.Blocks)
	}
	eqSkipped(t, "lost page", rep.Skipped, SkippedRange{Offset: fx.blocks[1].Offset, End: fx.end(1) - 4096, Kind: SkipCorrupt, LostFrom: 2, LostTo: 2})
	if err := Validate(rep.Out, ValidateFull); err != nil {
		t.Fatal(err)
	}
}

// TestSalvageTails: an interrupted final frame alone is cut like repair
// does and the report is lossless (the output is the repaired file, byte
// for byte); damage plus a torn tail gives two ranges and is lossy; damage
// in the final frame is not a tail.
func TestSalvageTails(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 4, 6, 8)
	last := fx.blocks[2]
	for _, cut := range []int64{last.Offset + 7, last.Offset + prefixSize, last.Offset + last.Bytes - 1} {
		rep := salvageTo(t, writeFile(t, fx.data[:cut]), SalvageOptions{})
		checkKept(t, fx, rep, []int{0, 1})
		eqSkipped(t, fmt.Sprintf("cut %d", cut), rep.Skipped, SkippedRange{Offset: last.Offset, End: cut, Kind: SkipIncompleteTail})
		if !rep.Lossless() || rep.Intact() {
			t.Fatalf("cut %d: lossless %v intact %v", cut, rep.Lossless(), rep.Intact())
		}
		out, _ := os.ReadFile(rep.Out)
		if !bytes.Equal(out, fx.data[:last.Offset]) {
			t.Fatalf("cut %d: output is not the file up to its last complete frame", cut)
		}
	}
	bad := append([]byte(nil), fx.data[:last.Offset+60]...)
	bad[fx.blocks[0].Offset+70] ^= 0xff
	rep := salvageTo(t, writeFile(t, bad), SalvageOptions{})
	checkKept(t, fx, rep, []int{1})
	eqSkipped(t, "damage and tail", rep.Skipped,
		SkippedRange{Offset: fx.blocks[0].Offset, End: fx.end(0), Kind: SkipCorrupt, LostFrom: 1, LostTo: 1},
		SkippedRange{Offset: last.Offset, End: last.Offset + 60, Kind: SkipIncompleteTail})
	if rep.Lossless() {
		t.Fatal("damage reported lossless")
	}
	// A complete final frame with a bad body CRC is damage, not a tail.
	bad = append([]byte(nil), fx.data...)
	bad[last.Offset+last.Bytes-trailerSize-1] ^= 1
	rep = salvageTo(t, writeFile(t, bad), SalvageOptions{})
	eqSkipped(t, "damaged final frame", rep.Skipped, SkippedRange{Offset: last.Offset, End: last.Offset + last.Bytes, Kind: SkipCorrupt, LostFrom: 3})
	if rep.Lossless() {
		t.Fatal("a damaged final frame reported lossless")
	}
}

// TestSalvageHead: a damaged prologue or schema frame needs a schema from
// elsewhere; with one from a sibling file every block comes back. A schema
// no block checks against salvages nothing.
func TestSalvageHead(t *testing.T) {
	dir := t.TempDir()
	fx := writeSalvageFixture(t, dir, WriterOptions{RowIDs: true}, 4, 6, 8)
	donor := writeSalvageFixture(t, dir, WriterOptions{RowIDs: true}, 1)
	first := fx.blocks[0].Offset
	r, _ := Open(fx.path)
	id := r.FileID()
	r.Close()
	for _, tc := range []struct {
		name string
		at   int64
		from int64 // where the head range starts
	}{
		{"prologue", 20, 0},
		{"schema frame header", schemaFrameOffset + prefixSize + 2, schemaFrameOffset},
		{"schema frame payload", first - trailerSize - 3, schemaFrameOffset},
	} {
		bad := append([]byte(nil), fx.data...)
		bad[tc.at] ^= 0x40
		path := writeFile(t, bad)
		_, err := PlanSalvage(path, SalvageOptions{})
		if !errors.Is(err, ErrSalvageNeedsSchema) || !IsCorruption(err) {
			t.Fatalf("%s: without a schema: %v", tc.name, err)
		}
		if _, err := Salvage(path, filepath.Join(t.TempDir(), "x.acta"), SalvageOptions{}); !errors.Is(err, ErrSalvageNeedsSchema) {
			t.Fatalf("%s: salvage without a schema: %v", tc.name, err)
		}
		rep := salvageTo(t, path, SalvageOptions{SchemaFrom: donor.path})
		checkKept(t, fx, rep, []int{0, 1, 2})
		eqSkipped(t, tc.name, rep.Skipped, SkippedRange{Offset: tc.from, End: first, Kind: SkipHead})
		if rep.HeadFrom != donor.path || rep.Lossless() {
			t.Fatalf("%s: head from %q, lossless %v", tc.name, rep.HeadFrom, rep.Lossless())
		}
		checkOutput(t, fx, rep, []int{0, 1, 2}, true)
		out, _ := os.ReadFile(rep.Out)
		if !bytes.Equal(out[prologueSize:rep.HeadSize], donor.data[prologueSize:rep.HeadSize]) {
			t.Fatalf("%s: the schema frame is not the donor's", tc.name)
		}
		r, _ := Open(rep.Out)
		if keep := tc.from > 0; (r.FileID() == id) != keep {
			t.Fatalf("%s: file ID kept %v, want %v", tc.name, r.FileID() == id, keep)
		}
		r.Close()
	}
	// A donor of another schema confirms no block: nothing is written.
	other, err := NewSchema(9, []Column{{ID: 1, Name: "t", Type: Timestamp(Millisecond)}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "other.acta")
	w, err := Create(wrong, other, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Finish()
	bad := append([]byte(nil), fx.data...)
	bad[20] ^= 0x40
	out := filepath.Join(t.TempDir(), "x.acta")
	if _, err := Salvage(writeFile(t, bad), out, SalvageOptions{SchemaFrom: wrong}); !errors.Is(err, ErrSalvageNeedsSchema) {
		t.Fatalf("wrong donor: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("wrong donor left %s: %v", out, err)
	}
}

// TestSalvageSequenceJump: frames missing without any damaged byte (a
// frame cut out whole) are reported as a zero-length range naming them;
// the renumbered output validates.
func TestSalvageSequenceJump(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 4, 6, 8, 2)
	cut := append(append([]byte(nil), fx.data[:fx.blocks[1].Offset]...), fx.data[fx.end(2):]...)
	rep := salvageTo(t, writeFile(t, cut), SalvageOptions{})
	at := fx.blocks[1].Offset
	eqSkipped(t, "jump", rep.Skipped, SkippedRange{Offset: at, End: at, Kind: SkipCorrupt, LostFrom: 2, LostTo: 3})
	if rep.Lossless() || len(rep.Blocks) != 2 || rep.Blocks[1].Seq != 4 || rep.Blocks[1].NewSeq != 2 {
		t.Fatalf("jump: %+v", rep)
	}
	if err := Validate(rep.Out, ValidateFull); err != nil {
		t.Fatal(err)
	}
	// A frame repeated (sequence 2 twice): the copy is skipped, nothing is
	// known lost, and the report is still not lossless.
	dup := append(append(append([]byte(nil), fx.data[:fx.end(1)]...), fx.data[fx.blocks[1].Offset:fx.end(1)]...), fx.data[fx.end(1):]...)
	rep = salvageTo(t, writeFile(t, dup), SalvageOptions{})
	n := fx.blocks[1].Bytes
	for i, want := range []struct {
		seq uint64
		off int64
	}{{1, fx.blocks[0].Offset}, {2, fx.blocks[1].Offset}, {3, fx.blocks[2].Offset + n}, {4, fx.blocks[3].Offset + n}} {
		if i >= len(rep.Blocks) || rep.Blocks[i].Seq != want.seq || rep.Blocks[i].Offset != want.off || rep.Blocks[i].NewSeq != want.seq {
			t.Fatalf("repeated frame: kept %+v, want sequence %d at %d as entry %d", rep.Blocks, want.seq, want.off, i)
		}
	}
	if len(rep.Blocks) != 4 {
		t.Fatalf("repeated frame: kept %d blocks", len(rep.Blocks))
	}
	eqSkipped(t, "repeated frame", rep.Skipped, SkippedRange{Offset: fx.end(1), End: fx.end(1) + fx.blocks[1].Bytes, Kind: SkipCorrupt})
	if rep.Lossless() {
		t.Fatal("a repeated frame reported lossless")
	}
}

// TestSalvageIntactAndRefusals: an intact file plans as intact and
// salvages to an identical copy; an existing output is never replaced; a
// file of another version is unsupported, not salvaged.
func TestSalvageIntactAndRefusals(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 4, 6)
	rep, err := PlanSalvage(fx.path, SalvageOptions{})
	if err != nil || !rep.Intact() || !rep.Lossless() || len(rep.Blocks) != 2 {
		t.Fatalf("intact: %+v %v", rep, err)
	}
	rep = salvageTo(t, fx.path, SalvageOptions{})
	if out, _ := os.ReadFile(rep.Out); !bytes.Equal(out, fx.data) {
		t.Fatal("an intact file did not salvage to an identical copy")
	}
	exists := filepath.Join(t.TempDir(), "exists.acta")
	os.WriteFile(exists, []byte("keep me"), 0o644)
	if _, err := Salvage(fx.path, exists, SalvageOptions{}); err == nil {
		t.Fatal("salvage replaced an existing file")
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me" {
		t.Fatal("the existing output was changed")
	}
	if _, err := os.Stat(exists + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	v3 := append([]byte(nil), fx.data...)
	le.PutUint16(v3[10:], 3)
	le.PutUint32(v3[prologueCRCOffset:], crc(v3[:prologueCRCOffset]))
	if _, err := PlanSalvage(writeFile(t, v3), SalvageOptions{SchemaFrom: fx.path}); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("v0.3 prologue: %v", err)
	}
}

// TestSalvageDropsUndecodableBlock: a frame whose CRCs all hold but whose
// block breaks a rule only decoding finds (TS_SORTED over decreasing
// timestamps, every CRC recomputed) is not kept, so the salvaged file
// passes full validation.
func TestSalvageDropsUndecodableBlock(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 4, 6, 8)
	bad := append([]byte(nil), fx.data...)
	b := fx.blocks[1]
	// Swap the first two timestamps of block 2 (raw int64 values at the
	// start of its payload), keeping TS_SORTED set, then fix every CRC.
	hl := int64(le.Uint32(bad[b.Offset+16:]))
	p := bad[b.Offset+prefixSize+hl:]
	a, c := le.Uint64(p[0:]), le.Uint64(p[8:])
	le.PutUint64(p[0:], c)
	le.PutUint64(p[8:], a)
	hdr := bad[b.Offset+prefixSize:]
	for j := 0; j < 2; j++ { // stream table: fix the stream CRCs
		sd := hdr[blockHeaderSize+2*colDescSize+j*streamDescSize:]
		off, n := le.Uint64(sd[8:]), le.Uint64(sd[16:])
		le.PutUint32(sd[40:], crc(p[off:off+n]))
	}
	refreshFrame(bad, b.Offset)
	path := writeFile(t, bad)
	if err := Validate(path, ValidateStructural); err != nil {
		t.Fatalf("the edit must keep the structure valid: %v", err)
	}
	rep := salvageTo(t, path, SalvageOptions{})
	checkKept(t, fx, rep, []int{0, 2})
	eqSkipped(t, "undecodable", rep.Skipped, SkippedRange{Offset: b.Offset, End: fx.end(1), Kind: SkipCorrupt, LostFrom: 2, LostTo: 2})
	checkOutput(t, fx, rep, []int{0, 2}, false)
}

// TestSalvageTornFrameAfterMissingOnes: a torn final frame whose sequence
// skips frames is not an interrupted append of the next frame: the range
// is damage, and the report is lossy.
func TestSalvageTornFrameAfterMissingOnes(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 4, 6, 8)
	// Block 1, then the first 100 bytes of block 3 (sequence 3, not 2).
	torn := append(append([]byte(nil), fx.data[:fx.end(0)]...), fx.data[fx.blocks[2].Offset:fx.blocks[2].Offset+100]...)
	rep, err := PlanSalvage(writeFile(t, torn), SalvageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eqSkipped(t, "torn after missing", rep.Skipped, SkippedRange{Offset: fx.end(0), End: fx.end(0) + 100, Kind: SkipCorrupt, LostFrom: 2})
	if rep.Lossless() {
		t.Fatal("reported lossless")
	}
}
