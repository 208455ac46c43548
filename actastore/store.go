package actastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/durable"
	"github.com/acta-remote/acta-remote/rotation"
	"github.com/prometheus/prometheus/model/labels"
)

// Store is the series store. It is safe for concurrent use. Its parts, each
// with one job: the registry (series, label index, what the catalog lacks)
// and the catalog; the WAL; the head (headState, and each series' tracks);
// the writer cache of series files; metadata; the maintainer (retention,
// compaction). The lock order is written in doc.go.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	now  func() time.Time
	m    *metrics
	rm   *rotation.Metrics
	fo   fileOptions

	// appendMu is held shared by each Commit from its checks until its
	// items are in the head, and exclusively by WAL truncation while it
	// finds the oldest segment still needed and by series removal, so no
	// acknowledged item can sit in a deleted segment without being in the
	// head, and no commit holds a removed series.
	appendMu sync.RWMutex
	truncMu  sync.Mutex               // one WAL truncation (or series removal) at a time
	flushMu  [flushStripes]sync.Mutex // flushLock: a series' flushes and newest-file changes

	reg     *registry
	cat     *catalog
	wal     *wal.Log
	hd      *headState
	md      *metaStore
	writers *writerCache
	readers *readerCache
	maint   *maintainer
	tier    *tier // nil without Options.Tier (tier.go)

	replayedSamples int         // at Open, for the metric
	replayLookups   int         // at Open: registry lookups of replayed sample records' series (tests)
	tombstones      []tombstone // replayed at Open, applied to the files before it returns
	// ckpt is the WAL segment of the live checkpoint (-1: none) and
	// ckptBytes its size (checkpoint.go); ckpt is guarded by truncMu
	// once Open returned.
	ckpt      int
	ckptBytes atomic.Int64
	// ckptCopy is the checkpoint copying the heads (nil when none does),
	// which commits copy a head into before they change it; ckptEpoch
	// numbers checkpoints (truncMu).
	ckptCopy  atomic.Pointer[checkpointCopy]
	ckptEpoch uint32
	// ckptPaused is how long the last checkpoint held commits (truncMu;
	// benchmarks).
	ckptPaused time.Duration
	// lastTruncFlushes is the flush count at the last truncation attempt
	// of the flush loop (used by that goroutine only).
	lastTruncFlushes int64

	stop      chan struct{}
	bg        sync.WaitGroup // background goroutines
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	lock      *os.File // flock'ed LOCK file, released by Close
}

// StoreStats is a snapshot of the store's state.
type StoreStats struct {
	Series         int   // series in the catalog
	HeadSeries     int   // series with unflushed samples
	HeadSamples    int64 // unflushed items of every kind
	HeadBytes      int64 // what they cost in memory
	WALBytes       int64 // bytes in live WAL segments
	WALSegments    int   // live WAL segments
	OpenWriters    int   // open series file writers
	Flushes        int64 // track flushes since Open
	FlushedSamples int64 // items flushed since Open
}

func (o *Options) setDefaults() {
	if o.WALSyncInterval <= 0 {
		o.WALSyncInterval = time.Second
	}
	if o.WALSegmentSize <= 0 {
		o.WALSegmentSize = 64 << 20
	}
	if o.WALCheckpointBytes == 0 {
		o.WALCheckpointBytes = 16 << 20
	}
	if o.BlockRows <= 0 {
		o.BlockRows = 4096
	}
	if o.MaxHeadAge <= 0 {
		o.MaxHeadAge = 5 * time.Minute
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = 256
	}
	if o.MaxOpenReaders == 0 {
		o.MaxOpenReaders = defaultMaxOpenReaders()
	}
	if o.MaxReaderBytes == 0 {
		o.MaxReaderBytes = 64 << 20
	}
	if o.MaxChunkCacheBytes == 0 {
		o.MaxChunkCacheBytes = 128 << 20
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = 3
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = time.Minute
	}
}

