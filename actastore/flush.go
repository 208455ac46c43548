package actastore

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/prometheus/prometheus/model/labels"
)

// The flusher moves heads into series files: a series is flushed when a
// head of one of its kinds reaches its block size (Append queues it) or its
// oldest sample is older than the kind's head age (the periodic scan), the
// largest heads when the whole head grows past a share of its memory
// budget (flushLargest), and every series at Close. After flushes the WAL is truncated below what the
// files now hold durably.

// flushStripes is the number of flush locks. A series' flush lock
// serialises its flushes and the removal or rewrite of its newest file;
// striping them by ref keeps one lock per series out of memory.
const flushStripes = 1024

func (s *Store) flushLock(ms *memSeries) *sync.Mutex { return &s.flushMu[ms.ref%flushStripes] }

// flushLoop runs in the background: it flushes series queued by Commit,
// and on each tick flushes the series that are due and truncates the WAL
// below what is durable in series files.
func (s *Store) flushLoop() {
	defer s.bg.Done()
	interval := min(max(s.opts.MaxHeadAge/4, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case ms := <-s.hd.flushCh:
			if err := s.flushSeries(ms); err != nil {
				s.log.Error("flush series", "err", err)
			}
		case <-tick.C:
			s.flushDue()
			s.flushLargest()
			if err := s.maybeTruncateWAL(); err != nil {
				s.log.Error("truncate WAL", "err", err)
			}
		}
	}
}

// syncLoop fsyncs the WAL every WALSyncInterval under SyncInterval, where
// Commit does not: it bounds how much acknowledged data of every kind a
// crash can lose. It runs apart from flushLoop so a long flush never
// delays it.
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
				s.m.walErrors.Inc()
				s.log.Error("sync WAL", "err", err)
				continue
			}
			s.m.walFsync.Observe(time.Since(start).Seconds())
		}
	}
}

// dueLocked reports whether a series needs a flush now (mu held): a head
// of some kind too old or too large, or exemplars waiting too long.
func (s *Store) dueLocked(ms *memSeries, nowNs int64) bool {
	age := s.opts.MaxHeadAge.Nanoseconds()
	if trackDue(floats, &ms.floats, nowNs, age, s.fo) {
		return true
	}
	if h := ms.hists(); h != nil && trackDue(histograms, h, nowNs, age, s.fo) {
		return true
	}
	e := ms.ex()
	return e != nil && e.unflushed > 0 && nowNs-e.since >= exemplarAgeFactor*age
}

func trackDue[S any](k kind[S], tr *track[S], nowNs, age int64, fo fileOptions) bool {
	n := tr.head.len()
	return n > 0 && (nowNs-tr.headSince >= k.headAgeFactor()*age || n >= k.maxBlockRows(fo))
}

// flushDue flushes every series that is due.
func (s *Store) flushDue() {
	now := s.now().UnixNano()
	oldest := int64(0)
	defer func() { s.hd.oldestSince.Store(oldest) }()
	for ms := range s.reg.all() {
		select {
		case <-s.stop:
			return
		default:
		}
		ms.mu.Lock()
		due := s.dueLocked(ms, now)
		if since := ms.headSinceLocked(); since != 0 && (oldest == 0 || since < oldest) {
			oldest = since
		}
		ms.mu.Unlock()
		if due {
			if err := s.flushSeries(ms); err != nil {
				s.log.Error("flush series", "err", err)
			}
		}
	}
}

// headFlushShare: once the head holds more than 1/headFlushShare of
// Options.MaxHeadBytes (defaultHeadFlushBytes without a bound), the
// largest heads are flushed until it holds half of that. A replay of
// history at wire speed (a backfill, a Prometheus catching up) never
// reaches BlockRows or MaxHeadAge per series and would otherwise hold
// everything it sent in memory until the age ran out.
//
// headFlushSeriesBytes raises that threshold to this much per series with
// a non-empty head: many series each holding what MaxHeadAge leaves of a
// live scrape (about 200 bytes for 20 samples at 15 s) are not a replay,
// and flushing them writes blocks of a few samples each. At 1,000,000
// live series the flat 64 MiB had the flusher writing ten-sample blocks
// for minutes on end (26 bytes a sample on disk), beside the ingest.
// Below the caps the average head is at least this big when it fires, so
// the largest ones flushed are too.
//
// The caps keep the head flushed well before Commit refuses writes: the
// threshold stops at half of MaxHeadBytes, and a head holding more than
// half of MaxHeadSamples is flushed too, down to a quarter.
const (
	headFlushShare        = 16
	defaultHeadFlushBytes = 64 << 20
	headFlushSeriesBytes  = 512
)

