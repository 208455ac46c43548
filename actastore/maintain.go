package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/acta-remote/acta-remote/durable"
	"github.com/acta-remote/acta-remote/rotation"
)

// Maintenance is the store's background work on sealed files: retention
// first (no point compacting what is about to go), then tier merges, then
// compaction of the sealed files no merge rewrote. One
// pass runs at a time, in one goroutine, one file at a time, paced by
// Compaction.BytesPerSec, so ingestion keeps the disk and the CPU.

// MaintenanceResult reports one pass.
type MaintenanceResult struct {
	FilesDeleted  int
	BytesDeleted  int64 // allocated
	SeriesRemoved int
	Compacted     int   // files rewritten
	Merged        int   // tier merges done
	MergedFiles   int   // sealed files they replaced
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
	s.maint.mu.Lock()
	defer s.maint.mu.Unlock()
	var res MaintenanceResult
	began := time.Now()
	err := s.applyRetention(&res)
	if !s.opts.Compaction.Disabled {
		s.mergeSealed(&res) // tiermerge.go
		s.compactSealed(&res)
	}
	s.rm.LastRun.Set(float64(time.Now().UnixNano()) / 1e9)
	if res.FilesDeleted > 0 || res.Compacted > 0 || res.Merged > 0 || res.Errors > 0 || err != nil {
		s.log.Info("maintenance pass", "files_deleted", res.FilesDeleted, "bytes_deleted", res.BytesDeleted,
			"series_removed", res.SeriesRemoved, "compacted", res.Compacted, "merged", res.Merged,
			"merged_files", res.MergedFiles, "bytes_before", res.BytesBefore,
			"bytes_after", res.BytesAfter, "errors", res.Errors, "took", time.Since(began))
	}
	return res, err
}

