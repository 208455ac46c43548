package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// Record payloads of the WAL and the catalog (framing is package wal's).
// Layouts are drawn in docs/format/wal.md and catalog.md. Frozen.
const (
	recSeries  byte = 1 // series definitions: ref, created ms, canonical labels
	recSamples byte = 2 // samples of one or more series
	// recSeriesDeleted (catalog only): series retention removed after
	// deleting their last file. Type 3 is the flush state's.
	recSeriesDeleted byte = 4
)

// deletedRec says series Ref was removed at At (ms, store clock).
type deletedRec struct {
	Ref uint64
	At  int64
}

// appendDeletedRecord encodes a series-deleted record:
// type=4 | count uvarint | count × (ref uint64 LE | deleted_ms varint).
func appendDeletedRecord(dst []byte, recs []deletedRec) []byte {
	dst = append(dst, recSeriesDeleted)
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for _, r := range recs {
		dst = binary.LittleEndian.AppendUint64(dst, r.Ref)
		dst = binary.AppendVarint(dst, r.At)
	}
	return dst
}

// decodeDeletedRecord calls fn with each entry of a series-deleted record.
func decodeDeletedRecord(rec []byte, fn func(deletedRec)) error {
	if len(rec) == 0 || rec[0] != recSeriesDeleted {
		return fmt.Errorf("%w: not a series-deleted record", errRecord)
	}
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || n > uint64(len(rec)) {
		return fmt.Errorf("%w: series-deleted count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 9 {
			return fmt.Errorf("%w: series-deleted entry %d cut short", errRecord, i)
		}
		var d deletedRec
		d.Ref = binary.LittleEndian.Uint64(src)
		at, k := binary.Varint(src[8:])
		if k <= 0 {
			return fmt.Errorf("%w: series-deleted entry %d time", errRecord, i)
		}
		d.At = at
		src = src[8+k:]
		fn(d)
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after %d series-deleted entries", errRecord, len(src), n)
	}
	return nil
}

// maxRecordPayload keeps records well under wal.MaxRecordSize; a large batch
// becomes several records written with one write call.
const maxRecordPayload = 1 << 20

// seriesRec defines a series: its ref and labels. Created is the wall-clock
// time in ms at which the store first saw it.
type seriesRec struct {
	Ref     uint64
	Created int64
	Labels  labels.Labels
}

// refSamples are samples of one series, in the order they were accepted.
type refSamples struct {
	Ref     uint64
	Samples []Sample
}

var errRecord = errors.New("bad record")

// appendSeriesRecords encodes series definitions into one or more record
// payloads, each below maxRecordPayload, appending them to recs.
//
//	type=1 | count uvarint | count × (ref uint64 LE | created varint | labels)
func appendSeriesRecords(recs [][]byte, series []seriesRec) [][]byte {
	for len(series) > 0 {
		body := make([]byte, 0, 256)
		n := 0
		for n < len(series) && len(body) < maxRecordPayload {
			s := series[n]
			body = binary.LittleEndian.AppendUint64(body, s.Ref)
			body = binary.AppendVarint(body, s.Created)
			body = appendCanonicalLabels(body, s.Labels)
			n++
		}
		rec := make([]byte, 0, len(body)+binary.MaxVarintLen64+1)
		rec = append(rec, recSeries)
		rec = binary.AppendUvarint(rec, uint64(n))
		recs = append(recs, append(rec, body...))
		series = series[n:]
	}
	return recs
}