// headFlushBytes is the head size above which flushLargest flushes
// (bytes, as hd.bytes counts them).
func (s *Store) headFlushBytes() int64 {
	limit := int64(defaultHeadFlushBytes)
	if s.opts.MaxHeadBytes > 0 {
		limit = s.opts.MaxHeadBytes / headFlushShare
	}
	limit = max(limit, s.hd.series.Load()*headFlushSeriesBytes)
	if s.opts.MaxHeadBytes > 0 {
		limit = min(limit, s.opts.MaxHeadBytes/2)
	}
	return limit
}

// headOverSamples reports whether the head holds more than
// MaxHeadSamples/div items (never without a bound).
func (s *Store) headOverSamples(div int64) bool {
	return s.opts.MaxHeadSamples > 0 && s.hd.samples.Load() > s.opts.MaxHeadSamples/div
}

// flushLargest flushes the series with the largest heads while the head
// holds more than headFlushBytes, down to half of it, or more than half of
// MaxHeadSamples items, down to a quarter.
func (s *Store) flushLargest() {
	limit := s.headFlushBytes()
	if s.hd.bytes.Load() <= limit && !s.headOverSamples(2) {
		return
	}
	type cand struct {
		ms           *memSeries
		bytes, items int64
	}
	var cs []cand
	for ms := range s.reg.all() {
		ms.mu.Lock()
		b := trackHeadBytes(floats, &ms.floats)
		n := int64(ms.floats.head.len())
		if h := ms.hists(); h != nil {
			b += trackHeadBytes(histograms, h)
			n += int64(h.head.len())
		}
		ms.mu.Unlock()
		if b > 0 {
			cs = append(cs, cand{ms, b, n})
		}
	}
	// A compressed head's bytes grow in steps (its chunk's allocation):
	// of equal bytes, the head holding more samples goes first.
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmpInt64(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmpInt64(b.items, a.items)
	})
	for _, c := range cs {
		if s.hd.bytes.Load() <= limit/2 && !s.headOverSamples(4) {
			break
		}
		select {
		case <-s.stop:
			return
		default:
		}
		if err := s.flushSeries(c.ms); err != nil {
			s.log.Error("flush series", "err", err)
		}
		// Counted as it goes: a run over many series takes a while.
		s.m.sizeFlushes.Inc()
	}
}

// trackHeadBytes is what a track's head costs (mu held).
func trackHeadBytes[S any](k kind[S], tr *track[S]) int64 {
	return tr.head.bytes(k)
}

// flushSeries writes every head of the series into its files, and its new
// exemplars into its exemplar file. The files are synced later (before WAL
// truncation, or when their writer is closed); until then the WAL still
// holds what they hold.
func (s *Store) flushSeries(ms *memSeries) error {
	mu := s.flushLock(ms)
	mu.Lock()
	defer mu.Unlock()
	// flushTrack looks for the histogram track under the series' mu: its
	// pointer shares seriesExtras with the exemplars, which a commit may
	// create meanwhile.
	err := errors.Join(flushTrack(s, floats, ms), flushTrack(s, histograms, ms))
	return errors.Join(err, s.flushExemplars(ms))
}

// flushTrack writes the series' head of kind k into its files as sorted
// blocks. The samples stay readable in the track's flushing buffer until
// the file holds them. On failure what was not written goes back into the
// head and is retried later. Called with the series' flush lock held.
func flushTrack[S any](s *Store, k kind[S], ms *memSeries) error {
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil || tr.head.len() == 0 {
		if tr != nil {
			tr.queued = false
		}
		ms.mu.Unlock()
		return nil
	}
	tr.queued = false
	// The flushing samples keep the head's bytes in the accounting until
	// the file holds them.
	headBytes := tr.head.bytes(k)
	smps := tr.head.take(k)
	c := tr.coldState()
	c.flushing, c.flushingSeg = smps, tr.headSeg
	sts := tr.headStarts()
	if sts != nil {
		c.starts.flushing, c.starts.head = sts, nil
	}
	if !ms.hasHeadLocked() {
		s.hd.series.Add(-1)
	}
	ms.mu.Unlock()

	began := time.Now()
	written, path, err := writeRotated(s, k, ms, smps, sts)
	ms.mu.Lock()
	if written > 0 {
		flushed(k, tr, smps[:written])
	}
	if err == nil {
		c.flushing = nil
		if sts != nil {
			c.starts.flushing = nil
			s.hd.added(0, -int64(len(sts))*startBytes)
		}
		ms.mu.Unlock()
		accountFlushed(s, written, headBytes)
		s.hd.flushes.Add(1)
		s.m.flushDuration.Observe(time.Since(began).Seconds())
		return nil
	}
	// Only what was not written goes back: a rotated flush may have filled
	// one file before failing on the next.
	rest := smps[written:]
	idle := !ms.hasHeadLocked()
	seg, since := c.flushingSeg, tr.headSince
	if tr.head.len() > 0 {
		seg = min(seg, tr.headSeg)
	} else {
		since = s.now().UnixNano()
	}
	// The head takes the unwritten samples back, with those that arrived
	// during the flush; the accounting moves from what the head held
	// before the flush to what it holds now.
	newerBytes := tr.head.bytes(k)
	newer := tr.head.take(k)
	c.flushing = nil
	tr.head.build(k, slices.Clone(rest))
	for _, smp := range newer {
		insert(k, tr, smp, seg, 0, false)
	}
	nowBytes := tr.head.bytes(k)
	if sts != nil {
		// The start timestamps go back with their samples (those of the
		// written ones are dropped at the next flush, matched by T).
		newerSts := c.starts.head
		c.starts.head, c.starts.flushing = sts, nil
		before := len(sts) + len(newerSts)
		addStarts(tr, newerSts)
		s.hd.added(0, -int64(before-len(c.starts.head))*startBytes)
	}
	tr.headSeg, tr.headSince = seg, since
	if idle && ms.hasHeadLocked() {
		s.hd.series.Add(1)
	}
	ms.mu.Unlock()
	s.hd.bytes.Add(nowBytes - newerBytes)
	accountFlushed(s, written, headBytes)
	s.m.flushErrors.Inc()
	return fmt.Errorf("flush %s series %016x (%d samples) to %s: %w", k.name(), ms.ref, len(rest), path, err)
}

