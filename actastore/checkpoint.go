package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/durable"
)

// Head checkpoints (docs/format/wal.md, "Checkpoint"). A head that keeps
// samples for long (large BlockRows and MaxHeadAge, a backfill) keeps
// every WAL segment since its oldest sample, and a restart after kill -9
// replays all of them: about 23 bytes and a head insert per sample. Once
// the WAL holds Options.WALCheckpointBytes, the heads are written to
// wal/checkpoint.<C>, a file of WAL records holding what every head holds
// as of WAL segment C (float heads as their XOR chunks, about 1-2 bytes a
// sample, restored by a copy), and the segments below C are deleted. A
// restart reads the checkpoint, then the segments from C on.
//
// Consistency: C is cut with appendMu held exclusively, so every commit
// logged below C is in the heads and none logged from C on is yet; the
// heads are then copied as they were at the cut while commits go on
// (checkpointCopy), so the checkpoint holds exactly what the commits
// logged below C put in the heads. truncMu is held throughout, so no
// deletion runs meanwhile. Before the file
// is renamed into place, everything else the deleted segments held is
// made durable as WAL truncation does: metadata, the series files flushes
// wrote, and the catalog (every series the checkpoint names is in it).
// Open then deletes the segments below the newest checkpoint before
// replaying. A checkpoint is deleted when a truncation finds no head
// holding anything from below C (truncateWAL), at the latest at Close.

// Checkpoint record types (docs/format/wal.md). Frozen.
const (
	// recHeadChunks: float heads' XOR chunks (headbuf.go; the float kind
	// is the one whose head has a chunk): type=11 | count uvarint |
	// count × (ref uint64 LE | newest timestamp varint | n uvarint | n
	// bytes of a Prometheus XOR chunk).
	recHeadChunks byte = 11
	// recCheckpointEnd: the last record of a checkpoint: type=12 |
	// segment uvarint | records before it uvarint.
	recCheckpointEnd byte = 12
)

const (
	checkpointPrefix = "checkpoint."
	// checkpointGrowth: a checkpoint is taken only once the WAL after the
	// last one holds as many bytes as it, so checkpoints write at most what
	// the WAL writes, however large the heads, and a restart reads at most
	// the checkpoint and as much WAL after it (or WALCheckpointBytes).
	// Measured (acta-bench, 2026-12-03; kill -9 scenario medians against
	// Prometheus's replay; write amplification of the default ingest, 9.3
	// without checkpoints): 16 MiB and 1: 0.18x, 14.5; 32 MiB and 1: 0.37x, 13.5;
	// 64 MiB and 2: 0.46x, 11.5. The restart is what checkpoints are for.
	checkpointGrowth = 1
)

// checkpointTick is how often checkpointLoop looks at the WAL's size (a
// variable for the crash test's child).
var checkpointTick = 100 * time.Millisecond

func checkpointName(seg int) string { return checkpointPrefix + wal.SegmentName(seg) }

// listCheckpoints returns the segments of the checkpoints in the WAL
// directory, ascending, and the names of unfinished ones (.tmp).
func listCheckpoints(dir string) (segs []int, tmps []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), checkpointPrefix)
		if !ok {
			continue
		}
		if strings.HasSuffix(name, ".tmp") {
			tmps = append(tmps, e.Name())
			continue
		}
		if seg, err := strconv.Atoi(name); err == nil && len(name) == 8 && seg >= 0 {
			segs = append(segs, seg) // ReadDir sorts by name: ascending
		}
	}
	return segs, tmps, nil
}

// checkpointLoop checks the WAL's size every checkpointTick. Apart from
// the flush loop, whose tick is up to a second and scans every series: a
// backfill or a restart's catch-up writes tens of MB a second.
func (s *Store) checkpointLoop() {
	defer s.bg.Done()
	t := time.NewTicker(checkpointTick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.maybeCheckpoint(); err != nil {
				s.log.Error("WAL checkpoint", "err", err)
			}
		}
	}
}

// maybeCheckpoint writes a checkpoint when the WAL has grown past
// Options.WALCheckpointBytes and checkpointGrowth times the last one.
func (s *Store) maybeCheckpoint() error {
	limit := s.opts.WALCheckpointBytes
	if limit <= 0 {
		return nil
	}
	size := s.wal.Size()
	if size < limit || size < checkpointGrowth*s.ckptBytes.Load() {
		return nil
	}
	return s.checkpoint()
}

