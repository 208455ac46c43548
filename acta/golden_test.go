package acta

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGoldenFrames: our schema frame encoder reproduces every fixture's
// schema frame byte for byte, and our raw writer reproduces the data frame
// of the fixtures written with plain/raw streams and no statistics.
func TestGoldenFrames(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*.acta"))
	for _, n := range names {
		data, _ := os.ReadFile(n)
		r, err := Open(n)
		if err != nil {
			t.Fatal(err)
		}
		got := encodeSchemaFrame(r.Schema())
		if want := data[prologueSize:r.fh.firstChain().off]; !bytes.Equal(got, want) {
			t.Errorf("%s: schema frame differs:\n got % x\nwant % x", n, got, want)
		}
		r.Close()
	}
	for _, name := range []string{"timezone.acta", "no_primary.acta"} {
		src := fixture(name)
		data, _ := os.ReadFile(src)
		r, _ := Open(src)
		b, err := r.ReadBlock(0)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		w, err := Create(path, r.Schema(), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		ours, _ := os.ReadFile(path)
		off := r.Blocks()[0].Offset
		r.Close()
		if !bytes.Equal(ours[off:], data[off:]) {
			t.Errorf("%s: data frame differs:\n got % x\nwant % x", name, ours[off:], data[off:])
		}
	}
}
