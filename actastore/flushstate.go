package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/acta-remote/acta-remote/actastore/wal"
)

// The flush state lets a cleanly restarted store keep detecting duplicates
// of flushed samples and applying the out-of-order window without opening
// every series file: Close writes, per series, the newest flushed sample and
// the newest accepted timestamp (docs/format/catalog.md). Open trusts it
// only when the clean marker is present, i.e. nothing was appended after it
// was written.

// recFlushState is the record type of the flush state file. Frozen.
//
//	type=3 | count uvarint | count × (ref uint64 LE | last_t varint |
//	        last_v bits uint64 LE | max_t varint)
const recFlushState byte = 3

// writeFlushState writes the flush state of every series that flushed
// something, durably, under its final name.
func (s *Store) writeFlushState() error {
	var recs [][]byte
	body := make([]byte, 0, 4096)
	n := 0
	emit := func() {
		if n == 0 {
			return
		}
		rec := append([]byte{recFlushState}, binary.AppendUvarint(nil, uint64(n))...)
		recs = append(recs, append(rec, body...))
		body, n = body[:0], 0
	}
	for _, ms := range s.allSeries() {
		ms.mu.Lock()
		has, last, maxT := ms.hasLastFlushed, ms.lastFlushed, ms.maxT
		ms.mu.Unlock()
		if !has {
			continue
		}
		body = binary.LittleEndian.AppendUint64(body, ms.ref)
		body = binary.AppendVarint(body, last.T)
		body = binary.LittleEndian.AppendUint64(body, math.Float64bits(last.V))
		body = binary.AppendVarint(body, max(maxT, last.T))
		n++
		if len(body) >= maxRecordPayload {
			emit()
		}
	}
	emit()
	var data []byte
	for _, r := range recs {
		data = wal.AppendRecord(data, r)
	}
	path := filepath.Join(s.dir, flushStateName)
	tmp := path + tmpSuffix
	if err := writeFileSync(tmp, data); err != nil {
		return fmt.Errorf("write flush state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write flush state: %w", err)
	}
	return nil // the caller syncs the directory with the clean marker
}

// loadFlushState applies a flush state file written by a clean Close. A
// missing file is fine (an older or empty store).
func (s *Store) loadFlushState() error {
	path := filepath.Join(s.dir, flushStateName)
	err := wal.ReadFile(path, func(p []byte) error {
		if p[0] != recFlushState {
			return fmt.Errorf("record type %d in flush state", p[0])
		}
		cnt, k := binary.Uvarint(p[1:])
		if k <= 0 {
			return fmt.Errorf("%w: flush state count", errRecord)
		}
		src := p[1+k:]
		for i := uint64(0); i < cnt; i++ {
			if len(src) < 8 {
				return fmt.Errorf("%w: flush state entry %d cut short", errRecord, i)
			}
			ref := binary.LittleEndian.Uint64(src)
			lastT, k1 := binary.Varint(src[8:])
			if k1 <= 0 || len(src) < 8+k1+8 {
				return fmt.Errorf("%w: flush state entry %d", errRecord, i)
			}
			lastV := math.Float64frombits(binary.LittleEndian.Uint64(src[8+k1:]))
			maxT, k2 := binary.Varint(src[8+k1+8:])
			if k2 <= 0 {
				return fmt.Errorf("%w: flush state entry %d", errRecord, i)
			}
			src = src[8+k1+8+k2:]
			if ms := s.byRef[ref]; ms != nil {
				ms.lastFlushed, ms.hasLastFlushed = Sample{T: lastT, V: lastV}, true
				if maxT > ms.maxT {
					ms.maxT = maxT
				}
			}
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load flush state %s: %w", path, err)
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
