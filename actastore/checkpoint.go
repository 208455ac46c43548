package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

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
// Consistency: C is cut and the heads copied with appendMu held
// exclusively (as WAL truncation scans them), so the checkpoint holds
// exactly what the commits logged below C put in the heads, and nothing
// logged from C on. truncMu is held throughout, so no deletion runs
// meanwhile. Before the file
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
	dir := filepath.Join(s.dir, walDirName)
	start := time.Now()
	s.appendMu.Lock()
	seg, w, cw, err := s.copyHeadsLocked(dir)
	s.appendMu.Unlock()
	paused := time.Since(start)
	if err != nil || w == nil {
		return err
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
		w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	size, err := w.Commit()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	old := s.ckpt
	s.ckpt = seg
	s.ckptBytes.Store(size)
	if err := s.wal.TruncateBefore(seg); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if old >= 0 {
		// Not synced: Open keeps the newest checkpoint and removes others.
		os.Remove(filepath.Join(dir, checkpointName(old)))
	}
	s.m.checkpoints.Inc()
	s.m.checkpointBytes.Set(float64(size))
	s.ckptPaused = paused
	s.log.Debug("WAL checkpoint", "segment", seg, "bytes", size, "samples", cw.samples, "commits_paused", paused, "took", time.Since(start))
	return nil
}

