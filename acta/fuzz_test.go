package acta

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// FuzzSalvage salvages arbitrary bytes, with and without a schema source:
// no panic; the head, the kept frames and the skipped ranges tile the input
// in order; a report is lossless only when all it skipped is an interrupted
// tail; and whatever Salvage writes validates fully and holds each kept
// frame's payload bit for bit.
func FuzzSalvage(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	base := seeds[len(seeds)-1]
	mid := append([]byte(nil), base...)
	mid[len(mid)-100] ^= 0x10 // damage in the last frame
	f.Add(mid)
	f.Add(append(append([]byte(nil), base[:300]...), base...)) // a torn copy before a whole file
	dir := f.TempDir()
	donor := filepath.Join(dir, "donor.acta")
	if err := os.WriteFile(donor, base, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "salvage.acta")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, opts := range []SalvageOptions{{Limits: tightLimits}, {Limits: tightLimits, SchemaFrom: donor}} {
			rep, err := PlanSalvage(path, opts)
			if err != nil {
				checkSalvageError(t, err)
				continue
			}
			checkTiling(t, rep, data)
			out := filepath.Join(dir, "out.acta")
			os.Remove(out)
			rep, err = Salvage(path, out, opts)
			if err != nil {
				checkSalvageError(t, err)
				continue
			}
			checkTiling(t, rep, data)
			if err := ValidateWithLimits(out, ValidateFull, tightLimits); err != nil {
				t.Fatalf("salvaged file does not validate: %v", err)
			}
			written, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range rep.Blocks {
				hl := int64(le.Uint32(data[b.Offset+16:]))
				lo, hi := prefixSize+hl, b.Bytes-trailerSize
				if string(written[b.NewOffset+lo:b.NewOffset+hi]) != string(data[b.Offset+lo:b.Offset+hi]) {
					t.Fatalf("block %d payload changed", b.Seq)
				}
			}
		}
	})
}

// checkSalvageError accepts the refusals salvage documents and nothing else.
func checkSalvageError(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLimit) || errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrUnsupported) {
		if strings.Contains(err.Error(), "BUG") {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("unexpected salvage error: %v", err)
}

// checkTiling checks that the head, kept frames and skipped ranges cover
// [0, len(data)) in order without overlap.
func checkTiling(t *testing.T, rep *SalvageReport, data []byte) {
	t.Helper()
	if rep.Size != int64(len(data)) {
		t.Fatalf("report size %d, input %d", rep.Size, len(data))
	}
	type span struct {
		lo, hi int64
		what   string
	}
	var spans []span
	if rep.HeadFrom == "" {
		spans = append(spans, span{0, rep.HeadSize, "head"})
	} else if len(rep.Skipped) == 0 || rep.Skipped[0].Kind != SkipHead {
		t.Fatalf("replaced head without a head range: %+v", rep.Skipped)
	} else if rep.Skipped[0].Offset == prologueSize {
		spans = append(spans, span{0, prologueSize, "own prologue"})
	}
	for _, b := range rep.Blocks {
		spans = append(spans, span{b.Offset, b.Offset + b.Bytes, fmt.Sprintf("block %d", b.Seq)})
	}
	lossless := true
	for _, s := range rep.Skipped {
		spans = append(spans, span{s.Offset, s.End, "skipped " + s.Kind.String()})
		lossless = lossless && s.Kind == SkipIncompleteTail
	}
	if lossless != rep.Lossless() {
		t.Fatalf("Lossless() %v for %+v", rep.Lossless(), rep.Skipped)
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	at := int64(0)
	for _, s := range spans {
		if s.lo != at || s.hi < s.lo {
			t.Fatalf("%s covers [%d, %d), expected to start at %d: %+v", s.what, s.lo, s.hi, at, rep)
		}
		at = s.hi
	}
	if at != rep.Size {
		t.Fatalf("coverage ends at %d of %d: %+v", at, rep.Size, rep)
	}
}
