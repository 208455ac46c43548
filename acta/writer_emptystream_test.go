package acta

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// An empty stream (a utf8 column whose values are all "") must still get a
// payload offset of its own (spec §8.2 SHOULD), as the reference writer does.
func TestEmptyStreamHasOwnOffset(t *testing.T) {
	s, err := NewSchema(1, []Column{
		{ID: 1, Name: "s", Type: Of(TypeUTF8)},
		{ID: 2, Name: "n", Type: Of(TypeInt64)},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "e.acta")
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{Schema: s, Rows: 3, Columns: []Array{
		&BytesArray{Offsets: []int{0, 0, 0, 0}},
		&FixedArray[int64]{Values: []int64{7, 8, 9}},
	}}
	if err := w.Append(b); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}

	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := r.Blocks()[0].Offset
	hlen := binary.LittleEndian.Uint32(raw[off+16:])
	plen := binary.LittleEndian.Uint64(raw[off+24:])
	var h blockHeader
	c := newBlockCtx(s, false, ptrLimits(DefaultLimits()))
	if err := c.parseBlockHeader(&h, raw[off+prefixSize:off+prefixSize+int64(hlen)], off+prefixSize, plen, noRowID); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	for i, sd := range h.Streams {
		if j, dup := seen[sd.Off]; dup {
			t.Fatalf("streams %d and %d share payload offset %d", j, i, sd.Off)
		}
		seen[sd.Off] = i
	}
	if len(h.Streams) != 3 {
		t.Fatalf("got %d streams, want 3 (values, lengths, values)", len(h.Streams))
	}
	got, err := r.ReadBlock(0)
	if err != nil {
		t.Fatal(err)
	}
	sa := got.Columns[0].(*BytesArray)
	if sa.Len() != 3 || len(sa.Data) != 0 {
		t.Fatalf("utf8 column: %d rows, %d bytes; want 3 rows of \"\"", sa.Len(), len(sa.Data))
	}
	if n := got.Columns[1].(*FixedArray[int64]).Values; n[0] != 7 || n[1] != 8 || n[2] != 9 {
		t.Fatalf("int64 column = %v, want [7 8 9]", n)
	}
}

func ptrLimits(l Limits) *Limits { return &l }
