package actastore

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/acta-remote/acta-remote/actastore/wal"
)

// flushLoop runs in the background: it flushes series queued by Append when
// their head reached BlockRows, and on each tick flushes heads older than
// MaxHeadAge (or over BlockRows) and truncates the WAL below what is durable
// in series files.
func (s *Store) flushLoop() {
	defer s.bg.Done()
	interval := min(max(s.opts.MaxHeadAge/4, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case ms := <-s.flushCh:
			if err := s.flushSeries(ms); err != nil {
				s.log.Error("flush series", "err", err)
			}
		case <-tick.C:
			s.flushDue()
			if err := s.maybeTruncateWAL(); err != nil {
				s.log.Error("truncate WAL", "err", err)
			}
		}
	}
}

// syncLoop fsyncs the WAL every WALSyncInterval under SyncInterval, where
// Append does not: it bounds how much acknowledged data a crash can lose. It
// runs apart from flushLoop so a long flush never delays it.
func (s *Store) syncLoop() {
	defer s.bg.Done()
	t := time.NewTicker(s.opts.WALSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			start := time.Now()
			if err := s.wal.Sync(s.wal.End()); err != nil {
				s.log.Error("sync WAL", "err", err)
				continue
			}
			s.m.walFsync.Observe(time.Since(start).Seconds())
		}
	}
}

// flushDue flushes every series whose head is too old or too large.
func (s *Store) flushDue() {
	now := s.now().UnixNano()
	maxAge := s.opts.MaxHeadAge.Nanoseconds()
	for _, ms := range s.allSeries() {
		select {
		case <-s.stop:
			return
		default:
		}
		ms.mu.Lock()
		due := len(ms.head) > 0 && (now-ms.headSince >= maxAge || len(ms.head) >= s.opts.BlockRows)
		ms.mu.Unlock()
		if due {
			if err := s.flushSeries(ms); err != nil {
				s.log.Error("flush series", "err", err)
			}
		}
	}
}

// flushSeries writes the series' head into its file as sorted blocks of at
// most BlockRows rows. The samples stay readable in ms.flushing until the
// file holds them. The file is synced later (before WAL truncation, or when
// its writer is closed); until then the WAL still holds the samples. On
// failure the samples go back into the head and are retried later.
func (s *Store) flushSeries(ms *memSeries) error {
	ms.flushMu.Lock()
	defer ms.flushMu.Unlock()
	ms.mu.Lock()
	ms.queued = false
	if len(ms.head) == 0 {
		ms.mu.Unlock()
		return nil
	}
	smps := ms.head
	ms.flushing, ms.flushingSeg = smps, ms.headSeg
	ms.head = nil
	ms.mu.Unlock()
	s.headSeries.Add(-1)

	began := time.Now()
	written, path, err := s.writeRotated(ms, smps)
	if written > 0 {
		s.flushedPart(ms, smps[:written])
	}
	if err != nil {
		s.m.flushErrors.Inc()
		// Only what was not written goes back: a rotated flush may have
		// filled one file before failing on the next.
		rest := smps[written:]
		ms.mu.Lock()
		wasEmpty := len(ms.head) == 0
		seg := min(ms.flushingSeg, ms.headSeg)
		if wasEmpty {
			seg = ms.flushingSeg
		}
		head := ms.head
		ms.head, ms.flushing = rest, nil
		for _, smp := range head {
			ms.insertLocked(smp, seg, 0)
		}
		ms.headSeg = seg
		if wasEmpty {
			ms.headSince = s.now().UnixNano()
		}
		ms.mu.Unlock()
		if wasEmpty {
			s.headSeries.Add(1)
		}
		return fmt.Errorf("flush series %016x (%d samples) to %s: %w", ms.ref, len(rest), path, err)
	}
	ms.mu.Lock()
	ms.flushing = nil
	ms.mu.Unlock()
	s.flushes.Add(1)
	s.m.flushDuration.Observe(time.Since(began).Seconds())
	return nil
}