// checkpoint writes the heads to a new checkpoint and deletes the WAL
// segments and the checkpoint it replaces.
func (s *Store) checkpoint() error {
	s.truncMu.Lock()
	defer s.truncMu.Unlock()
	start := time.Now()
	s.appendMu.Lock()
	seg, err := s.wal.Cut()
	var c *checkpointCopy
	if err == nil && seg > s.ckpt { // else nothing was logged since the last one
		s.ckptEpoch++
		c = &checkpointCopy{epoch: s.ckptEpoch}
		s.ckptCopy.Store(c)
	}
	s.appendMu.Unlock()
	paused := time.Since(start)
	if err != nil {
		return fmt.Errorf("checkpoint: cut WAL: %w", err)
	}
	if c == nil {
		return nil
	}
	if testHookAfterCut != nil {
		testHookAfterCut()
	}
	dir := filepath.Join(s.dir, walDirName)
	f, err := s.copyHeads(c, filepath.Join(dir, checkpointName(seg)), seg)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// What else the segments below seg held, durable before the file is.
	err = s.md.flush()
	if err == nil {
		err = s.writers.syncDirty()
	}
	if err == nil {
		err = s.writePendingCatalog()
	}
	if err != nil {
		f.w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	size, err := f.w.Commit()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	s.ckpt = seg
	s.ckptBytes.Store(size)
	if err := s.wal.TruncateBefore(seg); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// The ones before (not synced: Open keeps the newest and removes the
	// others).
	if err := removeCheckpoints(dir, seg); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	s.m.checkpoints.Inc()
	s.m.checkpointBytes.Set(float64(size))
	s.ckptPaused = paused
	s.log.Debug("WAL checkpoint", "segment", seg, "bytes", size, "samples", c.bodies.samples, "commits_paused", paused, "took", time.Since(start))
	return nil
}

// testHookAfterCut, set by tests only, runs after a checkpoint's cut,
// before its walk over the series: commits then change heads not copied
// yet.
var testHookAfterCut func()

// checkpointCopy is a checkpoint copying every head as it was at its cut
// (segment C) while commits go on: each head is copied once, by the
// checkpoint's walk over the series or, first, by a commit about to change
// it (copyBefore), so that the checkpoint holds exactly what the commits
// logged below C put in the heads and nothing logged from C on (a sample
// in both would make replay look it up in the restored chunk, a scan of
// the chunk per sample). Flushes need not copy: what they take from a head
// is in a series file, synced before the checkpoint is committed.
// Deletions and series removals wait for truncMu, which the checkpoint
// holds. A series created after the cut held nothing at it.
type checkpointCopy struct {
	epoch uint32 // memSeries.ckptEpoch of a head copied
	// mu guards the rest: commits and the walk add to bodies, the walk
	// takes the full batches out to write them; a leaf lock.
	mu     sync.Mutex
	bodies checkpointBodies
	closed bool // the walk is over: a head not copied yet held nothing at the cut
}

// copyBefore copies ms's head into a checkpoint being written before the
// caller changes it (ms.mu held); a no-op without one.
func (s *Store) copyBefore(ms *memSeries) {
	if c := s.ckptCopy.Load(); c != nil {
		c.copy(ms)
	}
}

// copy adds ms's head unless it was copied already (ms.mu held).
func (c *checkpointCopy) copy(ms *memSeries) {
	if ms.ckptEpoch == c.epoch {
		return
	}
	ms.ckptEpoch = c.epoch
	c.mu.Lock()
	if !c.closed {
		c.bodies.series(ms)
	}
	c.mu.Unlock()
}

// copyHeads walks the series, copying each head not copied yet, and
// writes the checkpoint's records to path (not committed). Commits stop
// copying before it returns.
func (s *Store) copyHeads(c *checkpointCopy, path string, seg int) (*checkpointFile, error) {
	w, err := wal.CreateFile(path)
	var f *checkpointFile
	if err == nil {
		f = &checkpointFile{w: w}
		for ms := range s.reg.all() {
			ms.mu.Lock()
			c.copy(ms)
			ms.mu.Unlock()
			if err = c.writeFull(f); err != nil {
				break
			}
		}
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	s.ckptCopy.Store(nil)
	if err == nil {
		err = f.finish(&c.bodies, seg)
	}
	if err != nil && f != nil {
		w.Abort()
	}
	return f, err
}

// writeFull writes the batches filled so far, taken out under mu so that
// commits copying heads meanwhile do not wait for the file.
func (c *checkpointCopy) writeFull(f *checkpointFile) error {
	c.mu.Lock()
	full := c.bodies.full
	c.bodies.full = nil
	c.mu.Unlock()
	var err error
	for i := range full {
		if err == nil {
			err = f.emit(&full[i])
		}
	}
	c.mu.Lock()
	c.bodies.reuse(full)
	c.mu.Unlock()
	return err
}

// dropCheckpointLocked deletes the checkpoint (and any other, say left by
// a commit that failed after its rename): truncateWAL (truncMu held) found
// no head holding anything logged before the checkpoint's segment, nor
// restored from it (those count as logged in it), and synced the files
// they were flushed to. Before any segment from the checkpoint's on is
// deleted.
func (s *Store) dropCheckpointLocked() error {
	dir := filepath.Join(s.dir, walDirName)
	if err := removeCheckpoints(dir, -1); err != nil {
		return err
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("remove checkpoint: %w", err)
	}
	s.ckpt = -1
	s.ckptBytes.Store(0)
	s.m.checkpointBytes.Set(0)
	return nil
}

// removeCheckpoints deletes every checkpoint of the WAL directory dir but
// the one of segment keep (-1: all).
func removeCheckpoints(dir string, keep int) error {
	segs, _, err := listCheckpoints(dir)
	if err != nil {
		return fmt.Errorf("list checkpoints: %w", err)
	}
	for _, seg := range segs {
		if seg == keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, checkpointName(seg))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove checkpoint: %w", err)
		}
	}
	return nil
}

