package acta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refreshFrame recomputes the CRCs of the frame at off after its header or
// payload was edited, so that only the semantic rule under test is broken.
func refreshFrame(data []byte, off int64) {
	p := data[off:]
	hl := int(le.Uint32(p[16:]))
	pl := int(le.Uint64(p[24:]))
	le.PutUint32(p[40:], crc(p[prefixSize:prefixSize+hl]))
	le.PutUint32(p[44:], crc(p[:44]))
	body := prefixSize + hl + pl
	putTrailer(p[body:body+trailerSize], p[:body], le.Uint64(p[32:]))
}

// TestMustsOnRead breaks one §8 rule at a time in a valid file, with every
// CRC recomputed, and checks the reader reports corruption naming it.
func TestMustsOnRead(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.acta")
	writeTS(t, base, WriterOptions{RowIDs: true}, []int64{1, 2, 3}, []int64{7, 5, 6})
	data, _ := os.ReadFile(base)
	r, _ := Open(base)
	b1, b2 := r.Blocks()[0].Offset, r.Blocks()[1].Offset
	r.Close()
	h1, h2 := b1+prefixSize, b2+prefixSize
	for _, tc := range []struct {
		name   string
		edit   func(d []byte)
		atOpen bool   // detected by Open, else by ReadBlock/Validate
		want   string // fragment of the reason
	}{
		{"TS_SORTED on unsorted block", func(d []byte) { le.PutUint32(d[h2+56:], blockRowIDs|blockTSSorted) }, false, "TS_SORTED"},
		{"sorted bounds not first/last", func(d []byte) { le.PutUint64(d[h1+24:], 0) }, false, "bounds"},
		{"unsorted bounds not min/max", func(d []byte) { le.PutUint64(d[h2+32:], 99) }, false, "bounds"},
		{"min above max", func(d []byte) { le.PutUint64(d[h1+24:], 50) }, true, "exceeds maximum"},
		{"row-ID chain", func(d []byte) { le.PutUint64(d[h2+8:], 4) }, true, "row-ID chain"},
		{"ROW_IDS flag", func(d []byte) { le.PutUint32(d[h1+56:], blockTSSorted) }, true, "ROW_IDS"},
		{"schema ID", func(d []byte) { le.PutUint64(d[h1:], 2) }, true, "schema ID"},
		{"unknown block flag", func(d []byte) { le.PutUint32(d[h1+56:], blockRowIDs|blockTSSorted|8) }, true, "unknown block flags"},
		{"empty block", func(d []byte) { le.PutUint32(d[h1+16:], 0) }, true, "empty data block"},
		{"column table offset", func(d []byte) { le.PutUint32(d[h1+40:], 72) }, true, "column table offset"},
		{"stream past payload", func(d []byte) { le.PutUint64(d[h1+blockHeaderSize+2*colDescSize+16:], 1<<20) }, true, "outside"},
		{"nulls in non-nullable", func(d []byte) {
			le.PutUint32(d[h1+blockHeaderSize+8:], 1)
			le.PutUint32(d[h1+blockHeaderSize+12:], 2)
		}, true, "not nullable"},
		{"sequence", func(d []byte) {
			le.PutUint64(d[b2+32:], 5)
			le.PutUint64(d[b2+int64(le.Uint64(d[b2+24:]))+int64(le.Uint32(d[b2+16:]))+prefixSize+8:], 5)
		}, true, "sequence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := append([]byte(nil), data...)
			tc.edit(d)
			refreshFrame(d, b1)
			refreshFrame(d, b2)
			path := filepath.Join(dir, "m.acta")
			os.WriteFile(path, d, 0o644)
			r, err := Open(path)
			if tc.atOpen {
				var ce *CorruptionError
				if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.want) || ce.Offset < b1 {
					t.Fatalf("open: %v, want corruption mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer r.Close()
			_, e1 := r.ReadBlock(0)
			_, e2 := r.ReadBlock(1)
			err = errors.Join(e1, e2)
			if !IsCorruption(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read: %v, want corruption mentioning %q", err, tc.want)
			}
			if err := Validate(path, ValidateFull); !IsCorruption(err) {
				t.Fatalf("validate: %v", err)
			}
			if err := Validate(path, ValidateStructural); err != nil {
				t.Fatalf("structural validation should pass: %v", err)
			}
		})
	}
}
