package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/durable"
)

// Reading a head checkpoint (checkpoint.go writes them): at Open, before
// the WAL segments after it (replay.go), and by the read-only view
// (readonly.go).

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
	if err := removeCheckpoints(dir, ckpt); err != nil {
		return -1, 0, err
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
		return -1, 0, fmt.Errorf("checkpoint %s: %w", checkpointName(ckpt), err)
	}
	fi, err := os.Stat(filepath.Join(dir, checkpointName(ckpt)))
	if err != nil {
		return -1, 0, fmt.Errorf("checkpoint: %w", err)
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

// checkpointOnly reports whether records of type typ may only be in a
// checkpoint: a head chunk elsewhere would alias a segment's mapping,
// which is released once the replay ends.
func checkpointOnly(typ byte) bool { return typ == recHeadChunks || typ == recCheckpointEnd }

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
	dst, err := appendXOR(k, dst, data, math.MinInt64, math.MaxInt64)
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
// frozenChunks), not decoded (the record's checksum covers it); into one
// holding such a chunk only, with samples all newer, a chunk after it
// (headBuf.splitWith); else its samples one by one.
func (rp *replayer) headChunk(seg int32, ref uint64, maxT int64, data []byte) error {
	ms, err := rp.series(ref, seg, func() string { return "head chunk" })
	if ms == nil || err != nil {
		return err
	}
	tr := &ms.floats
	idle := !ms.hasHeadLocked()
	var n int
	var b int64
	if p := tr.head.p; !p.hasChunk() {
		// The head has no chunk (it may hold the samples the checkpoint
		// keeps beside it). No copy: the chunk stays in the checkpoint's
		// mapping, which rp.frozen owns, until its head is recompressed or
		// flushed.
		tr.headFrom(seg, rp.nowNs)
		tr.head.freeze(data[:len(data):len(data)], maxT, rp.frozen)
		tr.maxT = max(tr.maxT, maxT)
		n, b = tr.head.p.n(), tr.head.chunkBytes()
	} else {
		ss, err := chunkSamples(floats, rp.fs[:0], data)
		rp.fs = ss
		if err != nil {
			return fmt.Errorf("series %016x: %w", ref, err)
		}
		var split bool
		if b, split = tr.head.splitWith(floats, ss); split {
			// A split head's chunk after its older one (checkpointTrack):
			// a chunk again, whatever the side samples before them hold.
			n = len(ss)
			tr.maxT = max(tr.maxT, ss[n-1].T)
		} else {
			n, b = insertAll(floats, tr, ss, seg, rp.nowNs, true)
		}
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
