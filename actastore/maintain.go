package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/acta-remote/acta-remote/rotation"
)

// Maintenance is the store's background work on sealed files: retention
// first (no point compacting what is about to go), then compaction. One
// pass runs at a time, in one goroutine, one file at a time, paced by
// Compaction.BytesPerSec, so ingestion keeps the disk and the CPU.

// MaintenanceResult reports one pass.
type MaintenanceResult struct {
	FilesDeleted  int
	BytesDeleted  int64 // allocated
	SeriesRemoved int
	Compacted     int   // files rewritten
	AlreadyDone   int   // sealed files found compact
	BytesBefore   int64 // allocated, of the files rewritten
	BytesAfter    int64
	Errors        int
}

func (s *Store) maintainLoop() {
	defer s.bg.Done()
	t := time.NewTicker(s.opts.MaintenanceInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.maintain(); err != nil {
				s.log.Error("maintenance", "err", err)
			}
		}
	}
}

// Maintain runs one maintenance pass now (retention, then compaction of
// every sealed file not yet compact).
func (s *Store) Maintain() (MaintenanceResult, error) {
	if s.closed.Load() {
		return MaintenanceResult{}, ErrClosed
	}
	return s.maintain()
}

func (s *Store) maintain() (MaintenanceResult, error) {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	var res MaintenanceResult
	began := time.Now()
	err := s.applyRetention(&res)
	if !s.opts.Compaction.Disabled {
		s.compactSealed(&res)
	}
	s.rm.LastRun.Set(float64(time.Now().UnixNano()) / 1e9)
	if res.FilesDeleted > 0 || res.Compacted > 0 || res.Errors > 0 || err != nil {
		s.log.Info("maintenance pass", "files_deleted", res.FilesDeleted, "bytes_deleted", res.BytesDeleted,
			"series_removed", res.SeriesRemoved, "compacted", res.Compacted, "bytes_before", res.BytesBefore,
			"bytes_after", res.BytesAfter, "errors", res.Errors, "took", time.Since(began))
	}
	return res, err
}

// fileOwner ties a retention candidate to its series.
type fileOwner struct {
	ms  *memSeries
	end int64
}