// Open opens (creating if needed) the store in dir: it lays out the
// directories, loads the catalog, replays the WAL into the head (and the
// histogram WAL of a directory written by an earlier release, which it then
// retires), repairs torn tails of series files if the last run did not close
// cleanly, and starts the background flusher and maintenance.
func Open(dir string, opts Options) (_ *Store, err error) {
	opts.setDefaults()
	s := &Store{
		dir:   dir,
		opts:  opts,
		log:   opts.Logger,
		now:   opts.Now,
		fo:    fileOptions{zstd: opts.FlushZstd, zstdMinRows: opts.FlushZstdMinRows, zstdLevel: opts.ZstdLevel, blockRows: opts.BlockRows},
		reg:   newRegistry(),
		hd:    &headState{maxSamples: opts.MaxHeadSamples, maxBytes: opts.MaxHeadBytes, flushCh: make(chan *memSeries, 4096)},
		md:    newMetaStore(dir),
		maint: newMaintainer(),
		stop:  make(chan struct{}),
		ckpt:  -1,
	}
	// One cleanup for every way Open can fail: what was opened is closed
	// again, newest first.
	var undo []func() error
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			err = fmt.Errorf("open store: %w", err)
		}
	}()
	for _, d := range []string{dir, filepath.Join(dir, walDirName), filepath.Join(dir, catalogDirName), filepath.Join(dir, seriesDirName), filepath.Join(dir, histDirName)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	s.writers = newWriterCache(dir, opts.MaxOpenFiles, opts.Logger)
	s.readers = newReaderCache(opts.MaxOpenReaders, opts.MaxReaderBytes)
	s.readers.maxChunkBytes = opts.MaxChunkCacheBytes
	if s.lock, err = lockDir(filepath.Join(dir, lockFileName)); err != nil {
		return nil, err
	}
	undo = append(undo, s.lock.Close)

	// A crash after this point leaves no marker, and the next Open checks
	// the tails of the files the WAL says may be mid-append.
	wasClean := false
	clean := filepath.Join(dir, cleanMarkerName)
	if _, err := os.Stat(clean); err == nil {
		wasClean = true
		if err := os.Remove(clean); err != nil {
			return nil, fmt.Errorf("remove clean marker: %w", err)
		}
		if err := durable.SyncDir(dir); err != nil {
			return nil, err
		}
	}
	if err := s.loadCatalog(); err != nil {
		return nil, err
	}
	undo = append(undo, s.cat.close)
	if err := s.md.load(); err != nil {
		return nil, err
	}
	files, err := s.scanFiles()
	if err != nil {
		return nil, err
	}
	if err := s.replayWAL(); err != nil {
		return nil, err
	}
	legacy, err := s.replayLegacyHistWAL()
	if err != nil {
		return nil, err
	}
	s.attachFiles(files)
	if opts.Tier != nil {
		if err := s.openTier(); err != nil {
			return nil, err
		}
		undo = append(undo, s.tier.man.close)
	}
	if wasClean {
		if err := s.loadFlushState(); err != nil {
			return nil, err
		}
	} else if err := s.repairTornFiles(); err != nil {
		return nil, err
	}
	if err := s.dedupeReplayed(); err != nil {
		return nil, err
	}
	if s.wal, err = wal.Open(filepath.Join(dir, walDirName), wal.Options{SegmentSize: opts.WALSegmentSize, Preallocate: opts.WALPreallocate}); err != nil {
		return nil, err
	}
	undo = append(undo, s.wal.Close)
	if s.m, err = newMetrics(s, opts.Registerer); err != nil {
		return nil, err
	}
	if s.rm, err = rotation.NewMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if legacy {
		if err := s.retireLegacyHistWAL(); err != nil {
			return nil, err
		}
	}
	if err := s.applyTombstones(); err != nil {
		return nil, err
	}
	// Series known only from the WAL go to the catalog now, so the replayed
	// segments can be truncated as soon as their samples are flushed.
	if err := s.writePendingCatalog(); err != nil {
		return nil, err
	}
	if err := s.compactCatalog(); err != nil {
		return nil, err
	}
	s.m.replayedSamples.Add(float64(s.replayedSamples))
	s.m.checkpointBytes.Set(float64(s.ckptBytes.Load()))
	s.bg.Add(1)
	go s.flushLoop()
	if opts.MaintenanceInterval > 0 {
		s.bg.Add(1)
		go s.maintainLoop()
	}
	if opts.WALCheckpointBytes > 0 {
		s.bg.Add(1)
		go s.checkpointLoop()
	}
	if opts.WALSync == SyncInterval {
		s.bg.Add(1)
		go s.syncLoop()
	}
	if s.tier != nil && s.tier.o.UploadInterval > 0 {
		s.bg.Add(1)
		go s.tierLoop()
	}
	if opts.WarmReaders {
		s.bg.Add(1)
		go s.warmReaders()
	}
	return s, nil
}

