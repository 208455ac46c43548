package actastore

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/prometheus/prometheus/model/labels"
)

// TestReadOnlyWhileOpen reads a store another Store has open: series known
// only from the WAL are found, samples are those of the files (Select minus
// the head), and nothing in the directory changes, not even a torn WAL tail.
func TestReadOnlyWhileOpen(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{BlockRows: 1000})
	defer s.Close()
	a := labels.FromStrings("__name__", "up", "job", "api")
	b := labels.FromStrings("__name__", "up", "job", "db")
	mustAppend(t, s, []SeriesSamples{
		{Labels: a, Samples: []Sample{{1000, 1}, {2000, staleNaN}}},
		{Labels: b, Samples: []Sample{{1000, 5}}},
	})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	// Head only: not in any file yet, but in the WAL.
	mustAppend(t, s, []SeriesSamples{{Labels: a, Samples: []Sample{{3000, 3}}}})

	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := ro.Series(labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"))
	if len(got) != 2 || !labels.Equal(got[0].Labels, a) || !labels.Equal(got[1].Labels, b) {
		t.Fatalf("series %v", got)
	}
	if n := len(ro.Series(labels.MustNewMatcher(labels.MatchRegexp, "job", "d.*"))); n != 1 {
		t.Fatalf("job=~d.* matched %d series, want 1", n)
	}
	smps, err := ro.Samples(got[0].Ref, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	// The files' samples and the one only the WAL holds yet (the server's
	// head): everything acknowledged.
	if len(smps) != 3 || smps[0] != (Sample{1000, 1}) || smps[1].T != 2000 || math.Float64bits(smps[1].V) != 0x7ff0000000000002 ||
		smps[2] != (Sample{3000, 3}) {
		t.Fatalf("samples %v", smps)
	}
	if nt, ok := ro.NewestInWAL(got[0].Ref); !ok || nt != 3000 {
		t.Fatalf("newest in WAL %d %v, want 3000", nt, ok)
	}
	files, err := ro.Files(got[0].Ref)
	if err != nil || len(files) != 1 || files[0].MinT != 1000 || files[0].MaxT != 2000 || files[0].Rows != 2 {
		t.Fatalf("files %+v %v", files, err)
	}

	byRef, err := ro.ListFilesOf([]uint64{got[0].Ref, got[1].Ref})
	if err != nil || len(byRef) != 2 || len(byRef[got[0].Ref]) != 1 || byRef[got[0].Ref][0].Path != files[0].Path {
		t.Fatalf("files of both series %+v %v", byRef, err)
	}

	// A series created after the view opened appears on Reload.
	c := labels.FromStrings("__name__", "up", "job", "web")
	mustAppend(t, s, []SeriesSamples{{Labels: c, Samples: []Sample{{1000, 7}}}})
	if n, err := ro.Reload(); err != nil || n != 1 {
		t.Fatalf("reload: %d new, %v", n, err)
	}
	if len(ro.Series()) != 3 {
		t.Fatalf("%d series after reload, want 3", len(ro.Series()))
	}
	// A torn record at the end of the last WAL segment: a reader must not cut it.
	segs, err := wal.Segments(filepath.Join(dir, walDirName))
	if err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(dir, walDirName, wal.SegmentName(segs[len(segs)-1]))
	f, err := os.OpenFile(last, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Where the next record goes: with WAL preallocation a zero-filled
	// space follows the records, so not at the file's end.
	f.WriteAt([]byte{40, 0, 0, 0, 1, 2}, s.wal.End().Offset)
	f.Close()
	before, _ := os.Stat(last)

	if _, err := OpenReadOnly(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(last); after.Size() != before.Size() {
		t.Fatalf("WAL segment changed from %d to %d bytes", before.Size(), after.Size())
	}
}

// TestSkipSealedBefore: a sealed file holds only samples before its
// successor's start; the newest file is always kept (out-of-order samples
// for any time go there).
func TestSkipSealedBefore(t *testing.T) {
	files := []SeriesFile{{Start: 0}, {Start: 100}, {Start: 200}}
	f := func(mint int64, want int64) {
		t.Helper()
		got := SkipSealedBefore(files, mint)
		if len(got) == 0 || got[0].Start != want {
			t.Errorf("mint %d: first kept %v, want start %d", mint, got, want)
		}
	}
	f(-5, 0)
	f(99, 0)
	f(100, 100)
	f(150, 100)
	f(200, 200)
	f(1<<40, 200)
}