// applyRetention deletes what the retention policy plans, then removes
// series left without files (and without unflushed samples) from the index
// and the catalog.
func (s *Store) applyRetention(res *MaintenanceResult) error {
	ret := s.opts.Retention
	if ret.MaxAge <= 0 && ret.MaxBytes <= 0 {
		return nil
	}
	var files []rotation.File
	owners := make(map[uint64]*memSeries)
	for _, ms := range s.allSeries() {
		ms.mu.Lock()
		starts := slices.Clone(ms.files)
		busy := len(ms.head) > 0 || len(ms.flushing) > 0
		last, has := ms.lastFlushed.T, ms.hasLastFlushed
		ms.mu.Unlock()
		if len(starts) == 0 {
			owners[ms.ref] = ms
			continue
		}
		newest := seriesFilePath(s.dir, ms.ref, starts[len(starts)-1])
		if !busy && !has && ret.MaxAge > 0 {
			// Unknown after a crash for series without WAL samples: the
			// newest file's last block says it.
			smp, ok, err := seriesFileNewest(newest)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("retention: newest sample of series file", "path", newest, "err", err)
			}
			if ok {
				last, has = smp.T, true
				ms.mu.Lock()
				if !ms.hasLastFlushed {
					ms.lastFlushed, ms.hasLastFlushed = smp, true
				}
				ms.mu.Unlock()
			}
		}
		owners[ms.ref] = ms
		for i, st := range starts {
			f := rotation.File{Ref: ms.ref, Start: st, End: math.MaxInt64, Sealed: i < len(starts)-1}
			switch {
			case f.Sealed:
				f.End = starts[i+1]
			case !busy && has:
				f.End = last + 1
			}
			if ret.MaxBytes > 0 {
				if fi, err := os.Stat(seriesFilePath(s.dir, ms.ref, st)); err == nil {
					f.Bytes = rotation.Allocated(fi)
				}
			}
			files = append(files, f)
		}
	}
	if s.hist != nil {
		files = append(files, s.hist.retentionFiles(ret.MaxBytes > 0)...)
	}
	var other int64
	if ret.MaxBytes > 0 {
		other = dirAllocated(filepath.Join(s.dir, walDirName)) + dirAllocated(filepath.Join(s.dir, catalogDirName)) +
			dirAllocated(filepath.Join(s.dir, histDirName, walDirName))
	}
	plan := ret.Plan(files, s.now().UnixMilli(), other)
	var errs []error
	dirs := make(map[string]struct{})
	var emptied []*memSeries
	touched := make(map[*memSeries]bool)
	for _, d := range plan {
		ms := owners[d.Ref]
		if d.Kind == fileKindHistogram {
			n, gone, err := s.hist.deleteFile(d.File)
			if err != nil {
				errs = append(errs, err)
				res.Errors++
				continue
			}
			if !gone {
				continue
			}
			res.FilesDeleted++
			res.BytesDeleted += n
			s.rm.Deleted.WithLabelValues(d.Reason).Inc()
			s.rm.DeletedBytes.Add(float64(n))
			dirs[filepath.Dir(histFilePath(s.dir, d.Ref, d.Start))] = struct{}{}
			s.log.Debug("retention deleted histogram file", "ref", fmt.Sprintf("%016x", d.Ref), "start", d.Start, "reason", d.Reason, "bytes", n)
			if ms != nil && !touched[ms] {
				touched[ms] = true
				emptied = append(emptied, ms)
			}
			continue
		}
		n, gone, _, err := s.deleteFile(ms, d.File)
		if err != nil {
			errs = append(errs, err)
			res.Errors++
			continue
		}
		if !gone {
			continue
		}
		res.FilesDeleted++
		res.BytesDeleted += n
		s.rm.Deleted.WithLabelValues(d.Reason).Inc()
		s.rm.DeletedBytes.Add(float64(n))
		dirs[filepath.Join(s.dir, seriesDirName, shardName(ms.ref))] = struct{}{}
		s.log.Debug("retention deleted series file", "ref", fmt.Sprintf("%016x", ms.ref), "start", d.Start, "reason", d.Reason, "bytes", n)
		if !touched[ms] { // removeSeries checks what is left
			touched[ms] = true
			emptied = append(emptied, ms)
		}
	}
	for d := range dirs {
		if err := rotation.SyncDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(emptied) > 0 {
		n, err := s.removeSeries(emptied)
		res.SeriesRemoved += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteFile removes one planned file if the plan still holds: the file is
// still the series', and a newest file got nothing since (no unflushed
// samples, same newest sample). It returns the allocated bytes freed,
// whether the file went, and whether the series is left without files and
// samples.
func (s *Store) deleteFile(ms *memSeries, f rotation.File) (freed int64, gone, empty bool, err error) {
	ms.flushMu.Lock() // no flush may write the file meanwhile
	defer ms.flushMu.Unlock()
	ms.mu.Lock()
	i := slices.Index(ms.files, f.Start)
	newest := i == len(ms.files)-1
	stale := i < 0 || (newest && (f.Sealed || len(ms.head) > 0 || len(ms.flushing) > 0 ||
		!ms.hasLastFlushed || ms.lastFlushed.T+1 != f.End))
	ms.mu.Unlock()
	if stale {
		return 0, false, false, nil
	}
	path := seriesFilePath(s.dir, ms.ref, f.Start)
	if fi, err := os.Stat(path); err == nil {
		freed = rotation.Allocated(fi)
	}
	s.writers.forget(ms.ref, path)
	ms.fileMu.Lock()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		ms.fileMu.Unlock()
		return 0, false, false, fmt.Errorf("retention: delete series %016x file %s: %w", ms.ref, path, err)
	}
	ms.mu.Lock()
	if k := slices.Index(ms.files, f.Start); k >= 0 {
		ms.files = slices.Delete(ms.files, k, k+1)
	}
	delete(ms.fileMin, f.Start)
	empty = len(ms.files) == 0 && len(ms.head) == 0 && len(ms.flushing) == 0
	ms.mu.Unlock()
	ms.fileMu.Unlock()
	delete(s.compacted, path)
	return freed, true, empty, nil
}

// removeSeries takes series without files or samples out of the store and
// makes that durable in the catalog. Appends are paused while the index
// changes, so none can hold a removed series: a later sample of the same
// labels creates the series anew (a new definition in the WAL). truncMu
// orders the removal record after any pending definition of the series in
// the catalog.
func (s *Store) removeSeries(cands []*memSeries) (int, error) {
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	s.appendMu.Lock()
	// Histogram files and heads count too (appends are paused, so no
	// histogram arrives meanwhile; h.mu keeps a flush out).
	var histBusy map[*memSeries]bool
	if s.hist != nil {
		s.hist.mu.Lock()
		histBusy = make(map[*memSeries]bool)
		for _, ms := range cands {
			histBusy[ms] = s.hist.hasData(ms.ref)
		}
	}
	s.mu.Lock()
	at := s.now().UnixMilli()
	var dels []deletedRec
	var gone []uint64
	for _, ms := range cands {
		ms.mu.Lock()
		ok := !ms.removed && !histBusy[ms] && len(ms.files) == 0 && len(ms.head) == 0 && len(ms.flushing) == 0
		if ok {
			ms.removed = true
		}
		inCat := ms.inCatalog || ms.walLogged
		ms.mu.Unlock()
		if !ok {
			continue
		}
		s.removeSeriesLocked(ms)
		gone = append(gone, ms.ref)
		if inCat {
			dels = append(dels, deletedRec{Ref: ms.ref, At: at})
		}
		s.deletedRefs[ms.ref] = at
	}
	s.mu.Unlock()
	if s.hist != nil {
		s.hist.forgetLocked(gone)
		s.hist.mu.Unlock()
	}
	s.appendMu.Unlock()
	s.rm.SeriesRemoved.Add(float64(len(dels)))
	if err := s.cat.remove(dels); err != nil {
		// The series are gone in memory; after a restart they would come
		// back without files (no samples), until the next pass.
		return len(dels), fmt.Errorf("retention: %w", err)
	}
	return len(dels), nil
}

// compactSealed rewrites every sealed file not known compact, one at a
// time, paced.
func (s *Store) compactSealed(res *MaintenanceResult) {
	co := s.opts.Compaction
	opts := rotation.CompactOptions{BlockRows: co.BlockRows, ZstdLevel: co.ZstdLevel,
		Limiter: rotation.NewLimiter(co.BytesPerSec, s.stop)}
	type job struct {
		ms    *memSeries
		start int64
	}
	var jobs []job
	for _, ms := range s.allSeries() {
		ms.mu.Lock()
		for _, st := range ms.files[:max(len(ms.files)-1, 0)] {
			if _, done := s.compacted[seriesFilePath(s.dir, ms.ref, st)]; !done {
				jobs = append(jobs, job{ms, st})
			}
		}
		ms.mu.Unlock()
	}
	s.rm.PendingCompaction.Set(float64(len(jobs)))
	for i, j := range jobs {
		select {
		case <-s.stop:
			return
		default:
		}
		path := seriesFilePath(s.dir, j.ms.ref, j.start)
		began := time.Now()
		// Sealed: no flush writes it, and retention (which may delete it)
		// runs in this same pass. Readers need no lock: the rename swaps
		// whole files, each with the same samples.
		r, err := rotation.CompactFile(path, compactTmpPath(path), opts)
		s.rm.PendingCompaction.Set(float64(len(jobs) - i - 1))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			res.Errors++
			s.rm.Compactions.WithLabelValues("error").Inc()
			s.log.Error("compaction failed; file left as it was", "path", path, "err", err)
			s.compacted[path] = struct{}{} // not retried before the next start
			continue
		}
		s.compacted[path] = struct{}{}
		if r.Skipped {
			res.AlreadyDone++
			s.rm.Compactions.WithLabelValues("skipped").Inc()
			continue
		}
		res.Compacted++
		res.BytesBefore += r.AllocatedIn
		res.BytesAfter += r.AllocatedOut
		s.rm.Compactions.WithLabelValues("done").Inc()
		s.rm.CompactionSeconds.Observe(time.Since(began).Seconds())
		s.rm.CompactedIn.Add(float64(r.AllocatedIn))
		s.rm.CompactedOut.Add(float64(r.AllocatedOut))
		s.rm.DuplicatesDropped.Add(float64(r.RowsIn - r.RowsOut))
		s.log.Debug("compacted series file", "path", path, "rows", r.RowsOut, "blocks_before", r.BlocksIn,
			"blocks_after", r.BlocksOut, "bytes_before", r.AllocatedIn, "bytes_after", r.AllocatedOut)
	}
}

// dirAllocated sums the allocated bytes of the files directly in dir.
func dirAllocated(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			n += rotation.Allocated(fi)
		}
	}
	return n
}