// accountFlushed takes n flushed samples out of the head's sample count
// and bytes, what the head they were taken from cost (headBuf.bytes).
func accountFlushed(s *Store, n int, bytes int64) {
	s.hd.bytes.Add(-bytes)
	if n == 0 {
		return
	}
	s.hd.samples.Add(-int64(n))
	s.hd.flushedSmp.Add(int64(n))
	s.m.flushedSamples.Add(float64(n))
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
	// Flushes of different series are independent (their own flush lock
	// and writers); a few workers keep shutdown short when many series hold
	// data.
	all := s.reg.live()
	var next atomic.Int64
	var emu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), 4); w++ {
		wg.Go(func() {
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
		})
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

// maybeTruncateWAL truncates when there is a closed WAL segment and some
// flush happened since the last attempt: without a flush the oldest needed
// segment cannot have moved, and the scan pauses commits.
func (s *Store) maybeTruncateWAL() error {
	segs, err := wal.Segments(filepath.Join(s.dir, walDirName))
	if err != nil {
		return err
	}
	if len(segs) < 2 {
		return nil
	}
	if f := s.hd.flushes.Load(); f == s.lastTruncFlushes {
		return nil
	} else {
		s.lastTruncFlushes = f
	}
	return s.truncateWAL()
}

// truncateWAL deletes the WAL segments whose every record is durable
// elsewhere: samples and exemplars in series files, metadata in its file,
// series definitions in the catalog. Order matters: find the oldest
// segment still needed (with commits paused, so nothing is half way
// between WAL and head), write metadata, sync the series files written
// since the last truncation, sync the catalog, and only then delete.
func (s *Store) truncateWAL() error {
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	s.appendMu.Lock()
	oldest := int32(-1) // the oldest segment a head needs; -1: none
	for ms := range s.reg.all() {
		ms.mu.Lock()
		if seg := ms.walSegNeededLocked(); seg >= 0 && (oldest < 0 || seg < oldest) {
			oldest = seg
		}
		ms.mu.Unlock()
	}
	keep := int32(s.wal.Current())
	if oldest >= 0 {
		keep = min(keep, oldest)
	}
	s.appendMu.Unlock()
	segs, err := wal.Segments(filepath.Join(s.dir, walDirName))
	if err != nil {
		return err
	}
	dropCkpt := s.ckpt >= 0 && (oldest < 0 || int(oldest) > s.ckpt)
	if !dropCkpt && (len(segs) == 0 || int32(segs[0]) >= keep) {
		return nil
	}
	if err := s.md.flush(); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	if err := s.writers.syncDirty(); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	if err := s.writePendingCatalog(); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	if dropCkpt {
		if err := s.dropCheckpointLocked(); err != nil {
			return fmt.Errorf("truncate WAL: %w", err)
		}
	}
	if err := s.wal.TruncateBefore(int(keep)); err != nil {
		return fmt.Errorf("truncate WAL: %w", err)
	}
	s.m.walTruncations.Inc()
	return nil
}

// writePendingCatalog makes every series not yet in the catalog durable
// there.
func (s *Store) writePendingCatalog() error {
	r := s.reg
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	var sb labels.ScratchBuilder
	err := s.cat.add(len(pending), func(i int) seriesRec {
		ms := pending[i]
		return seriesRec{Ref: ms.ref, Created: ms.created, Labels: r.labels(&sb, ms)}
	})
	if err != nil {
		r.mu.Lock()
		r.pending = append(pending, r.pending...)
		r.mu.Unlock()
		return err
	}
	for _, ms := range pending {
		ms.mu.Lock()
		ms.inCatalog = true
		ms.mu.Unlock()
	}
	return nil
}
