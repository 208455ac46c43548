package actastore

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
)

// A local-only read (what a query instance asks a writer) whose file's
// local copy went after the listing does not read the object store's
// copy: it reports the file missing, fetching nothing; a plain read uses
// the object store's copy.
func TestLocalOnlyReadNeverFetches(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{MaintenanceInterval: -1})
	mustAppend(t, s, []SeriesSamples{{Labels: labels.FromStrings("__name__", "m"), Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	ms := s.reg.live()[0]
	path := filePath(s.dir, floats, ms.ref, ms.floats.files()[0])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The "bucket": the file moved elsewhere, opened by the cache's remote.
	moved := filepath.Join(t.TempDir(), "moved.acta")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	rc := newReaderCache(8, 0)
	rc.remote = func(string) (*acta.Reader, bool, error) {
		r, err := acta.Open(moved)
		return r, true, err
	}
	var got []Sample
	collect := func(run []Sample, _ []StartTime) error { got = append(got, run...); return nil }

	st := &readStats{localOnly: true}
	_, _, _, err := readFileStarts(floats, rc, path, math.MinInt64, math.MaxInt64, st, collect)
	if !errors.Is(err, os.ErrNotExist) || st.bucketBytes != 0 || len(got) != 0 {
		t.Fatalf("local-only read: err %v, %d bytes fetched, %d samples", err, st.bucketBytes, len(got))
	}
	st = &readStats{}
	if _, _, _, err := readFileStarts(floats, rc, path, math.MinInt64, math.MaxInt64, st, collect); err != nil {
		t.Fatal(err)
	}
	if st.bucketBytes == 0 || len(got) != 2 || got[1] != (Sample{T: 2000, V: 2}) {
		t.Fatalf("plain read: %d bytes fetched, samples %v", st.bucketBytes, got)
	}
}
