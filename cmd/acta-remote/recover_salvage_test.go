package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
)

// writeBlocks writes a float series file of n blocks of rows samples each.
func writeBlocks(t *testing.T, path string, n, rows int) {
	t.Helper()
	s, err := acta.NewSchema(1, []acta.Column{
		{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
		{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	w, err := acta.Create(path, s, acta.WriterOptions{Encoding: acta.EncodingAdaptive})
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(1700000000000)
	for b := 0; b < n; b++ {
		tv, vv := make([]int64, rows), make([]float64, rows)
		for i := range tv {
			tv[i], vv[i] = ts, float64(b*1000+i)
			ts += 15000
		}
		if err := w.Append(&acta.Batch{Schema: s, Rows: rows, Columns: []acta.Array{
			&acta.FixedArray[int64]{Values: tv}, &acta.FixedArray[float64]{Values: vv}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func blocksOf(t *testing.T, path string) []acta.BlockInfo {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return append([]acta.BlockInfo(nil), r.Blocks()...)
}

// TestSalvageFileCommand runs recover --salvage on one file: an intact file
// exits 0 and writes nothing; a damaged block exits 4 (lossy) with a JSON
// report naming exactly its byte range and sequence, and the output holds
// the other blocks; an interrupted tail alone exits 0; a damaged schema
// frame exits 2 until --schema-from names a healthy file; an existing
// output is never replaced.
func TestSalvageFileCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.acta")
	writeBlocks(t, good, 4, 30)
	data, _ := os.ReadFile(good)
	blocks := blocksOf(t, good)

	out, code := capture(t, func() int { return runRecover([]string{"--salvage", good}) })
	if code != exitOK || !strings.Contains(out, "state:     intact") {
		t.Fatalf("intact: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(good + ".salvaged"); !os.IsNotExist(err) {
		t.Fatalf("an intact file got an output: %v", err)
	}

	bad := filepath.Join(dir, "bad.acta")
	mut := append([]byte(nil), data...)
	mut[blocks[1].Offset+blocks[1].Bytes/2] ^= 0x08
	os.WriteFile(bad, mut, 0o644)
	saved := filepath.Join(dir, "saved.acta")
	out, code = capture(t, func() int { return runRecover([]string{"--salvage", bad, "--out", saved, "--json"}) })
	if code != exitLossy {
		t.Fatalf("damaged block: exit %d, want %d\n%s", code, exitLossy, out)
	}
	var res salvageResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	wantSkip := skippedJSON{Offset: blocks[1].Offset, End: blocks[1].Offset + blocks[1].Bytes, Bytes: blocks[1].Bytes, Kind: "corrupt", LostFromSeq: 2, LostToSeq: 2}
	if len(res.Skipped) != 1 {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	gotSkip := res.Skipped[0]
	gotSkip.Reason = ""
	if gotSkip != wantSkip || res.State != stateSalvaged || res.Lossless || res.BlocksKept != 3 || res.RowsKept != 90 ||
		res.Out != saved || res.LostBytes != blocks[1].Bytes || !strings.Contains(res.Skipped[0].Reason, "body CRC32C") {
		t.Fatalf("report %+v", res)
	}
	if err := acta.Validate(saved, acta.ValidateFull); err != nil {
		t.Fatal(err)
	}
	// The output holds blocks 1, 3 and 4 with their original bytes.
	saveData, _ := os.ReadFile(saved)
	for i, k := range []int{0, 2, 3} {
		got := blocksOf(t, saved)[i]
		o := blocks[k]
		hl := int64(binary.LittleEndian.Uint32(data[o.Offset+16:]))
		if !bytes.Equal(saveData[got.Offset+48+hl:got.Offset+got.Bytes-32], data[o.Offset+48+hl:o.Offset+o.Bytes-32]) || got.Min != o.Min || got.Rows != o.Rows {
			t.Fatalf("salvaged block %d is not original block %d", i, k+1)
		}
	}
	if code := quiet(t, func() int { return runRecover([]string{"--salvage", bad, "--out", saved}) }); code != exitError {
		t.Fatalf("existing output: exit %d, want %d", code, exitError)
	}

	torn := filepath.Join(dir, "torn.acta")
	os.WriteFile(torn, data[:len(data)-5], 0o644)
	out, code = capture(t, func() int { return runRecover([]string{"--salvage", torn}) })
	if code != exitOK || !strings.Contains(out, "without loss") || !strings.Contains(out, "incomplete_tail") {
		t.Fatalf("torn tail: exit %d\n%s", code, out)
	}

	head := filepath.Join(dir, "head.acta")
	mut = append([]byte(nil), data...)
	mut[100] ^= 0x01
	os.WriteFile(head, mut, 0o644)
	if code := quiet(t, func() int { return runRecover([]string{"--salvage", head}) }); code != exitCorrupt {
		t.Fatalf("damaged schema frame: exit %d, want %d", code, exitCorrupt)
	}
	out, code = capture(t, func() int { return runRecover([]string{"--salvage", head, "--schema-from", good, "--json"}) })
	res = salvageResult{}
	json.Unmarshal([]byte(out), &res)
	if code != exitLossy || res.HeadFrom != good || res.BlocksKept != 4 || len(res.Skipped) != 1 || res.Skipped[0].Kind != "head" ||
		res.Skipped[0].Offset != 64 || res.Skipped[0].End != blocks[0].Offset {
		t.Fatalf("schema from a sibling: exit %d %+v", code, res)
	}

	for _, args := range [][]string{
		{"--salvage", "--repair", bad},
		{"--out", "x", bad},
		{"--json", bad},
		{"--salvage", "--data-dir", dir, bad},
		{"--salvage", "--data-dir", dir, "--out", "x"},
		{"--salvage"},
	} {
		if code := quiet(t, func() int { return runRecover(args) }); code != exitError {
			t.Errorf("%v: exit %d, want usage error %d", args, code, exitError)
		}
	}
}

// storeSeries is what a test store holds: per series, its samples.
type storeSeries map[string][]actastore.Sample

// fillStore writes n series with rows samples each through a real store,
// flushed in blocks of blockRows, and closes it.
func fillStore(t *testing.T, dir string, n, rows, blockRows int) storeSeries {
	t.Helper()
	s, err := actastore.Open(dir, actastore.Options{BlockRows: blockRows})
	if err != nil {
		t.Fatal(err)
	}
	want := storeSeries{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("m%d", i)
		var smps []actastore.Sample
		for j := 0; j < rows; j++ {
			smps = append(smps, actastore.Sample{T: 1700000000000 + int64(j)*15000, V: float64(i*1000 + j)})
		}
		if _, err := s.Append(context.Background(), []actastore.SeriesSamples{{Labels: labels.FromStrings("__name__", name), Samples: smps}}); err != nil {
			t.Fatal(err)
		}
		want[name] = smps
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// readStore opens the store in dir and returns every series' samples.
func readStore(t *testing.T, dir string) (storeSeries, error) {
	t.Helper()
	s, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	got := storeSeries{}
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	defer set.Close()
	for set.Next() {
		it := set.At().Iterator()
		var smps []actastore.Sample
		for it.Next() {
			ts, v := it.At()
			smps = append(smps, actastore.Sample{T: ts, V: v})
		}
		if err := it.Err(); err != nil {
			return got, err
		}
		got[set.At().Labels().Get("__name__")] = smps
	}
	return got, set.Err()
}

// TestSalvageDataDir damages one block of a series file in a real store and
// runs recover --salvage --data-dir: refused while the store is open (its
// LOCK); then the damaged file is salvaged in place, the original kept as
// .damaged, and the reopened store returns every sample but the damaged
// block's, bit for bit. A torn tail elsewhere is cut without loss; a second
// run finds everything intact.
func TestSalvageDataDir(t *testing.T) {
	dir := t.TempDir()
	want := fillStore(t, dir, 3, 100, 25)
	var files []string
	filepath.WalkDir(filepath.Join(dir, "series"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) != 3 {
		t.Fatalf("store wrote %d series files, want 3: %v", len(files), files)
	}
	damaged, torn := files[0], files[1]
	blocks := blocksOf(t, damaged)
	if len(blocks) != 4 {
		t.Fatalf("%d blocks, want 4", len(blocks))
	}
	data, _ := os.ReadFile(damaged)
	orig := append([]byte(nil), data...)
	data[blocks[2].Offset+blocks[2].Bytes-40] ^= 0x10
	os.WriteFile(damaged, data, 0o644)
	tornData, _ := os.ReadFile(torn)
	os.WriteFile(torn, append(tornData, orig[blocks[0].Offset:blocks[0].Offset+30]...), 0o644) // less than a prefix: an interrupted append

	// The store does not skip damage on its own: reading the series fails
	// and names the file.
	if _, err := readStore(t, dir); err == nil || !strings.Contains(err.Error(), filepath.Base(damaged)) || !errors.Is(err, acta.ErrCorrupt) {
		t.Fatalf("store over a damaged file: %v, want a corruption error naming it", err)
	}

	live, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code := quiet(t, func() int { return runRecover([]string{"--salvage", "--data-dir", dir}) }); code != exitError {
		t.Fatalf("beside an open store: exit %d, want %d", code, exitError)
	}
	if b, _ := os.ReadFile(damaged); !bytes.Equal(b, data) {
		t.Fatal("the refused run changed the file")
	}
	live.Close()

	out, code := capture(t, func() int { return runRecover([]string{"--salvage", "--data-dir", dir, "--json"}) })
	var rep dataDirReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != exitLossy || rep.FilesChecked != 3 || rep.Intact != 1 || rep.Repaired != 1 || rep.Lossy != 1 || len(rep.Files) != 2 {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
	for _, f := range rep.Files {
		switch f.File {
		case damaged:
			s := f.Skipped
			if f.State != stateSalvaged || f.Lossless || len(s) != 1 || s[0].Offset != blocks[2].Offset || s[0].End != blocks[2].Offset+blocks[2].Bytes ||
				s[0].LostFromSeq != 3 || s[0].LostToSeq != 3 || f.DamagedCopy != damaged+".damaged" || f.Out != damaged {
				t.Fatalf("damaged file: %+v", f)
			}
		case torn:
			if f.State != stateRepaired || !f.Lossless || len(f.Skipped) != 1 || f.Skipped[0].Kind != "incomplete_tail" {
				t.Fatalf("torn file: %+v", f)
			}
		default:
			t.Fatalf("unexpected file in the report: %+v", f)
		}
	}
	if b, _ := os.ReadFile(damaged + ".damaged"); !bytes.Equal(b, data) {
		t.Fatal("the damaged original was not kept bit for bit")
	}
	if b, _ := os.ReadFile(torn); !bytes.Equal(b, tornData) {
		t.Fatal("the torn file was not cut back to its committed frames")
	}
	for _, f := range files {
		if err := acta.Validate(f, acta.ValidateFull); err != nil {
			t.Fatal(err)
		}
	}
	// A crash's leftover temporary is deleted by the store; .damaged is ignored.
	tmp, _ := actastore.SalvageNames(damaged)
	os.WriteFile(tmp, []byte("partial"), 0o644)
	got, err := readStore(t, dir)
	if err != nil {
		t.Fatalf("store after salvage: %v", err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the store left %s: %v", tmp, err)
	}
	lostName := ""
	for name, w := range want {
		g := got[name]
		if len(g) == len(w) {
			for i := range w {
				if g[i].T != w[i].T || math.Float64bits(g[i].V) != math.Float64bits(w[i].V) {
					t.Fatalf("%s sample %d: %+v, want %+v", name, i, g[i], w[i])
				}
			}
			continue
		}
		// The damaged block's 25 samples, and only they, are gone.
		if lostName != "" || len(g) != len(w)-25 {
			t.Fatalf("%s: %d samples, want %d (or %d once)", name, len(g), len(w), len(w)-25)
		}
		lostName = name
		kept := append(append([]actastore.Sample(nil), w[:50]...), w[75:]...)
		for i := range kept {
			if g[i] != kept[i] {
				t.Fatalf("%s sample %d: %+v, want %+v", name, i, g[i], kept[i])
			}
		}
	}
	if lostName == "" {
		t.Fatal("no series lost the damaged block")
	}
	out, code = capture(t, func() int { return runRecover([]string{"--salvage", "--data-dir", dir}) })
	if code != exitOK || !strings.Contains(out, "3 files checked: 3 intact") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
}
