package actastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/rotation"
	"github.com/prometheus/prometheus/model/labels"
)

// Store is the series store. It is safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	now  func() time.Time
	m    *metrics

	// appendMu is held shared by each Append from its WAL write until its
	// samples are in the head, and exclusively by WAL truncation while it
	// finds the oldest segment still needed, so no acknowledged sample can
	// sit in a deleted segment without being in the head.
	appendMu sync.RWMutex

	mu     sync.RWMutex // guards byRef, byHash, ix and pending
	byRef  map[uint64]*memSeries
	byHash map[uint64][]*memSeries // preferred ref (label hash) → series, collisions included
	ix     *index
	// pending are series not yet in the catalog; they are written there
	// before WAL truncation.
	pending []*memSeries

	wal     *wal.Log
	hist    *histStore // native histograms, exemplars, metadata (hist_store.go)
	cat     *catalog
	writers *writerCache
	fo      fileOptions

	numSeries   atomic.Int64
	headSeries  atomic.Int64
	headSamples atomic.Int64
	flushes     atomic.Int64
	flushedSmp  atomic.Int64

	replayedSamples int // at Open, for the metric

	flushCh   chan *memSeries
	stop      chan struct{}
	bg        sync.WaitGroup // background goroutines
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	truncMu   sync.Mutex // one WAL truncation at a time
	// lastTruncFlushes is the flush count at the last truncation attempt
	// of the flush loop (used by that goroutine only).
	lastTruncFlushes int64
	lock             *os.File // flock'ed LOCK file, released by Close

	rm *rotation.Metrics
	// deletedRefs are series the catalog says retention removed, with
	// when (ms). At replay, a WAL definition of one created before that is
	// the removed series' (skipped), and samples without a live
	// definition are dropped: they were expired.
	deletedRefs map[uint64]int64
	maintMu     sync.Mutex // one maintenance pass at a time
	// compacted are sealed files known compact (guarded by maintMu).
	compacted map[string]struct{}
}

// StoreStats is a snapshot of the store's state.
type StoreStats struct {
	Series         int   // series in the catalog
	HeadSeries     int   // series with unflushed samples
	HeadSamples    int64 // unflushed samples
	WALBytes       int64 // bytes in live WAL segments
	WALSegments    int   // live WAL segments
	OpenWriters    int   // open series file writers
	Flushes        int64 // series flushes since Open
	FlushedSamples int64 // samples flushed since Open
}

