package acta

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds are the v0.2 fixtures plus files our writer produced.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	names, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "*.acta"))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	dir := f.TempDir()
	p := filepath.Join(dir, "w.acta")
	writeTS(f, p, WriterOptions{RowIDs: true}, []int64{1, 2, 3}, []int64{9, 4})
	b, _ := os.ReadFile(p)
	return append(seeds, b)
}

// FuzzReader opens arbitrary bytes under tight limits and reads everything:
// no panic, and no read beyond what the limits allow.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.acta")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		scanAll(path)
		ValidateWithLimits(path, ValidateFull, tightLimits)
		InspectRecovery(path)
	})
}

// FuzzRefresh appends arbitrary bytes to a valid file a Reader and a Tail
// already follow: no panic, and no committed block changes.
func FuzzRefresh(f *testing.F) {
	seeds := fuzzSeeds(f)
	base := seeds[len(seeds)-1]
	f.Add([]byte{})
	f.Add(base[prologueSize+144 : prologueSize+144+100])
	f.Add(base[len(base)-200:])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, extra []byte) {
		path := filepath.Join(dir, "grow.acta")
		if err := os.WriteFile(path, base, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n := len(r.Blocks())
		tail, err := r.Tail(ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fh, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		fh.Write(extra)
		fh.Close()
		for i := 0; i < 4; i++ {
			if b, err := tail.Poll(); b == nil && err == nil {
				break
			}
		}
		r.Refresh()
		if len(r.Blocks()) < n {
			t.Fatalf("blocks went from %d to %d", n, len(r.Blocks()))
		}
	})
}
