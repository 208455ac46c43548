package acta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files built to break exactly one rule that the reference implementation
// (chengus/Acta rust/) enforces, with every CRC recomputed, so that only the
// rule under test can refuse them; and files in forms the reference does not
// write but a literal reading of the spec allows.

// replaceSchemaFrame returns file with its schema frame rebuilt from header
// and payload (CRCs and trailer computed); the data frames follow unchanged.
func replaceSchemaFrame(t *testing.T, file, header, payload []byte) []byte {
	t.Helper()
	old := int64(le.Uint32(file[schemaFrameOffset+16:])) + int64(le.Uint64(file[schemaFrameOffset+24:])) + frameOverhead
	out := append([]byte(nil), file[:schemaFrameOffset]...)
	out = buildFrame(out, frameSchema, 0, header, payload)
	return append(out, file[schemaFrameOffset+old:]...)
}

// schemaParts returns copies of the schema frame's header and payload.
func schemaParts(file []byte) (header, payload []byte) {
	hl := int64(le.Uint32(file[schemaFrameOffset+16:]))
	pl := int64(le.Uint64(file[schemaFrameOffset+24:]))
	h := file[schemaFrameOffset+prefixSize:][:hl]
	p := file[schemaFrameOffset+prefixSize+hl:][:pl]
	return append([]byte(nil), h...), append([]byte(nil), p...)
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.acta")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantCorruptAt opens path and wants a corruption error at offset at whose
// reason holds frag.
func wantCorruptAt(t *testing.T, path string, at int64, frag string) {
	t.Helper()
	r, err := Open(path)
	if err == nil {
		r.Close()
		t.Fatalf("open accepted the file, want corruption %q at %d", frag, at)
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != at || !strings.Contains(ce.Reason, frag) {
		t.Fatalf("open: %v, want corruption at offset %d mentioning %q", err, at, frag)
	}
	if err := Validate(path, ValidateStructural); !IsCorruption(err) {
		t.Fatalf("validate: %v, want corruption", err)
	}
}

// TestSchemaPayloadBeyondDescriptors: a schema payload longer than its
// column count's descriptors is corrupt (§7), even when the extra bytes are
// a well-formed descriptor; the unmodified rebuild still opens.
func TestSchemaPayloadBeyondDescriptors(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.acta")
	writeTS(t, base, WriterOptions{}, []int64{1, 2, 3})
	file, _ := os.ReadFile(base)
	header, payload := schemaParts(file)
	poff := int64(schemaFrameOffset + prefixSize + len(header))

	same := writeFile(t, replaceSchemaFrame(t, file, header, payload))
	if err := Validate(same, ValidateFull); err != nil {
		t.Fatalf("rebuilt schema frame: %v", err)
	}
	// Eight extra bytes: not padding (each descriptor carries its own).
	extra := append(append([]byte(nil), payload...), 1, 2, 3, 4, 5, 6, 7, 8)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, extra)), poff+int64(len(payload)), "schema descriptors end after")
	// A whole third descriptor while the header still counts two.
	third := append(append([]byte(nil), payload...), payload[:le.Uint32(payload)]...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, third)), poff+int64(len(payload)), "schema descriptors end after")
	// Eight zero bytes are refused alike: they are not any descriptor's padding.
	zeros := append(append([]byte(nil), payload...), make([]byte, 8)...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, zeros)), poff+int64(len(payload)), "schema descriptors end after")
}

// TestSchemaHeaderLength: the schema frame header is exactly 24 bytes (§7);
// the reference refuses a longer one.
func TestSchemaHeaderLength(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.acta")
	writeTS(t, base, WriterOptions{}, []int64{1, 2, 3})
	file, _ := os.ReadFile(base)
	header, payload := schemaParts(file)
	long := append(append([]byte(nil), header...), make([]byte, 8)...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, long, payload)), schemaFrameOffset+16, "schema frame header is 32 bytes, want 24")
}

// rewriteStreams returns file with the data frame at off rebuilt: edit sees
// each stream's descriptor and stored bytes and returns the bytes to store
// (it may change the descriptor's transform, codec, count and transformed
// length). The payload is laid out again, each stream on its own 8-byte
// boundary, and every CRC is recomputed; later frames follow unchanged.
func rewriteStreams(t *testing.T, file []byte, s *Schema, rowIDs bool, off int64, edit func(i int, d *streamDesc, data []byte) []byte) []byte {
	t.Helper()
	p := file[off:]
	hl, pl := int64(le.Uint32(p[16:])), int64(le.Uint64(p[24:]))
	hdr := append([]byte(nil), p[prefixSize:prefixSize+hl]...)
	payload := p[prefixSize+hl : prefixSize+hl+pl]
	var h blockHeader
	ctx := newBlockCtx(s, rowIDs, ptrLimits(DefaultLimits()))
	if err := ctx.parseBlockHeader(&h, hdr, off+prefixSize, uint64(pl), le.Uint64(hdr[8:])); err != nil {
		t.Fatal(err)
	}
	table := blockHeaderSize + colDescSize*len(s.Columns)
	var np []byte
	for i, sd := range h.Streams {
		d := sd
		data := edit(i, &d, append([]byte(nil), payload[sd.Off:sd.Off+sd.Stored]...))
		d.Off, d.Stored, d.CRC = uint64(len(np)), uint64(len(data)), crc(data)
		np = append(np, data...)
		np = appendZeros(np, pad8(len(np))-len(np))
		at := hdr[table+i*streamDescSize:]
		le.PutUint16(at[0:], d.Kind)
		le.PutUint16(at[2:], d.Transform)
		le.PutUint16(at[4:], d.Codec)
		le.PutUint64(at[8:], d.Off)
		le.PutUint64(at[16:], d.Stored)
		le.PutUint64(at[24:], d.RawLen)
		le.PutUint64(at[32:], d.Count)
		le.PutUint32(at[40:], d.CRC)
	}
	out := append([]byte(nil), file[:off]...)
	out = buildFrame(out, frameData, le.Uint64(p[32:]), hdr, np)
	return append(out, file[off+frameOverhead+hl+pl:]...)
}