// loadCatalog replays the catalog into the registry.
func (s *Store) loadCatalog() error {
	r := s.reg
	var err error
	s.cat, err = loadCatalog(filepath.Join(s.dir, catalogDirName), func(rec seriesRec) error {
		ms := r.addLocked(rec.Ref, rec.Labels, rec.Created)
		ms.walLogged, ms.inCatalog = true, true
		delete(r.deleted, rec.Ref)
		return nil
	}, func(d deletedRec) {
		if ms := r.byRef.get(d.Ref); ms != nil {
			r.removeLocked(ms)
		}
		r.deleted[d.Ref] = d.At
	})
	return err
}

// compactCatalog rewrites the catalog into one segment once it has many
// (catalog.compact decides).
func (s *Store) compactCatalog() error {
	r := s.reg
	live := r.ix.live()
	var sb labels.ScratchBuilder
	rec := func(i int) seriesRec {
		ms := live[i]
		return seriesRec{Ref: ms.ref, Created: ms.created, Labels: r.labels(&sb, ms)}
	}
	var dels []deletedRec
	for ref, at := range r.deleted {
		if r.byRef.get(ref) == nil {
			dels = append(dels, deletedRec{Ref: ref, At: at})
		}
	}
	return s.cat.compact(len(live), rec, dels)
}

// Close flushes the head, syncs and closes every file, stops the background
// work and marks the store cleanly closed. Commits and selects after Close
// return ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.bg.Wait()
		// Commits in flight finish before the final flush; new ones see
		// closed and return ErrClosed.
		s.appendMu.Lock()
		s.closed.Store(true)
		s.appendMu.Unlock()
		var errs []error
		if err := s.flushAll(); err != nil {
			errs = append(errs, err)
		}
		if err := s.md.flush(); err != nil {
			errs = append(errs, err)
		}
		if err := s.writers.closeAll(); err != nil {
			errs = append(errs, err)
		}
		s.readers.closeAll()
		if err := s.writers.syncDirty(); err != nil {
			errs = append(errs, err)
		}
		if err := s.wal.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.cat.close(); err != nil {
			errs = append(errs, err)
		}
		if s.tier != nil {
			if err := s.tier.man.close(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			if err := s.writeFlushState(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			if err := os.WriteFile(filepath.Join(s.dir, cleanMarkerName), nil, 0o644); err != nil {
				errs = append(errs, err)
			} else if err := durable.SyncDir(s.dir); err != nil {
				errs = append(errs, err)
			}
		}
		s.lock.Close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() StoreStats {
	segs, _ := wal.Segments(filepath.Join(s.dir, walDirName))
	return StoreStats{
		Series:         int(s.reg.num.Load()),
		HeadSeries:     int(s.hd.series.Load()),
		HeadSamples:    s.hd.samples.Load(),
		HeadBytes:      s.hd.bytes.Load(),
		WALBytes:       s.wal.Size(),
		WALSegments:    len(segs),
		OpenWriters:    s.writers.open(),
		Flushes:        s.hd.flushes.Load(),
		FlushedSamples: s.hd.flushedSmp.Load(),
	}
}

var (
	_ Appender = (*Store)(nil)
	_ Querier  = (*Store)(nil)
)

// ctxErr reports a cancelled context.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// abandon stops the store as a crash would, for tests: the background work
// stops and every file is closed without flushing the head, syncing or
// writing the clean marker. Data the OS already has stays, as after a
// process kill.
func (s *Store) abandon() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.bg.Wait()
		s.appendMu.Lock()
		s.closed.Store(true)
		s.appendMu.Unlock()
		s.writers.mu.Lock()
		for el := s.writers.ll.Front(); el != nil; el = el.Next() {
			el.Value.(*writerEntry).w.Close()
		}
		s.writers.ll.Init()
		clear(s.writers.m)
		s.writers.mu.Unlock()
		s.readers.closeAll()
		s.wal.Close()
		s.cat.close()
		if s.tier != nil {
			s.tier.man.close()
		}
		s.lock.Close()
		s.closeErr = ErrClosed
	})
}