// flushedPart accounts samples now held by a series file.
func (s *Store) flushedPart(ms *memSeries, smps []Sample) {
	ms.mu.Lock()
	last := smps[len(smps)-1]
	if !ms.hasLastFlushed || last.T >= ms.lastFlushed.T {
		ms.lastFlushed, ms.hasLastFlushed = last, true
	}
	ms.mu.Unlock()
	s.headSamples.Add(-int64(len(smps)))
	s.flushedSmp.Add(int64(len(smps)))
	s.m.flushedSamples.Add(float64(len(smps)))
}

// writeBlocks appends smps (sorted) to the series file as blocks of at most
// BlockRows rows. Called with ms.flushMu held.
func (s *Store) writeBlocks(ms *memSeries, path string, start int64, create bool, smps []Sample) error {
	ms.fileMu.Lock()
	defer ms.fileMu.Unlock()
	e, err := s.writers.acquire(ms.ref, path, create)
	if err != nil {
		return err
	}
	if create {
		// The file exists from now on, whatever happens to the append.
		ms.mu.Lock()
		ms.files = append(ms.files, start)
		ms.mu.Unlock()
	}
	defer s.writers.release(e)
	ts := make([]int64, 0, min(len(smps), s.opts.BlockRows))
	vs := make([]float64, 0, cap(ts))
	for len(smps) > 0 {
		n := min(len(smps), s.opts.BlockRows)
		ts, vs = ts[:0], vs[:0]
		for _, smp := range smps[:n] {
			ts = append(ts, smp.T)
			vs = append(vs, smp.V)
		}
		if err := e.w.appendBlock(ts, vs); err != nil {
			e.broken = true
			return err
		}
		e.dirty = true
		smps = smps[n:]
	}
	return nil
}

// maybeTruncateWAL truncates when there is a closed WAL segment and some
// flush happened since the last attempt: without a flush the oldest needed
// segment cannot have moved, and the scan pauses appends.
func (s *Store) maybeTruncateWAL() error {
	segs, err := wal.Segments(filepath.Join(s.dir, walDirName))
	if err != nil {
		return err
	}
	if len(segs) < 2 {
		return nil
	}
	if f := s.flushes.Load(); f == s.lastTruncFlushes {
		return nil
	} else {
		s.lastTruncFlushes = f
	}
	return s.truncateWAL()
}

// truncateWAL deletes the WAL segments whose samples are all durable in
// series files and whose series are all in the catalog. Order matters: find
// the oldest segment still needed (with appends paused, so none is half
// way between WAL and head), sync the series files written since the last
// truncation, sync the catalog, and only then delete.
func (s *Store) truncateWAL() error {
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	s.appendMu.Lock()
	keep := s.wal.Current()
	for _, ms := range s.allSeries() {
		ms.mu.Lock()
		if seg := ms.walSegNeededLocked(); seg >= 0 && seg < keep {
			keep = seg
		}
		ms.mu.Unlock()
	}
	s.appendMu.Unlock()
	segs, err := wal.Segments(filepath.Join(s.dir, walDirName))
	if err != nil {
		return err
	}
	if len(segs) == 0 || segs[0] >= keep {
		return nil
	}
	if err := s.writers.syncDirty(); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	if err := s.writePendingCatalog(); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	if err := s.wal.TruncateBefore(keep); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	s.m.walTruncations.Inc()
	return nil
}

// writePendingCatalog makes every series not yet in the catalog durable
// there.
func (s *Store) writePendingCatalog() error {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	recs := make([]seriesRec, len(pending))
	for i, ms := range pending {
		recs[i] = seriesRec{Ref: ms.ref, Created: ms.created, Labels: ms.lset}
	}
	if err := s.cat.add(recs); err != nil {
		s.mu.Lock()
		s.pending = append(pending, s.pending...)
		s.mu.Unlock()
		return err
	}
	for _, ms := range pending {
		ms.mu.Lock()
		ms.inCatalog = true
		ms.mu.Unlock()
	}
	return nil
}