// copyHeadsLocked cuts the WAL and writes every head to a new checkpoint
// file, not yet committed (appendMu held exclusively, so that it holds
// exactly what the segments below the cut logged: a sample logged after
// it and copied too would make its replay look it up in the restored
// chunk, a scan of the chunk per sample). w is nil when nothing was
// logged since the last checkpoint.
func (s *Store) copyHeadsLocked(dir string) (seg int, w *wal.FileWriter, cw *checkpointWriter, err error) {
	seg, err = s.wal.Cut()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("checkpoint: cut WAL: %w", err)
	}
	if seg <= s.ckpt {
		return seg, nil, nil, nil
	}
	if w, err = wal.CreateFile(filepath.Join(dir, checkpointName(seg))); err != nil {
		return 0, nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	cw = &checkpointWriter{w: w}
	for _, ms := range s.reg.live() {
		ms.mu.Lock()
		cw.series(ms)
		ms.mu.Unlock()
		if cw.full() {
			if err = cw.emit(); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = cw.finish(seg)
	}
	if err != nil {
		w.Abort()
		return 0, nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	return seg, w, cw, nil
}

// dropCheckpointLocked deletes the checkpoint when drop is set:
// truncateWAL (truncMu held) found no head holding anything logged
// before the checkpoint's segment, nor restored from it (those count as
// logged in it), and synced the files they were flushed to. Before any
// segment from the checkpoint's on is deleted.
func (s *Store) dropCheckpointLocked(drop bool) error {
	if !drop {
		return nil
	}
	dir := filepath.Join(s.dir, walDirName)
	if err := os.Remove(filepath.Join(dir, checkpointName(s.ckpt))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove checkpoint: %w", err)
	}
	if err := durable.SyncDir(dir); err != nil {
		return err
	}
	s.ckpt = -1
	s.ckptBytes.Store(0)
	s.m.checkpointBytes.Set(0)
	return nil
}

// checkpointWriter collects the records of a checkpoint, a record body per
// type, and writes them out once one is full: each series' entries sit in
// one batch, its start timestamps after its samples (replay matches them).
type checkpointWriter struct {
	w       *wal.FileWriter
	bodies  [numCheckpointBodies]checkpointBody
	payload []byte
	records int
	samples int
}

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
func (cw *checkpointWriter) series(ms *memSeries) {
	checkpointTrack(cw, floats, ms.ref, &ms.floats, bodyFloats)
	if ms.hists != nil {
		checkpointTrack(cw, histograms, ms.ref, ms.hists, bodyHists)
	}
	if e := ms.ex; e != nil && e.unflushed > 0 {
		b := &cw.bodies[bodyExemplars]
		b.buf = appendExemplarsEntry(b.buf, ms.ref, e.kept[len(e.kept)-e.unflushed:])
		b.n++
	}
}

// checkpointTrack adds a track's head (its chunk as is, its other samples
// as a samples entry), the samples being flushed, and their start
// timestamps.
func checkpointTrack[S any](cw *checkpointWriter, k kind[S], ref uint64, tr *track[S], body int) {
	if p := tr.head.p; p != nil {
		if n := p.n(); n > 0 {
			b := &cw.bodies[bodyChunks]
			b.buf = binary.LittleEndian.AppendUint64(b.buf, ref)
			b.buf = binary.AppendVarint(b.buf, p.maxT)
			b.buf = binary.AppendUvarint(b.buf, uint64(len(p.c.Bytes())))
			b.buf = append(b.buf, p.c.Bytes()...)
			b.n++
			cw.samples += n
		}
		checkpointSamples(cw, k, ref, p.ss, body)
	}
	checkpointSamples(cw, k, ref, tr.flushingBuf(), body)
	if tr.cold != nil && tr.cold.starts != nil {
		for _, sts := range [][]StartTime{tr.cold.starts.head, tr.cold.starts.flushing} {
			if len(sts) > 0 {
				b := &cw.bodies[bodyStarts]
				b.buf = appendStartsEntry(b.buf, refStarts{Ref: ref, Kind: k.id(), Starts: sts})
				b.n++
			}
		}
	}
}

func checkpointSamples[S any](cw *checkpointWriter, k kind[S], ref uint64, ss []S, body int) {
	if len(ss) == 0 {
		return
	}
	b := &cw.bodies[body]
	b.buf = appendSamplesEntry(k, b.buf, ref, ss)
	b.n++
	cw.samples += len(ss)
}

// full reports whether a body has reached maxRecordPayload.
func (cw *checkpointWriter) full() bool {
	for i := range cw.bodies {
		if len(cw.bodies[i].buf) >= maxRecordPayload {
			return true
		}
	}
	return false
}

// emit writes the non-empty bodies as records.
func (cw *checkpointWriter) emit() error {
	for i := range cw.bodies {
		b := &cw.bodies[i]
		if b.n == 0 {
			continue
		}
		cw.payload = append(cw.payload[:0], checkpointBodyTypes[i])
		cw.payload = binary.AppendUvarint(cw.payload, uint64(b.n))
		cw.payload = append(cw.payload, b.buf...)
		if err := cw.w.Append(cw.payload); err != nil {
			return err
		}
		cw.records++
		b.buf, b.n = b.buf[:0], 0
	}
	return nil
}

// finish writes what is left and the end record.
func (cw *checkpointWriter) finish(seg int) error {
	if err := cw.emit(); err != nil {
		return err
	}
	cw.payload = append(cw.payload[:0], recCheckpointEnd)
	cw.payload = binary.AppendUvarint(cw.payload, uint64(seg))
	cw.payload = binary.AppendUvarint(cw.payload, uint64(cw.records))
	return cw.w.Append(cw.payload)
}

// prepareCheckpoint finds the newest checkpoint of the WAL directory at
// Open, removes older ones, unfinished ones and the segments it covers,
// and returns its segment (-1: none) and size.
func prepareCheckpoint(dir string) (int, int64, error) {
	segs, tmps, err := listCheckpoints(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return -1, 0, nil
		}
		return -1, 0, fmt.Errorf("list checkpoints: %w", err)
	}
	for _, name := range tmps {
		os.Remove(filepath.Join(dir, name))
	}
	if len(segs) == 0 {
		return -1, 0, nil
	}
	ckpt := segs[len(segs)-1]
	for _, old := range segs[:len(segs)-1] {
		if err := os.Remove(filepath.Join(dir, checkpointName(old))); err != nil {
			return -1, 0, fmt.Errorf("remove old checkpoint: %w", err)
		}
	}
	walSegs, err := wal.Segments(dir)
	if err != nil {
		return -1, 0, err
	}
	for _, seg := range walSegs {
		if seg >= ckpt {
			break
		}
		// Covered by the checkpoint: a crash came between its rename and
		// the truncation.
		if err := os.Remove(filepath.Join(dir, wal.SegmentName(seg))); err != nil {
			return -1, 0, fmt.Errorf("remove WAL segment below checkpoint: %w", err)
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return -1, 0, err
	}
	fi, err := os.Stat(filepath.Join(dir, checkpointName(ckpt)))
	if err != nil {
		return -1, 0, err
	}
	return ckpt, fi.Size(), nil
}

// mapCheckpoint maps checkpoint seg of the WAL directory dir for a
// replay: its chunks become heads as they are (rp.headChunk), owned by the
// frozenChunks returned, which unmaps them once no head holds it.
func mapCheckpoint(dir string, seg int) (*frozenChunks, error) {
	m, err := wal.Map(filepath.Join(dir, checkpointName(seg)))
	if err != nil {
		return nil, err
	}
	f := &frozenChunks{m: m}
	runtime.AddCleanup(f, func(m *wal.Mapping) { m.Unmap() }, m)
	return f, nil
}

// readCheckpoint calls fn with each record of checkpoint seg, mapped as m,
// but its end record, which it checks: a checkpoint without it is corrupt.
func readCheckpoint(m *wal.Mapping, dir string, seg int, fn func(payload []byte) error) error {
	if err := readCheckpointRecords(m, seg, fn); err != nil {
		return fmt.Errorf("checkpoint %s: %w", filepath.Join(dir, checkpointName(seg)), err)
	}
	return nil
}

func readCheckpointRecords(m *wal.Mapping, seg int, fn func(payload []byte) error) error {
	records, ended := 0, false
	err := m.Records(func(p []byte) error {
		if ended {
			return fmt.Errorf("%w: record after the end", errRecord)
		}
		if p[0] != recCheckpointEnd {
			records++
			return fn(p)
		}
		ended = true
		s, k := binary.Uvarint(p[1:])
		n, k2 := binary.Uvarint(p[1+max(k, 0):])
		if k <= 0 || k2 <= 0 || s != uint64(seg) || n != uint64(records) {
			return fmt.Errorf("%w: end record says segment %d after %d records, want %d after %d", errRecord, s, n, seg, records)
		}
		return nil
	})
	if err == nil && !ended {
		err = fmt.Errorf("%w: no end record", errRecord)
	}
	return err
}

// decodeHeadChunksRecord calls fn with each entry of a head-chunks record
// (type byte included): the series, its chunk's newest timestamp and the
// chunk (aliasing rec; at least one sample, by its header).
func decodeHeadChunksRecord(rec []byte, fn func(ref uint64, maxT int64, data []byte) error) error {
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || n > uint64(len(rec))/12 {
		return fmt.Errorf("%w: head chunk count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return fmt.Errorf("%w: head chunk %d of %d cut short", errRecord, i, n)
		}
		ref := binary.LittleEndian.Uint64(src)
		maxT, k1 := binary.Varint(src[8:])
		if k1 <= 0 {
			return fmt.Errorf("%w: newest timestamp of head chunk %d", errRecord, i)
		}
		src = src[8+k1:]
		l, k2 := binary.Uvarint(src)
		if k2 <= 0 || l > uint64(len(src)-k2) || l < 3 || binary.BigEndian.Uint16(src[k2:]) == 0 {
			return fmt.Errorf("%w: length of head chunk %d", errRecord, i)
		}
		data := src[k2 : k2+int(l)]
		src = src[k2+int(l):]
		if err := fn(ref, maxT, data); err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in head chunk record", errRecord, len(src))
	}
	return nil
}

// chunkSamples appends the samples of an XOR chunk's bytes to dst, checking
// that the chunk is whole and its timestamps strictly increase.
func chunkSamples[S any](k kind[S], dst []S, data []byte) ([]S, error) {
	var c chunkenc.XORChunk
	c.Reset(data)
	base := len(dst)
	dst, err := appendXOR(k, dst, c.Iterator(nil), math.MinInt64, math.MaxInt64)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", errRecord, err)
	}
	if got := len(dst) - base; got != c.NumSamples() || got == 0 {
		return dst, fmt.Errorf("%w: head chunk of %d samples holds %d", errRecord, c.NumSamples(), got)
	}
	for i := base + 1; i < len(dst); i++ {
		if k.ts(dst[i]) <= k.ts(dst[i-1]) {
			return dst, fmt.Errorf("%w: head chunk timestamps not increasing", errRecord)
		}
	}
	return dst, nil
}

// headChunk restores a head from a checkpoint's chunk: into a head without
// a chunk the chunk itself (frozen until the next sample: headbuf.go
// frozenChunks), not decoded (the record's checksum covers it); else its
// samples one by one.
func (rp *replayer) headChunk(seg int32, ref uint64, maxT int64, data []byte) error {
	ms, err := rp.series(ref, seg, func() string { return "head chunk" })
	if ms == nil || err != nil {
		return err
	}
	tr := &ms.floats
	idle := !ms.hasHeadLocked()
	var n int
	var b int64
	if p := tr.head.p; p == nil || p.app == nil {
		// The head has no chunk (it may hold the samples the checkpoint
		// keeps beside it). No copy: the chunk stays in the checkpoint's
		// mapping, which rp.frozen owns, until its head is recompressed or
		// flushed.
		tr.headFrom(seg, rp.nowNs)
		if p == nil {
			p = &headParts[Sample]{}
			tr.head.p = p
		}
		p.c.Reset(data[:len(data):len(data)])
		p.app, p.maxT = rp.frozen, maxT
		tr.maxT = max(tr.maxT, maxT)
		n, b = p.n(), p.chunkBytes()
	} else {
		ss, err := chunkSamples(floats, rp.fs[:0], data)
		rp.fs = ss
		if err != nil {
			return fmt.Errorf("series %016x: %w", ref, err)
		}
		n, b = insertAll(floats, tr, ss, seg, rp.nowNs, true)
	}
	if idle && ms.hasHeadLocked() {
		rp.headSeries++
	}
	rp.headSamples += int64(n)
	rp.headBytes += b
	rp.replayed += n
	rp.flushCounts()
	return nil
}
