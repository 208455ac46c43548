package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/bucket"
)

// A ReadOnly view of a directory whose server uploads to an object store
// (tier.go): files whose local copy is gone exist only in the bucket. The
// tier's manifest says which; with UseBucket the view reads them from the
// bucket (block by block, as the server does), without it it reports them
// (BucketOnlyFiles) so a tool can say what it left out.

// readOnlyTier is what a ReadOnly knows of the tier.
type readOnlyTier struct {
	files  map[bucket.FileID]bucket.File // every uploaded file, from the manifest
	c      *bucket.Client                // nil: bucket files are left out
	layout bucket.Layout
	inst   string
	rc     *readerCache
}

// loadTier reads the manifest of dir, if the server has one (nothing
// otherwise). It is read as the WAL is: a record being written is not
// there yet.
func (r *ReadOnly) loadTier() error {
	mdir := filepath.Join(r.dir, tierDirName, tierManifestDir)
	if _, err := os.Stat(mdir); err != nil {
		return nil
	}
	t := &readOnlyTier{files: make(map[bucket.FileID]bucket.File)}
	var b labels.ScratchBuilder
	err := wal.NewFollower(mdir).Read(func(seg int, p []byte) error {
		rec, err := bucket.DecodeRecord(&b, p)
		if err != nil {
			return fmt.Errorf("tier manifest segment %08d: %w", seg, err)
		}
		switch rec.Type {
		case bucket.RecFile:
			t.files[rec.File.FileID] = rec.File
		case bucket.RecRemove:
			if f, ok := t.files[rec.File.FileID]; ok && f.CRC == rec.File.CRC {
				delete(t.files, rec.File.FileID)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the tier manifest of %s: %w", r.dir, err)
	}
	r.tier = t
	return nil
}

// UseBucket reads the files that exist only in the bucket through c, from
// the prefix of instance inst under l (the server's storage.object_store
// prefix and instance_id).
func (r *ReadOnly) UseBucket(c *bucket.Client, l bucket.Layout, inst string) error {
	if err := bucket.ValidInstance(inst); err != nil {
		return err
	}
	if r.tier == nil {
		r.tier = &readOnlyTier{files: make(map[bucket.FileID]bucket.File)}
	}
	t := r.tier
	t.c, t.layout, t.inst = c, l, inst
	t.rc = newReaderCache(0, 0) // a fresh reader per read, as the view reads local files
	t.rc.remote = func(path string) (*acta.Reader, bool, error) {
		id, ok := idOf(path)
		f, known := t.files[id]
		if !ok || !known {
			return nil, false, nil
		}
		key := l.FileKey(inst, f.Kind, f.Ref, f.Start, f.CRC)
		rd, err := c.OpenFile(key, f.Size, f.CRC, nil, acta.Limits{})
		if err != nil {
			return nil, true, fmt.Errorf("read %s: %w", c.URL(key), err)
		}
		return rd, true, nil
	}
	return nil
}

// BucketOnlyFiles counts ref's files of every kind that exist only in the
// bucket (uploaded, local copy gone); with UseBucket they are read, else
// left out of Samples and Histograms.
func (r *ReadOnly) BucketOnlyFiles(ref uint64) int {
	n := 0
	for _, k := range []kindID{kindFloat, kindHistogram} {
		n += len(r.bucketOnly(k, ref, nil))
	}
	return n
}

// bucketOnly returns the bucket-only files of ref of kind k missing from
// listed (the local files).
func (r *ReadOnly) bucketOnly(k kindID, ref uint64, listed []SeriesFile) []SeriesFile {
	if r.tier == nil {
		return nil
	}
	var out []SeriesFile
	bk := bucketKind(k)
	for id, f := range r.tier.files {
		if id.Ref != ref || id.Kind != bk || slices.ContainsFunc(listed, func(s SeriesFile) bool { return s.Start == id.Start }) {
			continue
		}
		path := filepath.Join(r.dir, bk.Dir(), shardName(ref), seriesFileName(ref, id.Start))
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			continue // there locally after all (listed meanwhile)
		}
		out = append(out, SeriesFile{Path: path, Start: f.Start, MinT: f.MinT, MaxT: f.MaxT})
	}
	return out
}

// withBucketFiles adds, when the view reads the bucket, ref's bucket-only
// files to its local ones (sorted by start), and returns the reader cache
// to read them all with (nil: local files only).
func (r *ReadOnly) withBucketFiles(k kindID, ref uint64, files []SeriesFile) ([]SeriesFile, *readerCache) {
	if r.tier == nil || r.tier.c == nil {
		return files, nil
	}
	files = append(files, r.bucketOnly(k, ref, files)...)
	slices.SortFunc(files, func(a, b SeriesFile) int { return int(max(-1, min(1, a.Start-b.Start))) })
	return files, r.tier.rc
}