// applyRetention deletes what the retention policy plans, files of every
// kind together, then removes series left without files (and without
// unflushed data) from the index and the catalog.
func (s *Store) applyRetention(res *MaintenanceResult) error {
	ret := s.opts.Retention
	if ret.MaxAge <= 0 && ret.MaxBytes <= 0 {
		return nil
	}
	sizes := ret.MaxBytes > 0
	var files []rotation.File
	owners := make(map[uint64]*memSeries)
	for ms := range s.reg.all() {
		owners[ms.ref] = ms
		files = append(files, retentionFiles(s, floats, ms, sizes)...)
		files = append(files, retentionFiles(s, histograms, ms, sizes)...)
	}
	var other int64
	if sizes {
		other = dirAllocated(filepath.Join(s.dir, walDirName)) + dirAllocated(filepath.Join(s.dir, catalogDirName))
	}
	plan := ret.Plan(files, s.now().UnixMilli(), other)
	var errs []error
	dirs := make(map[string]struct{})
	var touched []*memSeries
	seen := make(map[*memSeries]bool)
	for _, d := range plan {
		ms := owners[d.Ref]
		if ms == nil {
			continue
		}
		var n int64
		var gone bool
		var err error
		var path string
		switch kindID(d.Kind) {
		case kindHistogram:
			n, gone, err = deleteFile(s, histograms, ms, d.File)
			path = filePath(s.dir, histograms, ms.ref, d.Start)
		default:
			n, gone, err = deleteFile(s, floats, ms, d.File)
			path = filePath(s.dir, floats, ms.ref, d.Start)
		}
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
		dirs[filepath.Dir(path)] = struct{}{}
		s.log.Debug("retention deleted series file", "path", path, "reason", d.Reason, "bytes", n)
		if !seen[ms] { // removeSeries checks what is left
			seen[ms] = true
			touched = append(touched, ms)
		}
	}
	for d := range dirs {
		if err := durable.SyncDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(touched) > 0 {
		n, err := s.removeSeries(touched)
		res.SeriesRemoved += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// retentionFiles lists a series' files of kind k for the retention plan.
// End is the next file's start for a sealed file, the newest sample + 1 for
// a newest file whose track buffers nothing, MaxInt64 otherwise.
func retentionFiles[S any](s *Store, k kind[S], ms *memSeries, sizes bool) []rotation.File {
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil || len(tr.files()) == 0 {
		ms.mu.Unlock()
		return nil
	}
	starts := slices.Clone(tr.files())
	busy := tr.busy()
	last, known := tr.fileMax()
	ms.mu.Unlock()
	if !busy && !known && s.opts.Retention.MaxAge > 0 {
		// Unknown after a crash for series without WAL samples (and for
		// histograms after any restart): the newest file's block bounds
		// say it.
		path := filePath(s.dir, k, ms.ref, starts[len(starts)-1])
		_, hi, ok, err := readFile(k, s.readers, path, 0, 0, nil)
		if testHookRetentionRead != nil {
			testHookRetentionRead(ms.ref)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("retention: newest sample of series file", "path", path, "err", err)
		}
		if err == nil {
			ms.mu.Lock()
			fs := tr.files()
			if len(fs) == 0 {
				// A deletion took every file meanwhile: none to plan
				// (TestRetentionReadRacesDeleteSeries).
				ms.mu.Unlock()
				return nil
			}
			if _, known := tr.fileMax(); fs[len(fs)-1] == starts[len(starts)-1] && !known {
				fmax := noTime
				if ok {
					fmax = hi
					tr.maxT = max(tr.maxT, hi)
				}
				tr.setFileMax(fmax, true)
			}
			last, known = tr.fileMax()
			ms.mu.Unlock()
		}
	}
	out := make([]rotation.File, 0, len(starts))
	for i, st := range starts {
		f := rotation.File{Ref: ms.ref, Start: st, End: math.MaxInt64, Sealed: i < len(starts)-1, Kind: int(k.id())}
		switch {
		case f.Sealed:
			f.End = starts[i+1]
		case !busy && known && last != noTime:
			f.End = last + 1
		}
		if sizes {
			if fi, err := os.Stat(filePath(s.dir, k, ms.ref, st)); err == nil {
				f.Bytes = rotation.Allocated(fi)
			}
		}
		out = append(out, f)
	}
	return out
}

// testHookRetentionRead, set by tests only, runs right after retentionFiles
// read a newest file's bounds without the series' mu: a test deletes the
// series' files there, as a DeleteSeries racing the pass would.
var testHookRetentionRead func(ref uint64)

// deleteFile removes one planned file if the plan still holds: the file is
// still the track's, and a newest file got nothing since (nothing
// buffered, same newest sample). It returns the allocated bytes freed and
// whether the file went.
func deleteFile[S any](s *Store, k kind[S], ms *memSeries, f rotation.File) (freed int64, gone bool, err error) {
	if s.tier != nil {
		// With a tier only local copies go, of files uploaded already.
		return tierRetentionDrop(s, k, ms, f.Start)
	}
	mu := s.flushLock(ms) // no flush may write the file meanwhile
	mu.Lock()
	defer mu.Unlock()
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil {
		ms.mu.Unlock()
		return 0, false, nil
	}
	i := slices.Index(tr.files(), f.Start)
	newest := i == len(tr.files())-1
	fmax, fknown := tr.fileMax()
	stale := i < 0 || (newest && (f.Sealed || tr.busy() || !fknown || fmax == noTime || fmax+1 != f.End))
	ms.mu.Unlock()
	if stale {
		return 0, false, nil
	}
	path := filePath(s.dir, k, ms.ref, f.Start)
	freed, err = s.removeFile(k, ms, path)
	if err != nil {
		return 0, false, fmt.Errorf("retention: %w", err)
	}
	ms.mu.Lock()
	dropFile(tr, f.Start)
	ms.mu.Unlock()
	return freed, true, nil
}

// removeFile deletes one series file (the series' flush lock held): its
// writer is closed first, so a later file of the same name is never written
// through a descriptor of the deleted one.
func (s *Store) removeFile(k interface{ id() kindID }, ms *memSeries, path string) (int64, error) {
	var freed int64
	if fi, err := os.Stat(path); err == nil {
		freed = rotation.Allocated(fi)
	}
	s.writers.forget(fileKey{ref: ms.ref, kind: k.id()}, path)
	s.readers.invalidate(path)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("delete series %016x file %s: %w", ms.ref, path, err)
	}
	// Again: a read between the two may have kept the chunks of the file
	// just removed (xorcache_kept.go).
	s.readers.invalidate(path)
	s.maint.forget(path)
	return freed, nil
}

// dropFile takes a deleted file out of the track (mu held). Without its
// newest file the track no longer knows its newest flushed sample.
func dropFile[S any](tr *track[S], start int64) {
	k := slices.Index(tr.files(), start)
	if k < 0 {
		return
	}
	newest := k == len(tr.files())-1
	tr.setFiles(slices.Delete(tr.files(), k, k+1))
	if c := tr.cold; c != nil && k < len(c.mins) {
		c.mins = slices.Delete(c.mins, k, k+1)
	}
	if newest {
		tr.clearLast()
		tr.setFileMax(noTime, len(tr.files()) == 0)
	}
}

// removeSeries takes series without files or unflushed data out of the
// store and makes that durable in the catalog. Commits are paused while the
// index changes, so none can hold a removed series: a later sample of the
// same labels creates the series anew (a new definition in the WAL).
// truncMu orders the removal record after any pending definition of the
// series in the catalog.
func (s *Store) removeSeries(cands []*memSeries) (int, error) {
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	s.appendMu.Lock()
	r := s.reg
	r.mu.Lock()
	at := s.now().UnixMilli()
	var dels []deletedRec
	var gone []*memSeries
	for _, ms := range cands {
		ms.mu.Lock()
		ok := !ms.removed && !ms.hasFilesLocked() && !ms.busyLocked()
		if ok {
			ms.removed = true
		}
		inCat := ms.inCatalog || ms.walLogged
		ms.mu.Unlock()
		if !ok {
			continue
		}
		r.removeLocked(ms)
		gone = append(gone, ms)
		if inCat {
			dels = append(dels, deletedRec{Ref: ms.ref, At: at})
		}
		r.deleted[ms.ref] = at
	}
	r.mu.Unlock()
	s.appendMu.Unlock()
	for _, ms := range gone {
		p := exemplarFilePath(s.dir, ms.ref)
		s.writers.forget(fileKey{ref: ms.ref, kind: exemplarFileKind}, p)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("cannot delete exemplar file of a removed series", "path", p, "err", err)
		}
	}
	s.rm.SeriesRemoved.Add(float64(len(dels)))
	if err := s.cat.remove(dels); err != nil {
		// The series are gone in memory; after a restart they would come
		// back without files (no samples), until the next pass.
		return len(dels), fmt.Errorf("retention: %w", err)
	}
	return len(dels), nil
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
