package acta

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/acta/internal/encoding"
)

// blockStreams parses the stream descriptors of block i of the file at path.
func blockStreams(t *testing.T, path string, i int) []streamDesc {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := r.Blocks()[i].Offset
	hlen := binary.LittleEndian.Uint32(raw[off+16:])
	plen := binary.LittleEndian.Uint64(raw[off+24:])
	var h blockHeader
	c := newBlockCtx(r.Schema(), r.RowIDs(), ptrLimits(DefaultLimits()))
	if err := c.parseBlockHeader(&h, raw[off+prefixSize:off+prefixSize+int64(hlen)], off+prefixSize, plen, noRowID); err != nil {
		t.Fatal(err)
	}
	return h.Streams
}

// Blocks under CodecMinRows are written without the codec, larger ones with
// it; both read back bit-exactly.
func TestCodecMinRows(t *testing.T) {
	s := tsSchema(t)
	path := filepath.Join(t.TempDir(), "c.acta")
	w, err := Create(path, s, WriterOptions{Codec: CodecZstd, CodecMinRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(n int, t0 int64) ([]int64, []float64) {
		ts, vs := make([]int64, n), make([]float64, n)
		for i := range ts {
			ts[i], vs[i] = t0+int64(i)*15000, 42 // raw constant values: zstd shrinks them
		}
		return ts, vs
	}
	ts1, vs1 := mk(50, 0)
	ts2, vs2 := mk(200, 1e9)
	for _, b := range []*Batch{tsBatch(s, ts1, vs1), tsBatch(s, ts2, vs2)} {
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
	for i, want := range []uint16{encoding.CodecNone, encoding.CodecZstd} {
		for j, sd := range blockStreams(t, path, i) {
			if sd.Codec != want {
				t.Errorf("block %d stream %d: codec %d, want %d", i, j, sd.Codec, want)
			}
		}
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, want := range [][]int64{ts1, ts2} {
		b, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		got := b.Columns[0].(*FixedArray[int64]).Values
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Fatalf("block %d timestamps %d..%d (%d), want %d..%d (%d)", i, got[0], got[len(got)-1], len(got), want[0], want[len(want)-1], len(want))
		}
	}
	if err := Validate(path, ValidateFull); err != nil {
		t.Fatal(err)
	}
}