func (o *Options) setDefaults() {
	if o.WALSyncInterval <= 0 {
		o.WALSyncInterval = time.Second
	}
	if o.WALSegmentSize <= 0 {
		o.WALSegmentSize = 64 << 20
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
// directories, repairs torn tails of series files if the last run did not
// close cleanly, loads the catalog, replays the WAL into the head and starts
// the background flusher.
func Open(dir string, opts Options) (*Store, error) {
	opts.setDefaults()
	s := &Store{
		dir:     dir,
		opts:    opts,
		log:     opts.Logger,
		now:     opts.Now,
		byRef:   make(map[uint64]*memSeries),
		byHash:  make(map[uint64][]*memSeries),
		ix:      newIndex(),
		fo:      fileOptions{zstd: opts.FlushZstd, zstdMinRows: opts.FlushZstdMinRows, zstdLevel: opts.ZstdLevel, blockRows: opts.BlockRows},
		flushCh: make(chan *memSeries, 4096),
		stop:    make(chan struct{}),

		deletedRefs: make(map[uint64]int64),
		compacted:   make(map[string]struct{}),
	}
	for _, d := range []string{dir, filepath.Join(dir, walDirName), filepath.Join(dir, catalogDirName), filepath.Join(dir, seriesDirName)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	s.writers = newWriterCache(dir, opts.MaxOpenFiles, s.fo, opts.Logger)
	lock, err := lockDir(filepath.Join(dir, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.lock = lock
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()

	// A crash after this point leaves no marker, and the next Open checks
	// every series file's tail.
	clean := filepath.Join(dir, cleanMarkerName)
	wasClean := false
	if _, err := os.Stat(clean); err == nil {
		wasClean = true
		if err := os.Remove(clean); err != nil {
			return nil, fmt.Errorf("open store: remove clean marker: %w", err)
		}
		if err := syncDir(dir); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}

	s.cat, err = loadCatalog(filepath.Join(dir, catalogDirName), func(r seriesRec) error {
		ms := s.addSeriesLocked(r.Ref, r.Labels, r.Created)
		ms.walLogged, ms.inCatalog = true, true
		delete(s.deletedRefs, r.Ref)
		return nil
	}, func(d deletedRec) {
		if ms := s.byRef[d.Ref]; ms != nil {
			s.removeSeriesLocked(ms)
		}
		s.deletedRefs[d.Ref] = d.At
	})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if wasClean {
		if err := s.loadFlushState(); err != nil {
			s.cat.close()
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	files, err := s.scanSeriesFiles()
	if err != nil {
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := s.replayWAL(); err != nil {
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.attachFiles(files)
	if !wasClean {
		if err := s.repairTornFiles(); err != nil {
			s.cat.close()
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if err := s.dedupeReplayed(); err != nil {
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.wal, err = wal.Open(filepath.Join(dir, walDirName), wal.Options{SegmentSize: opts.WALSegmentSize})
	if err != nil {
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.m, err = newMetrics(s, opts.Registerer); err != nil {
		s.wal.Close()
		s.cat.close()
		return nil, err
	}
	if s.rm, err = rotation.NewMetrics(opts.Registerer); err != nil {
		s.wal.Close()
		s.cat.close()
		return nil, err
	}
	// Series known only from the WAL go to the catalog now, so the replayed
	// segments can be truncated as soon as their samples are flushed.
	if err := s.writePendingCatalog(); err != nil {
		s.wal.Close()
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	live := s.ix.live()
	all := make([]seriesRec, len(live))
	for i, ms := range live {
		all[i] = seriesRec{Ref: ms.ref, Created: ms.created, Labels: ms.lset}
	}
	var dels []deletedRec
	for ref, at := range s.deletedRefs {
		if s.byRef[ref] == nil {
			dels = append(dels, deletedRec{Ref: ref, At: at})
		}
	}
	if err := s.cat.compact(all, dels); err != nil {
		s.wal.Close()
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.m.replayedSamples.Add(float64(s.replayedSamples))
	if s.hist, err = openHistStore(s); err != nil {
		s.wal.Close()
		s.cat.close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	ok = true
	s.bg.Add(1)
	go s.flushLoop()
	if opts.MaintenanceInterval > 0 {
		s.bg.Add(1)
		go s.maintainLoop()
	}
	if opts.WALSync == SyncInterval {
		s.bg.Add(1)
		go s.syncLoop()
	}
	return s, nil
}

// addSeriesLocked registers a series under a known ref (from the catalog or
// the WAL); an existing ref is returned as is. Called with mu held or before
// the store is shared.
func (s *Store) addSeriesLocked(ref uint64, lset labels.Labels, created int64) *memSeries {
	if ms, ok := s.byRef[ref]; ok {
		return ms
	}
	ms := newMemSeries(ref, lset, created)
	s.byRef[ref] = ms
	h := hashLabels(appendCanonicalLabels(nil, lset))
	s.byHash[h] = append(s.byHash[h], ms)
	s.ix.add(ms)
	s.numSeries.Add(1)
	return ms
}

// removeSeriesLocked takes a series out of the maps and the index (after
// retention deleted its last file). Called with mu held or before the
// store is shared.
func (s *Store) removeSeriesLocked(ms *memSeries) {
	if s.byRef[ms.ref] != ms {
		return
	}
	delete(s.byRef, ms.ref)
	h := hashLabels(appendCanonicalLabels(nil, ms.lset))
	s.byHash[h] = slices.DeleteFunc(s.byHash[h], func(o *memSeries) bool { return o == ms })
	if len(s.byHash[h]) == 0 {
		delete(s.byHash, h)
	}
	s.pending = slices.DeleteFunc(s.pending, func(o *memSeries) bool { return o == ms })
	s.ix.remove(ms)
	s.numSeries.Add(-1)
}

// lookupLocked finds the series with exactly lset among those whose labels
// hash to h.
func (s *Store) lookupLocked(h uint64, lset labels.Labels) *memSeries {
	for _, ms := range s.byHash[h] {
		if labels.Equal(ms.lset, lset) {
			return ms
		}
	}
	return nil
}

// newRefLocked picks the ref of a new series with label hash h: h itself,
// or after a collision the next value not taken (0 is never used).
func (s *Store) newRefLocked(h uint64) uint64 {
	ref := h
	for {
		if _, taken := s.byRef[ref]; !taken && ref != 0 {
			return ref
		}
		ref++
	}
}

// scanSeriesFiles lists series files by ref (start times ascending) and
// removes leftover temporary files.
func (s *Store) scanSeriesFiles() (map[uint64][]int64, error) {
	root := filepath.Join(s.dir, seriesDirName)
	shards, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	files := make(map[uint64][]int64)
	for _, sh := range shards {
		if !sh.IsDir() {
			continue
		}
		sdir := filepath.Join(root, sh.Name())
		ents, err := os.ReadDir(sdir)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", sdir, err)
		}
		for _, e := range ents {
			name := e.Name()
			if filepath.Ext(name) == tmpSuffix {
				os.Remove(filepath.Join(sdir, name))
				continue
			}
			if ref, start, ok := parseSeriesFileName(name); ok {
				files[ref] = append(files[ref], start)
			}
		}
	}
	for ref, starts := range files {
		slices.Sort(starts)
		files[ref] = starts
	}
	return files, nil
}

// repairTornFiles cuts incomplete final frames after an unclean stop. Only
// series with samples replayed from the WAL can have one: a block is
// appended only while its samples are in the WAL, and the WAL lets go of
// them only after the file is synced. So the check costs what the WAL
// holds, not what the store holds. The store is the files' only writer.
func (s *Store) repairTornFiles() error {
	for _, ms := range s.ix.live() {
		if len(ms.head) == 0 || len(ms.files) == 0 {
			continue
		}
		kept := ms.files[:0]
		for _, start := range ms.files {
			path := seriesFilePath(s.dir, ms.ref, start)
			res, err := repairSeriesFile(path)
			if err != nil {
				return fmt.Errorf("repair series %016x file %s: %w", ms.ref, path, err)
			}
			switch res {
			case repairCut:
				s.log.Warn("cut incomplete final frame of series file", "path", path)
			case repairRemoved:
				s.log.Warn("removed series file interrupted while being created", "path", path)
				continue
			}
			kept = append(kept, start)
		}
		ms.files = kept
	}
	return nil
}

// attachFiles records each series' files; files without a known series
// (impossible unless the catalog and WAL were lost) are logged and ignored.
func (s *Store) attachFiles(files map[uint64][]int64) {
	for ref, starts := range files {
		ms := s.byRef[ref]
		if ms == nil {
			s.log.Warn("series file without a catalog entry, ignored", "ref", fmt.Sprintf("%016x", ref))
			continue
		}
		ms.files = starts
	}
}

// FlushAll flushes every head buffer into the series files, syncs them,
// brings the catalog up to date and truncates the WAL.
func (s *Store) FlushAll() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.flushAll()
}

func (s *Store) flushAll() error {
	// Flushes of different series are independent (their own flushMu and
	// writer); a few workers keep shutdown short when many series hold data.
	all := s.allSeries()
	var next atomic.Int64
	var emu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), 4); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(all) {
					return
				}
				if err := s.flushSeries(all[i]); err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Start a new segment so every flushed sample lies in a deletable one.
	if _, err := s.wal.Cut(); err != nil {
		return err
	}
	return s.truncateWAL()
}

// allSeries is a snapshot of every series.
func (s *Store) allSeries() []*memSeries {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ix.live()
}

// Close flushes the head, syncs and closes every file, stops the background
// flusher and marks the store cleanly closed. Appends and selects after
// Close return ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.bg.Wait()
		// Appends in flight finish before the final flush; new ones see
		// closed and return ErrClosed.
		s.appendMu.Lock()
		s.closed.Store(true)
		s.appendMu.Unlock()
		var errs []error
		if err := s.flushAll(); err != nil {
			errs = append(errs, err)
		}
		if err := s.hist.close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.writers.closeAll(); err != nil {
			errs = append(errs, err)
		}
		if err := s.writers.syncDirty(); err != nil {
			errs = append(errs, err)
		}
		if err := s.wal.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.cat.close(); err != nil {
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			if err := s.writeFlushState(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			if err := os.WriteFile(filepath.Join(s.dir, cleanMarkerName), nil, 0o644); err != nil {
				errs = append(errs, err)
			} else if err := syncDir(s.dir); err != nil {
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
		Series:         int(s.numSeries.Load()),
		HeadSeries:     int(s.headSeries.Load()),
		HeadSamples:    s.headSamples.Load(),
		WALBytes:       s.wal.Size(),
		WALSegments:    len(segs),
		OpenWriters:    s.writers.open(),
		Flushes:        s.flushes.Load(),
		FlushedSamples: s.flushedSmp.Load(),
	}
}

var _ Appender = (*Store)(nil)
var _ Querier = (*Store)(nil)

// ctxErr reports a cancelled context.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// abandon stops the store as a crash would, for tests: the background
// flusher stops and every file is closed without flushing the head, syncing
// or writing the clean marker. Data the OS already has stays, as after a
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
			if aw, ok := el.Value.(*writerEntry).w.(*actaWriter); ok {
				aw.w.Close()
			}
		}
		s.writers.ll.Init()
		clear(s.writers.m)
		s.writers.mu.Unlock()
		s.wal.Close()
		s.cat.close()
		s.lock.Close()
		s.closeErr = ErrClosed
	})
}