// decodeSeriesRecord calls fn for each series definition of a type-1 payload.
func decodeSeriesRecord(b *labels.ScratchBuilder, rec []byte, fn func(seriesRec) error) error {
	if len(rec) == 0 || rec[0] != recSeries {
		return fmt.Errorf("%w: not a series record", errRecord)
	}
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 {
		return fmt.Errorf("%w: series count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return fmt.Errorf("%w: series %d of %d cut short", errRecord, i, n)
		}
		var s seriesRec
		s.Ref = binary.LittleEndian.Uint64(src)
		c, k := binary.Varint(src[8:])
		if k <= 0 {
			return fmt.Errorf("%w: created time of series %d", errRecord, i)
		}
		s.Created = c
		var err error
		s.Labels, src, err = decodeCanonicalLabels(b, src[8+k:])
		if err != nil {
			return fmt.Errorf("%w: labels of series %d: %v", errRecord, i, err)
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after %d series", errRecord, len(src), n)
	}
	return nil
}

// appendSamplesRecords encodes samples into record payloads below
// maxRecordPayload, appending them to recs.
//
//	type=2 | count uvarint | count × (ref uint64 LE | n uvarint |
//	        t0 varint | (n-1) × Δt varint | n × value bits uint64 LE)
//
// Timestamps are delta-coded (one to three bytes each for regular scrapes);
// values keep their exact IEEE 754 bits.
func appendSamplesRecords(recs [][]byte, buf []byte, series []refSamples) ([][]byte, []byte) {
	for len(series) > 0 {
		buf = buf[:0]
		n := 0
		for n < len(series) && len(buf) < maxRecordPayload {
			s := series[n]
			buf = binary.LittleEndian.AppendUint64(buf, s.Ref)
			buf = binary.AppendUvarint(buf, uint64(len(s.Samples)))
			prev := int64(0)
			for i, smp := range s.Samples {
				if i == 0 {
					buf = binary.AppendVarint(buf, smp.T)
				} else {
					buf = binary.AppendVarint(buf, smp.T-prev)
				}
				prev = smp.T
			}
			for _, smp := range s.Samples {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(smp.V))
			}
			n++
		}
		rec := make([]byte, 0, len(buf)+binary.MaxVarintLen64+1)
		rec = append(rec, recSamples)
		rec = binary.AppendUvarint(rec, uint64(n))
		recs = append(recs, append(rec, buf...))
		series = series[n:]
	}
	return recs, buf
}

// decodeSamplesRecord calls fn for each series' samples of a type-2 payload;
// the slice passed to fn is scratch, valid only during the call.
func decodeSamplesRecord(rec []byte, scratch []Sample, fn func(ref uint64, s []Sample) error) ([]Sample, error) {
	if len(rec) == 0 || rec[0] != recSamples {
		return scratch, fmt.Errorf("%w: not a samples record", errRecord)
	}
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 {
		return scratch, fmt.Errorf("%w: series count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return scratch, fmt.Errorf("%w: series %d of %d cut short", errRecord, i, n)
		}
		ref := binary.LittleEndian.Uint64(src)
		cnt, k := binary.Uvarint(src[8:])
		// Each sample needs at least 9 bytes; never allocate from a count
		// the record cannot hold.
		if k <= 0 || cnt > uint64(len(src))/9 {
			return scratch, fmt.Errorf("%w: sample count of series %d", errRecord, i)
		}
		src = src[8+k:]
		scratch = scratch[:0]
		t := int64(0)
		for j := uint64(0); j < cnt; j++ {
			d, k := binary.Varint(src)
			if k <= 0 {
				return scratch, fmt.Errorf("%w: timestamp %d of series %d", errRecord, j, i)
			}
			if j == 0 {
				t = d
			} else {
				t += d
			}
			scratch = append(scratch, Sample{T: t})
			src = src[k:]
		}
		if uint64(len(src)) < 8*cnt {
			return scratch, fmt.Errorf("%w: values of series %d cut short", errRecord, i)
		}
		for j := range scratch {
			scratch[j].V = math.Float64frombits(binary.LittleEndian.Uint64(src[8*j:]))
		}
		src = src[8*cnt:]
		if err := fn(ref, scratch); err != nil {
			return scratch, err
		}
	}
	if len(src) != 0 {
		return scratch, fmt.Errorf("%w: %d trailing bytes after %d series", errRecord, len(src), n)
	}
	return scratch, nil
}
