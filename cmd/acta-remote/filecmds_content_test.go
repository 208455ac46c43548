package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// quiet runs f with stdout and stderr sent to /dev/null and returns its
// exit code: the sweeps below run the commands thousands of times.
func quiet(t *testing.T, f func() int) int {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	out, errOut := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = null, null
	defer func() { os.Stdout, os.Stderr = out, errOut }()
	return f()
}

// refreshFrame recomputes the header, prefix, body and trailer CRCs of the
// frame at off (Acta v0.2 §6) after its header was edited.
func refreshFrame(d []byte, off int64) {
	le := binary.LittleEndian
	p := d[off:]
	hl, pl := int64(le.Uint32(p[16:])), int64(le.Uint64(p[24:]))
	le.PutUint32(p[40:], crc(p[48:48+hl]))
	le.PutUint32(p[44:], crc(p[:44]))
	body := 48 + hl + pl
	tr := p[body : body+32]
	le.PutUint32(tr[16:], crc(p[:body]))
	c := crc32.Update(0, castagnoli, tr[:20])
	le.PutUint32(tr[20:], crc32.Update(c, castagnoli, tr[24:32]))
}

// dictionaryFile writes a one-block file whose value column uses the
// dictionary layout and returns its path, bytes and the block's offset.
func dictionaryFile(t *testing.T, dir string) (string, []byte, int64) {
	t.Helper()
	s, err := acta.NewSchema(1, []acta.Column{
		{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
		{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dict.acta")
	w, err := acta.Create(path, s, acta.WriterOptions{Encoding: acta.FixedEncoding(acta.LayoutDictionary)})
	if err != nil {
		t.Fatal(err)
	}
	ts, vs := make([]int64, 64), make([]float64, 64)
	for i := range ts {
		ts[i], vs[i] = int64(i)*15000, float64(i%3)
	}
	if err := w.Append(&acta.Batch{Schema: s, Rows: len(ts), Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data, r.Blocks()[0].Offset
}

// TestRawDictionaryIndicesExitUnsupported: dictionary indices must be bit
// packed (§9.2); the reference calls another transform unsupported. The
// commands that decode the block exit 3, the ones that read only frame
// structure exit 0; none exits 1, the code for usage and I/O errors.
func TestRawDictionaryIndicesExitUnsupported(t *testing.T) {
	dir := t.TempDir()
	_, data, off := dictionaryFile(t, dir)
	le := binary.LittleEndian
	hdr := data[off+48:]
	table := int64(le.Uint32(hdr[44:]))
	n := (int64(le.Uint32(hdr[48:])) - table) / 48
	patched := 0
	for i := int64(0); i < n; i++ {
		sd := hdr[table+48*i:]
		if le.Uint16(sd[0:]) == 6 { // indices
			le.PutUint16(sd[2:], 0) // raw transform
			patched++
		}
	}
	if patched == 0 { // FixedEncoding puts both columns in the dictionary layout
		t.Fatal("the test file has no indices stream")
	}
	refreshFrame(data, off)
	bad := filepath.Join(dir, "raw-indices.acta")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func([]string) int
		args []string
		want int
	}{
		{"head", runHead, []string{bad}, exitUnsupported},
		{"head --json", runHead, []string{bad, "--json"}, exitUnsupported},
		{"validate", runValidate, []string{bad}, exitUnsupported},
		{"validate structural", runValidate, []string{bad, "--level", "structural"}, exitOK},
		{"inspect", runInspect, []string{bad}, exitOK},
		{"recover", runRecover, []string{bad}, exitOK},
	} {
		if code := quiet(t, func() int { return tc.run(tc.args) }); code != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.want)
		}
	}
}

// TestFileCommandsContentExitCodes flips every byte of a file (dictionary
// layout, zstd, several blocks) and cuts it at every length, and runs head,
// inspect, validate and recover on each: a refusal caused by the content
// exits 2 or 3, never 1. The unmodified file exits 0 everywhere.
func TestFileCommandsContentExitCodes(t *testing.T) {
	dir := t.TempDir()
	s, err := acta.NewSchema(1, []acta.Column{
		{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
		{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
		{ID: 3, Name: "note", Type: acta.Of(acta.TypeUTF8), Nullable: true},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src.acta")
	w, err := acta.Create(src, s, acta.WriterOptions{Encoding: acta.EncodingAdaptive, Codec: acta.CodecZstd, Statistics: acta.StatsMinMax, RowIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		n := 40
		ts, vs, notes := make([]int64, n), make([]float64, n), &acta.BytesArray{Offsets: []int{0}}
		valid := acta.NewBitmap(n)
		for i := range ts {
			ts[i], vs[i] = int64(b*n+i)*15000, float64(i%4)
			if i%3 != 0 {
				valid.Set(i, true)
				notes.Data = append(notes.Data, "ok"...)
			}
			notes.Offsets = append(notes.Offsets, len(notes.Data))
		}
		notes.Valid = valid
		if err := w.Append(&acta.Batch{Schema: s, Rows: n, Columns: []acta.Array{
			&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}, notes}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	commands := []struct {
		name string
		run  func([]string) int
		args []string
	}{
		{"head", runHead, []string{"-n", "1000"}},
		{"inspect", runInspect, nil},
		{"validate", runValidate, nil},
		{"recover", runRecover, nil},
	}
	path := filepath.Join(dir, "f.acta")
	try := func(what string, b []byte, want func(int) bool) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range commands {
			code := quiet(t, func() int { return c.run(append([]string{path}, c.args...)) })
			if !want(code) {
				t.Fatalf("%s: %s exits %d", what, c.name, code)
			}
		}
	}
	try("unmodified", data, func(c int) bool { return c == exitOK })
	content := func(c int) bool { return c == exitOK || c == exitCorrupt || c == exitUnsupported }
	for i := range data {
		mut := append([]byte(nil), data...)
		mut[i] ^= 0x5a
		try(fmt.Sprintf("byte %d flipped", i), mut, content)
	}
	for n := 0; n < len(data); n++ {
		try(fmt.Sprintf("cut at %d", n), data[:n], content)
	}
}

// TestLimitRefusalExitsUnsupported: a block declaring more rows than the
// reader's limit (CRCs intact) is refused by every command with exit 3.
func TestLimitRefusalExitsUnsupported(t *testing.T) {
	dir := t.TempDir()
	_, data, off := dictionaryFile(t, dir)
	binary.LittleEndian.PutUint32(data[off+48+16:], 1<<25) // row count, above DefaultLimits' 1<<24
	refreshFrame(data, off)
	path := filepath.Join(dir, "rows.acta")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func([]string) int{"head": runHead, "inspect": runInspect, "validate": runValidate, "recover": runRecover} {
		if code := quiet(t, func() int { return run([]string{path}) }); code != exitUnsupported {
			t.Errorf("%s: exit %d, want %d", name, code, exitUnsupported)
		}
	}
}
