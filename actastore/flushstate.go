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
// every series file: Close writes, per series and kind, the newest flushed
// sample (its timestamp, for histograms) and the newest accepted timestamp
// (docs/format/catalog.md). Open trusts it only when the clean marker is
// present, i.e. nothing was appended after it was written.

// Record types of the flush state file. Frozen.
//
//	type=3 (floats)     | count uvarint | count × (ref uint64 LE | last_t varint |
//	                      last_v bits uint64 LE | max_t varint)
//	type=9 (histograms) | count uvarint | count × (ref uint64 LE | file_max_t varint | max_t varint)
const (
	recFlushState     byte = 3
	recHistFlushState byte = 9
)

// writeFlushState writes the flush state of every series that flushed
// something, durably, under its final name.
func (s *Store) writeFlushState() error {
	var data []byte
	var fbody, hbody []byte
	fn, hn := 0, 0
	emit := func(typ byte, body *[]byte, n *int) {
		if *n == 0 {
			return
		}
		rec := append([]byte{typ}, binary.AppendUvarint(nil, uint64(*n))...)
		data = wal.AppendRecord(data, append(rec, *body...))
		*body, *n = (*body)[:0], 0
	}
	for ms := range s.reg.all() {
		ms.mu.Lock()
		fmax := ms.floats.maxT
		last, hasLast := ms.floats.lastFlushed()
		hmaxT, hfileMax, hknown := noTime, noTime, false
		if h := ms.hists(); h != nil {
			hmaxT = h.maxT
			hfileMax, hknown = h.fileMax()
		}
		ms.mu.Unlock()
		if hasLast {
			fbody = binary.LittleEndian.AppendUint64(fbody, ms.ref)
			fbody = binary.AppendVarint(fbody, last.T)
			fbody = binary.LittleEndian.AppendUint64(fbody, math.Float64bits(last.V))
			fbody = binary.AppendVarint(fbody, max(fmax, last.T))
			if fn++; len(fbody) >= maxRecordPayload {
				emit(recFlushState, &fbody, &fn)
			}
		}
		if hknown && hfileMax != noTime {
			hbody = binary.LittleEndian.AppendUint64(hbody, ms.ref)
			hbody = binary.AppendVarint(hbody, hfileMax)
			hbody = binary.AppendVarint(hbody, max(hmaxT, hfileMax))
			if hn++; len(hbody) >= maxRecordPayload {
				emit(recHistFlushState, &hbody, &hn)
			}
		}
	}
	emit(recFlushState, &fbody, &fn)
	emit(recHistFlushState, &hbody, &hn)
	path := filepath.Join(s.dir, flushStateName)
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("write flush state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write flush state: %w", err)
	}
	return nil // the caller syncs the directory with the clean marker
}

// loadFlushState applies a flush state file written by a clean Close, after
// the series' files are attached. A missing file is fine (an older or empty
// store).
func (s *Store) loadFlushState() error {
	path := filepath.Join(s.dir, flushStateName)
	err := wal.ReadFile(path, func(p []byte) error {
		cnt, k := binary.Uvarint(p[1:])
		if k <= 0 {
			return fmt.Errorf("%w: flush state count", errRecord)
		}
		src := p[1+k:]
		for i := uint64(0); i < cnt; i++ {
			var err error
			switch p[0] {
			case recFlushState:
				src, err = s.floatFlushState(src)
			case recHistFlushState:
				src, err = s.histFlushState(src)
			default:
				return fmt.Errorf("record type %d in flush state", p[0])
			}
			if err != nil {
				return fmt.Errorf("flush state entry %d: %w", i, err)
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

func (s *Store) floatFlushState(src []byte) ([]byte, error) {
	if len(src) < 8 {
		return nil, fmt.Errorf("%w: cut short", errRecord)
	}
	ref := binary.LittleEndian.Uint64(src)
	lastT, k1 := binary.Varint(src[8:])
	if k1 <= 0 || len(src) < 8+k1+8 {
		return nil, fmt.Errorf("%w: last sample", errRecord)
	}
	lastV := math.Float64frombits(binary.LittleEndian.Uint64(src[8+k1:]))
	maxT, k2 := binary.Varint(src[8+k1+8:])
	if k2 <= 0 {
		return nil, fmt.Errorf("%w: newest timestamp", errRecord)
	}
	if ms := s.reg.byRef.get(ref); ms != nil && len(ms.floats.files()) > 0 {
		tr := &ms.floats
		tr.setLast(Sample{T: lastT, V: lastV})
		tr.setFileMax(lastT, true)
		tr.maxT = max(tr.maxT, maxT)
	}
	return src[8+k1+8+k2:], nil
}

func (s *Store) histFlushState(src []byte) ([]byte, error) {
	if len(src) < 8 {
		return nil, fmt.Errorf("%w: cut short", errRecord)
	}
	ref := binary.LittleEndian.Uint64(src)
	fileMax, k1 := binary.Varint(src[8:])
	if k1 <= 0 {
		return nil, fmt.Errorf("%w: newest flushed timestamp", errRecord)
	}
	maxT, k2 := binary.Varint(src[8+k1:])
	if k2 <= 0 {
		return nil, fmt.Errorf("%w: newest timestamp", errRecord)
	}
	if ms := s.reg.byRef.get(ref); ms != nil && ms.hists() != nil && len(ms.hists().files()) > 0 {
		tr := ms.hists()
		tr.setFileMax(fileMax, true)
		tr.maxT = max(tr.maxT, maxT)
	}
	return src[8+k1+k2:], nil
}