// readBlock0 opens path and decodes its first block.
func readBlock0(t *testing.T, path string) (*Batch, error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	return r.ReadBlock(0)
}

// TestZstdTrailingBytesInFile: a zstd stream whose stored bytes run past
// its last frame makes the block corrupt (§10), while the frame structure
// and every CRC are intact; a skippable frame in the same place is read.
func TestZstdTrailingBytesInFile(t *testing.T) {
	s := tsSchema(t)
	path := filepath.Join(t.TempDir(), "z.acta")
	w, err := Create(path, s, WriterOptions{Codec: CodecZstd})
	if err != nil {
		t.Fatal(err)
	}
	ts, vs := make([]int64, 1000), make([]float64, 1000)
	for i := range ts {
		ts[i], vs[i] = int64(i)*15000, 42
	}
	if err := w.Append(tsBatch(s, ts, vs)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(path)
	off := int64(len(file)) - int64(le.Uint64(file[len(file)-trailerSize:]))
	zstdStreams := 0
	edited := func(tail []byte) string {
		return writeFile(t, rewriteStreams(t, file, s, false, off, func(i int, d *streamDesc, data []byte) []byte {
			if d.Codec != uint16(CodecZstd) {
				return data
			}
			zstdStreams++
			return append(data, tail...)
		}))
	}
	for _, tail := range [][]byte{{0}, {0, 0, 0, 0}, []byte("trailing"), {0x28, 0xb5, 0x2f, 0xfd}} {
		bad := edited(tail)
		if err := Validate(bad, ValidateStructural); err != nil {
			t.Fatalf("tail % x: structure must stay valid: %v", tail, err)
		}
		_, err := readBlock0(t, bad)
		var ce *CorruptionError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "zstd") {
			t.Fatalf("tail % x: read: %v, want corruption naming zstd", tail, err)
		}
		if err := Validate(bad, ValidateFull); !IsCorruption(err) {
			t.Fatalf("tail % x: full validation: %v", tail, err)
		}
	}
	if zstdStreams == 0 {
		t.Fatal("the test file has no zstd stream")
	}
	ok := edited([]byte{0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 'o', 'k'})
	b, err := readBlock0(t, ok)
	if err != nil {
		t.Fatalf("skippable frame after the data: %v", err)
	}
	eqSlice(t, "timestamps", col[int64](t, b, 0), ts)
	eqSlice(t, "values", col[float64](t, b, 1), vs)
}

// TestOneValueDeltaBothForms: a one-value delta stream is read as the first
// value alone (what we and the reference write) and as the first value
// followed by a bit-packed stream of zero deltas, its single width byte 00
// (§9.4 with §9.2 read literally). Anything else after the value is corrupt.
func TestOneValueDeltaBothForms(t *testing.T) {
	s, err := NewSchema(1, []Column{
		{ID: 1, Name: "t", Type: Timestamp(Millisecond)},
		{ID: 2, Name: "v", Type: Of(TypeInt32)},
	}, "t")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.acta")
	w, err := Create(path, s, WriterOptions{Encoding: FixedEncoding(TransformDelta)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(&Batch{Schema: s, Rows: 1, Columns: []Array{
		&FixedArray[int64]{Values: []int64{1700000000123}}, &FixedArray[int32]{Values: []int32{-7}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	// What we write: the first value alone, at its canonical width.
	sds := blockStreams(t, path, 0)
	if len(sds) != 2 {
		t.Fatalf("%d streams, want 2", len(sds))
	}
	for i, want := range []uint64{8, 4} {
		if sds[i].Transform != uint16(TransformDelta) || sds[i].Stored != want || sds[i].RawLen != want || sds[i].Count != 1 {
			t.Fatalf("stream %d: %+v, want a %d-byte one-value delta stream", i, sds[i], want)
		}
	}
	file, _ := os.ReadFile(path)
	off := int64(len(file)) - int64(le.Uint64(file[len(file)-trailerSize:]))
	with := func(tail ...byte) string {
		return writeFile(t, rewriteStreams(t, file, s, false, off, func(i int, d *streamDesc, data []byte) []byte {
			data = append(data, tail...)
			d.RawLen = uint64(len(data))
			return data
		}))
	}
	check := func(what, path string) {
		t.Helper()
		b, err := readBlock0(t, path)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		eqSlice(t, what+" t", col[int64](t, b, 0), []int64{1700000000123})
		eqSlice(t, what+" v", col[int32](t, b, 1), []int32{-7})
		if err := Validate(path, ValidateFull); err != nil {
			t.Fatalf("%s: validate: %v", what, err)
		}
	}
	check("first value alone", path)
	check("first value and width byte 00", with(0))
	for _, tail := range [][]byte{{5}, {0, 0}, {0, 1}, {1, 0}} {
		_, err := readBlock0(t, with(tail...))
		if !IsCorruption(err) || !strings.Contains(err.Error(), "delta") {
			t.Fatalf("tail % x: %v, want corruption naming delta", tail, err)
		}
	}
}