// checkpointBodies collect a checkpoint's records in batches of a record
// body per type: the batch being filled and the full ones not written
// yet. A batch is full once a body reaches checkpointRecordBytes, even in
// the middle of a series (its samples are split into entries of about a
// quarter of that), so that neither a record nor what a commit copying a
// head appends to grows with the heads. A series' entries are added in one
// call, its other samples before its chunk and its start timestamps after
// both: with batches written in order and a batch's bodies in the order
// below, replay meets them in that order.
type checkpointBodies struct {
	cur     checkpointBatch
	full    []checkpointBatch // to be written
	free    []checkpointBatch // written, emptied, for reuse
	samples int               // head samples copied, for the log
}

type checkpointBatch [numCheckpointBodies]checkpointBody

// The bodies, in the order emit writes them: a float head's other
// samples before its chunk, so that replay puts them in the empty head,
// then the chunk beside them as it is (headChunk).
const (
	bodyFloats = iota
	bodyChunks
	bodyHists
	bodyStarts
	bodyExemplars
	numCheckpointBodies
)

var checkpointBodyTypes = [numCheckpointBodies]byte{recSamples, recHeadChunks, recHistograms, recStartTimes, recExemplars}

type checkpointBody struct {
	buf []byte
	n   int
}

// series adds what ms holds only in memory (ms.mu held).
func (cb *checkpointBodies) series(ms *memSeries) {
	checkpointTrack(cb, floats, ms.ref, &ms.floats, bodyFloats)
	if h := ms.hists(); h != nil {
		checkpointTrack(cb, histograms, ms.ref, h, bodyHists)
	}
	if e := ms.ex(); e != nil && e.unflushed > 0 {
		cb.entry(bodyExemplars, func(buf []byte) []byte {
			return appendExemplarsEntry(buf, ms.ref, e.kept[len(e.kept)-e.unflushed:])
		})
	}
}

// checkpointTrack adds a track's samples other than its chunk's (the
// head's and those being flushed), its chunk as is, and their start
// timestamps.
func checkpointTrack[S any](cb *checkpointBodies, k kind[S], ref uint64, tr *track[S], body int) {
	h := &tr.head
	checkpointSamples(cb, k, ref, h.side(), body)
	checkpointSamples(cb, k, ref, tr.flushingBuf(), body)
	chunk := func(maxT int64, data func() []byte) {
		cb.entry(bodyChunks, func(buf []byte) []byte {
			buf = binary.LittleEndian.AppendUint64(buf, ref)
			buf = binary.AppendVarint(buf, maxT)
			d := data()
			buf = binary.AppendUvarint(buf, uint64(len(d)))
			return append(buf, d...)
		})
	}
	if n := h.olderN(); n > 0 {
		// A split head's older chunk first: replay restores it, then adds
		// the chunk's samples after it (headChunk).
		chunk(h.olderMaxT(), func() []byte { return h.sidePart.older })
		cb.samples += n
	}
	if n := h.p.n(); n > 0 {
		chunk(h.p.maxT(), h.p.bytes)
		cb.samples += n
	}
	if tr.cold != nil && tr.cold.starts != nil {
		for _, sts := range [][]StartTime{tr.cold.starts.head, tr.cold.starts.flushing} {
			for lo := 0; lo < len(sts); lo += checkpointStartsPiece {
				part := sts[lo:min(lo+checkpointStartsPiece, len(sts))]
				cb.entry(bodyStarts, func(buf []byte) []byte {
					return appendStartsEntry(buf, refStarts{Ref: ref, Kind: k.id(), Starts: part})
				})
			}
		}
	}
}

