package actastore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/durable"
)

// The object-storage tier (Options.Tier): sealed series files are uploaded
// to a bucket, verified, published in an index object, and then kept
// locally only as long as the local retention says; a file whose local
// copy is gone stays in its track's file list, and reads fetch the blocks
// they need from the bucket (package bucket; docs/format/bucket.md).
//
// What is uploaded, and when: a sealed file (not its track's newest) once
// compaction marked it done (at once with compaction off); the newest file
// of an idle track once its rotation period is over. A file changed after
// its upload (rewritten by DeleteSeries, merged by a longer period,
// appended to after its period) has a new content CRC, so a new key: it is
// uploaded again, and the index then names the new object and drops the
// old one, which is deleted DeleteDelay later. A file that leaves its
// track leaves the index. Nothing local is deleted before its upload is
// verified (size and CRC-32C read back) and an index naming it is
// published.
//
// Durable state: the manifest (tier_manifest.go), a local log of every
// file uploaded and verified, so Open knows the files that exist only in
// the bucket without asking it. The bucket may be down at Open and for as
// long as it likes: ingest and reads of local files go on, uploads retry
// with backoff (acta_tier_upload_lag_seconds grows), and nothing is
// deleted locally meanwhile.
//
// Locks: tier.mu is a leaf (doc.go); uploads and bucket reads hold no
// store lock, local deletions take the series' flush lock then its mu.

// TierOptions configure the object-storage tier.
type TierOptions struct {
	Client   *bucket.Client
	Layout   bucket.Layout
	Instance string // this writer's prefix under Layout; unique per writer
	// UploadInterval: how often an upload cycle runs (uploads, index
	// publication, local deletions, bucket retention). Default 1m;
	// negative: never in the background (TierCycle runs one).
	UploadInterval time.Duration
	// LocalRetention keeps an uploaded file's local copy until its newest
	// sample is this old; 0 deletes it once its upload is verified and
	// published.
	LocalRetention time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed cycle
	// (doubling). Defaults 1s and 5m.
	MinBackoff, MaxBackoff time.Duration
	// Concurrency: files uploaded at once. Default 4.
	Concurrency int
	// DeleteDelay: how long after an index without it is published an
	// object is deleted (readers may hold an older index that long), and
	// superseded index objects likewise. Default 1h.
	DeleteDelay time.Duration
	// BlockIndexCacheBytes bounds the local cache of bucket files' block
	// indexes (tier/blockindex/). Default 256 MiB.
	BlockIndexCacheBytes int64
	// RetentionMaxAge, with RetentionOwner, runs bucket retention from
	// this instance: files whose newest sample is older are expired in
	// every prefix of the layout. Exactly one instance should own it.
	RetentionMaxAge time.Duration
	RetentionOwner  bool
	// RetentionInterval: how often the owner runs bucket retention.
	// Default 10m.
	RetentionInterval time.Duration
	// MaxIndexBytes bounds one decoded index object. Default 1 GiB.
	MaxIndexBytes int64
}

func (o *TierOptions) setDefaults() {
	if o.UploadInterval == 0 {
		o.UploadInterval = time.Minute
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.DeleteDelay <= 0 {
		o.DeleteDelay = time.Hour
	}
	if o.BlockIndexCacheBytes <= 0 {
		o.BlockIndexCacheBytes = 256 << 20
	}
	if o.RetentionInterval <= 0 {
		o.RetentionInterval = 10 * time.Minute
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 1 << 30
	}
}

// Tier directories under the store root.
const (
	tierDirName       = "tier"
	tierManifestDir   = "manifest"
	tierBlockIndexDir = "blockindex"
	tierDownloadExt   = ".download" + tmpSuffix // a restore in progress; swept with the .tmp files
)

// tier is the store's object-storage state.
type tier struct {
	s     *Store
	o     TierOptions
	c     *bucket.Client
	cache *bucket.IndexCache
	man   *manifest
	m     *tierMetrics

	cycleLock sync.Mutex // one upload cycle at a time

	mu    sync.Mutex
	files map[bucket.FileID]*tierFile // uploaded and verified
	// pending are manifest records (file, remove) no published index
	// object holds yet; pub is the object being published, its bytes fixed
	// from its first attempt (a retry must not change what a sequence
	// number means).
	pending []pendingRec
	pub     *publication
	seq     uint64 // last index object published; 0: not known yet (list first)
	// lastFull is the newest full index object this process published,
	// and when; deltas counts the deltas since.
	lastFull   uint64
	lastFullAt time.Time
	gcFull     uint64 // index objects before this one are deleted
	deltas     int
	deltaRecs  int
	fresh      bool   // the manifest was created by this Open
	blocked    string // why publishing is refused ("" when it is not)
	doomed     []doomedObject
	swept      bool // orphan objects swept since Open
	horizon    bucket.Horizon
	retainer   *bucket.Retainer
	lastRetain time.Time
	failures   int
	nextTry    time.Time
	aborted    bool // incomplete multipart uploads aborted since Open
}

// tierFile is one uploaded file.
type tierFile struct {
	bucket.File
	local     bool // a local copy exists (reads use it)
	published bool // an index object naming this CRC is published
}

// pendingRec is a file or remove record waiting for an index object; why
// is set for a removal (whether its object is this writer's to delete).
type pendingRec struct {
	rec      []byte
	id       bucket.FileID
	crc      uint32
	file     bool
	doomKey  string // "": nothing to delete; else the object replaced or removed
	doomSize int64
}

type publication struct {
	seq    uint64
	full   bool
	key    string
	bytes  []byte
	covers int           // pending records it holds
	files  []publishedID // files it names
}

type publishedID struct {
	id  bucket.FileID
	crc uint32
}

type doomedObject struct {
	key   string
	after time.Time
}

// kindOf maps the store's kinds to the bucket's (the same numbers, kept
// apart so the bucket layout does not follow an internal enum).
func bucketKind(k kindID) bucket.Kind {
	if k == kindHistogram {
		return bucket.KindHistogram
	}
	return bucket.KindFloat
}

func storeKind(k bucket.Kind) kindID {
	if k == bucket.KindHistogram {
		return kindHistogram
	}
	return kindFloat
}

// openTier loads the manifest and block index cache. Called by Open after
// the files on disk are attached to their series and before torn files
// are repaired: repair and the replay's duplicate check skip files that
// exist only in the bucket.
func (s *Store) openTier() error {
	o := *s.opts.Tier
	o.setDefaults()
	if o.Client == nil {
		return errors.New("tier: no bucket client")
	}
	if err := bucket.ValidInstance(o.Instance); err != nil {
		return fmt.Errorf("tier: %w", err)
	}
	if err := bucket.ValidPrefix(o.Layout.Prefix); err != nil {
		return fmt.Errorf("tier: %w", err)
	}
	root := filepath.Join(s.dir, tierDirName)
	mdir := filepath.Join(root, tierManifestDir)
	_, statErr := os.Stat(mdir)
	t := &tier{s: s, o: o, c: o.Client, files: make(map[bucket.FileID]*tierFile), fresh: os.IsNotExist(statErr)}
	var err error
	if t.cache, err = bucket.OpenIndexCache(filepath.Join(root, tierBlockIndexDir), o.BlockIndexCacheBytes, s.opts.Registerer); err != nil {
		return err
	}
	if t.man, err = openManifest(mdir, func(f bucket.File) { t.files[f.FileID] = &tierFile{File: f} }, func(id bucket.FileID, crc uint32) {
		if f := t.files[id]; f != nil && f.CRC == crc {
			delete(t.files, id)
		}
	}); err != nil {
		return err
	}
	if o.RetentionOwner && o.RetentionMaxAge > 0 {
		t.retainer = o.Client.NewRetainer(o.Layout, bucket.RetentionOptions{Owner: o.Instance, MaxAge: o.RetentionMaxAge,
			DeleteDelay: o.DeleteDelay, MaxIndexRaw: o.MaxIndexBytes})
	}
	if t.m, err = newTierMetrics(s.opts.Registerer); err != nil {
		t.man.close()
		return err
	}
	s.tier = t
	s.readers.remote = t.openRemote
	t.attach()
	return nil
}

// attach adds the files that exist only in the bucket to their tracks,
// with what the manifest knows of them (bounds), so names keep pruning
// reads and no read opens them to learn what the manifest says. A file of
// a series the store no longer has leaves the index at the next cycle.
func (t *tier) attach() {
	s := t.s
	for id, f := range t.files {
		ms := s.reg.byRef.get(id.Ref)
		if ms == nil {
			continue
		}
		path := t.path(id)
		if _, err := os.Stat(path); err == nil {
			f.local = true
			continue
		}
		switch storeKind(id.Kind) {
		case kindHistogram:
			attachRemote(s, histograms, ms, f)
		default:
			attachRemote(s, floats, ms, f)
		}
		s.maint.mark(path) // nothing to compact locally
	}
}

func attachRemote[S any](s *Store, k kind[S], ms *memSeries, f *tierFile) {
	tr := k.track(ms, true)
	i, found := slices.BinarySearch(tr.files(), f.Start)
	if !found {
		tr.setFiles(slices.Insert(tr.files(), i, f.Start))
	}
	noteFileMin(tr, f.Start, f.MinT)
	if _, known := tr.fileMax(); tr.files()[len(tr.files())-1] == f.Start && !known {
		// The newest file exists only in the bucket: its newest sample is
		// known without reading it.
		tr.setFileMax(f.MaxT, true)
		if tr.maxT == noTime || f.MaxT > tr.maxT {
			tr.maxT = f.MaxT
		}
	}
}

// path is the local path of a file id.
func (t *tier) path(id bucket.FileID) string {
	return filepath.Join(t.s.dir, id.Kind.Dir(), shardName(id.Ref), seriesFileName(id.Ref, id.Start))
}

// key is the object key of an uploaded file.
func (t *tier) key(f bucket.File) string {
	return t.o.Layout.FileKey(t.o.Instance, f.Kind, f.Ref, f.Start, f.CRC)
}

// idOf parses a local series file path (the reader cache's key).
func idOf(path string) (bucket.FileID, bool) {
	ref, start, ok := parseSeriesFileName(filepath.Base(path))
	if !ok {
		return bucket.FileID{}, false
	}
	switch filepath.Base(filepath.Dir(filepath.Dir(path))) {
	case seriesDirName:
		return bucket.FileID{Kind: bucket.KindFloat, Ref: ref, Start: start}, true
	case histDirName:
		return bucket.FileID{Kind: bucket.KindHistogram, Ref: ref, Start: start}, true
	}
	return bucket.FileID{}, false
}

// bucketOnly reports whether a track's file exists only in the bucket.
func (t *tier) bucketOnly(k kindID, ref uint64, start int64) (bucket.File, bool) {
	if t == nil {
		return bucket.File{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[bucket.FileID{Kind: bucketKind(k), Ref: ref, Start: start}]
	if f == nil || f.local {
		return bucket.File{}, false
	}
	return f.File, true
}

// isBucketOnly reports whether a file exists only in the object store.
func isBucketOnly(s *Store, k kindID, ref uint64, start int64) bool {
	_, only := s.tier.bucketOnly(k, ref, start)
	return only
}

// openRemote opens a series file that exists only in the bucket (the
// reader cache calls it when the local file is missing); ok is false for a
// file the bucket does not hold either.
func (t *tier) openRemote(path string) (*acta.Reader, bool, error) {
	id, ok := idOf(path)
	if !ok {
		return nil, false, nil
	}
	t.mu.Lock()
	f := t.files[id]
	var file bucket.File
	if f != nil {
		file = f.File
		f.local = false // the local copy is gone, whatever we thought
	}
	horizon := t.horizon
	t.mu.Unlock()
	if f == nil {
		return nil, false, nil
	}
	key := t.key(file)
	r, err := t.c.OpenFile(key, file.Size, file.CRC, t.cache, acta.Limits{})
	if errors.Is(err, bucket.ErrNotFound) && horizon.Expired(file.MaxT) {
		// Bucket retention deleted it before this writer dropped it from
		// its track: expired data, as a local file retention removed.
		return nil, true, fmt.Errorf("%w (expired by bucket retention: %v)", os.ErrNotExist, err)
	}
	if err != nil {
		t.m.readErrors.Inc()
		return nil, true, fmt.Errorf("tier: read %s: %w", t.c.URL(key), err)
	}
	return r, true, nil
}

// ensureLocal brings a file that exists only in the bucket back to local
// disk before the store changes it: the newest file a flush appends to
// (its local copy went while the track was idle), a file DeleteSeries
// rewrites. The object is read whole, checked against the manifest's size
// and CRC-32C, written to a temporary name, synced and renamed into
// place. Called with the series' flush lock held.
func (t *tier) ensureLocal(k kindID, ref uint64, start int64) error {
	if t == nil {
		return nil
	}
	f, only := t.bucketOnly(k, ref, start)
	if !only {
		return nil
	}
	path := t.path(f.FileID)
	if _, err := os.Stat(path); err == nil {
		t.setLocal(f.FileID, f.CRC, true)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b, err := t.c.Get(ctx, t.key(f), f.Size, "restore")
	if err != nil {
		return fmt.Errorf("tier: restore %s: %w", path, err)
	}
	if int64(len(b)) != f.Size || bucket.CRC32C(b) != f.CRC {
		return fmt.Errorf("tier: restore %s: %s is %d bytes with CRC-32C %08x, the manifest says %d and %08x",
			path, t.c.URL(t.key(f)), len(b), bucket.CRC32C(b), f.Size, f.CRC)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return fmt.Errorf("tier: restore %s: %w", path, err)
	}
	t.s.readers.invalidate(path)
	t.s.maint.forget(path)
	t.setLocal(f.FileID, f.CRC, true)
	t.m.restored.Inc()
	return nil
}

func (t *tier) setLocal(id bucket.FileID, crc uint32, local bool) {
	t.mu.Lock()
	if f := t.files[id]; f != nil && f.CRC == crc {
		f.local = local
	}
	t.mu.Unlock()
}

// writeFileAtomic writes b to path durably: a temporary file, fsync,
// rename, directory fsync.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + tierDownloadExt
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}

// tierBeforeDelete prepares a DeleteSeries of [mint, maxt] for a file
// that may exist only in the bucket: one holding nothing of the range is
// skipped, one wholly inside it leaves its track without a download (the
// next cycle removes it from the index and deletes its object), any other
// is restored locally to be rewritten. skip says the file is done with.
// Called with the series' flush lock held.
func tierBeforeDelete[S any](s *Store, k kind[S], ms *memSeries, start, mint, maxt int64) (skip bool, err error) {
	f, only := s.tier.bucketOnly(k.id(), ms.ref, start)
	switch {
	case !only:
		return false, nil
	case f.MaxT < mint || f.MinT > maxt:
		return true, nil
	case f.MinT >= mint && f.MaxT <= maxt:
		ms.mu.Lock()
		if tr := k.track(ms, false); tr != nil {
			dropFile(tr, start)
		}
		ms.mu.Unlock()
		return true, nil
	}
	return false, s.tier.ensureLocal(k.id(), ms.ref, start)
}

// uploaded reports whether a file is in the bucket's index (a local copy
// or not). A deletion that changes such a file is not finished until an
// upload cycle records that in the manifest: a restart before it attaches
// the file from the manifest again, so the tombstone must be applied again
// (no tombstones-done record: delete.go).
func (t *tier) uploaded(k kindID, ref uint64, start int64) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.files[bucket.FileID{Kind: bucketKind(k), Ref: ref, Start: start}] != nil
}