// checkpointSamples adds ss in entries of about a quarter of
// checkpointRecordBytes (by their head cost, kind.size).
func checkpointSamples[S any](cb *checkpointBodies, k kind[S], ref uint64, ss []S, body int) {
	for lo := 0; lo < len(ss); {
		hi, size := lo, int64(0)
		for hi < len(ss) && (hi == lo || size < checkpointRecordBytes/4) {
			size += k.size(ss[hi])
			hi++
		}
		part := ss[lo:hi]
		cb.entry(body, func(buf []byte) []byte { return appendSamplesEntry(k, buf, ref, part) })
		cb.samples += len(part)
		lo = hi
	}
}

// checkpointRecordBytes is the body size at which a batch is full: small,
// as checkpoints run beside ingest and what they allocate adds to its
// peak memory; checkpointStartsPiece the start timestamps of one entry.
const (
	checkpointRecordBytes = 256 << 10
	checkpointStartsPiece = 8192
	// checkpointChunkSlack is room for the entry that fills a chunks body:
	// a head chunk of block_rows' default 4,096 samples takes a few KiB at
	// 1-2 bytes a sample; a larger one grows the body once.
	checkpointChunkSlack = 16 << 10
)

// entry appends one entry to a body of the current batch, which is full
// once that body reaches checkpointRecordBytes.
func (cb *checkpointBodies) entry(body int, add func([]byte) []byte) {
	b := &cb.cur[body]
	if b.buf == nil && body == bodyChunks {
		// The chunks body holds nearly all of a float checkpoint's bytes
		// and fills to checkpointRecordBytes: grown from nothing, every
		// fresh batch copied its bytes once more on the way.
		b.buf = make([]byte, 0, checkpointRecordBytes+checkpointChunkSlack)
	}
	b.buf = add(b.buf)
	b.n++
	if len(b.buf) >= checkpointRecordBytes {
		cb.cut()
	}
}

// cut queues the current batch, if it holds anything, for writing.
func (cb *checkpointBodies) cut() {
	for _, b := range cb.cur {
		if b.n > 0 {
			cb.full = append(cb.full, cb.cur)
			cb.cur = checkpointBatch{}
			if n := len(cb.free); n > 0 {
				cb.cur, cb.free = cb.free[n-1], cb.free[:n-1]
			}
			return
		}
	}
}

// reuse keeps up to two written batches for the next ones.
func (cb *checkpointBodies) reuse(written []checkpointBatch) {
	for _, b := range written {
		if len(cb.free) < 2 {
			cb.free = append(cb.free, b)
		}
	}
}

// checkpointFile writes a checkpoint's records.
type checkpointFile struct {
	w       *wal.FileWriter
	payload []byte
	records int
}

// emit writes a batch's non-empty bodies as records and empties them.
func (f *checkpointFile) emit(batch *checkpointBatch) error {
	for i := range batch {
		b := &batch[i]
		if b.n == 0 {
			continue
		}
		f.payload = append(f.payload[:0], checkpointBodyTypes[i])
		f.payload = binary.AppendUvarint(f.payload, uint64(b.n))
		f.payload = append(f.payload, b.buf...)
		if err := f.w.Append(f.payload); err != nil {
			return err
		}
		f.records++
		b.buf, b.n = b.buf[:0], 0
	}
	return nil
}

// finish writes the batches left and the end record (nothing may add to
// cb any more).
func (f *checkpointFile) finish(cb *checkpointBodies, seg int) error {
	cb.cut()
	for i := range cb.full {
		if err := f.emit(&cb.full[i]); err != nil {
			return err
		}
	}
	cb.full = nil
	f.payload = append(f.payload[:0], recCheckpointEnd)
	f.payload = binary.AppendUvarint(f.payload, uint64(seg))
	f.payload = binary.AppendUvarint(f.payload, uint64(f.records))
	return f.w.Append(f.payload)
}
