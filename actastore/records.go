package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Record payloads of the WAL and the catalog (framing is package wal's).
// Layouts are drawn in docs/format/wal.md and catalog.md. Frozen.
const (
	recSeries  byte = 1 // series definitions: ref, created ms, canonical labels
	recSamples byte = 2 // float samples of one or more series
	// Type 3 is the flush state's (flushstate.go).
	// recSeriesDeleted (catalog only): series retention or deletion removed
	// after deleting their last file.
	recSeriesDeleted byte = 4
	recHistograms    byte = 5 // native histograms of one or more series
	recExemplars     byte = 6 // exemplars of one or more series
	recMetadata      byte = 7 // metric family metadata
	// recTombstones: ranges of series' samples deleted (DeleteSeries);
	// replay drops the samples before them that they cover.
	recTombstones byte = 8
	// Type 9 is the start times' (starttime.go).
	// recTombstonesDone: the same ranges once their files are done; replay
	// does not apply those tombstones to the files again, so samples
	// written into a deleted range after the deletion stay.
	recTombstonesDone byte = 10
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

// refSamples are samples of one kind of one series, in the order they
// were accepted.
type refSamples[S any] struct {
	Ref     uint64
	Samples []S
}

var errRecord = errors.New("bad record")

// recordBuilder collects record payloads in one buffer it keeps across
// uses (the WAL copies what it is given), so encoding a batch's records
// allocates nothing once warm.
type recordBuilder struct {
	buf  []byte // the records, back to back
	ends []int  // end offset of each record in buf
	body []byte // scratch for the record being built
}

func (rb *recordBuilder) reset() {
	rb.buf, rb.ends, rb.body = rb.buf[:0], rb.ends[:0], rb.body[:0]
}

// add appends a record: type | count uvarint | body.
func (rb *recordBuilder) add(typ byte, count int, body []byte) {
	rb.buf = append(rb.buf, typ)
	rb.buf = binary.AppendUvarint(rb.buf, uint64(count))
	rb.buf = append(rb.buf, body...)
	rb.ends = append(rb.ends, len(rb.buf))
}

// records appends the built records to dst, as slices of the builder's
// buffer (valid until its next use).
func (rb *recordBuilder) records(dst [][]byte) [][]byte {
	lo := 0
	for _, hi := range rb.ends {
		dst = append(dst, rb.buf[lo:hi:hi])
		lo = hi
	}
	return dst
}

// addSeries adds series definitions as one or more records, each below
// maxRecordPayload:
//
//	type=1 | count uvarint | count × (ref uint64 LE | created varint | labels)
func (rb *recordBuilder) addSeries(series []seriesRec) {
	for len(series) > 0 {
		body := rb.body[:0]
		n := 0
		for n < len(series) && len(body) < maxRecordPayload {
			s := series[n]
			body = binary.LittleEndian.AppendUint64(body, s.Ref)
			body = binary.AppendVarint(body, s.Created)
			body = appendCanonicalLabels(body, s.Labels)
			n++
		}
		rb.add(recSeries, n, body)
		rb.body = body
		series = series[n:]
	}
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

// appendSamplesRecords encodes samples of kind k into record payloads
// below maxRecordPayload, adding them to rb.
//
//	type=k.recordType() | count uvarint | count × (ref uint64 LE | n uvarint | k's payload of n samples)
//
// For floats (type 2) the payload is t0 varint | (n-1) × Δt varint |
// n × value bits uint64 LE; for histograms (type 5) n histfile records.
func appendSamplesRecords[S any](k kind[S], rb *recordBuilder, series []refSamples[S]) {
	for len(series) > 0 {
		body := rb.body[:0]
		n := 0
		for n < len(series) && len(body) < maxRecordPayload {
			body = appendSamplesEntry(k, body, series[n].Ref, series[n].Samples)
			n++
		}
		rb.add(k.recordType(), n, body)
		rb.body = body
		series = series[n:]
	}
}

// appendSamplesEntry appends one series' entry of a samples record of
// kind k: ref uint64 LE | n uvarint | k's payload of n samples.
func appendSamplesEntry[S any](k kind[S], body []byte, ref uint64, ss []S) []byte {
	body = binary.LittleEndian.AppendUint64(body, ref)
	body = binary.AppendUvarint(body, uint64(len(ss)))
	return k.appendSamples(body, ss)
}

// decodeSamplesRecord calls fn for each series' samples of a samples
// record of kind k (type byte included); the slice passed to fn is
// scratch, valid only during the call.
func decodeSamplesRecord[S any](k kind[S], rec []byte, scratch []S, fn func(ref uint64, s []S) error) ([]S, error) {
	return walkSamplesRecord(k, rec, scratch, false, func(ref uint64, lo int, s []S) error { return fn(ref, s[lo:]) })
}

// decodeSamplesSpans decodes every series of a samples record of kind k,
// appending their samples to buf and one span per series to spans.
func decodeSamplesSpans[S any](k kind[S], rec []byte, buf []S, spans []replaySpan) ([]S, []replaySpan, error) {
	buf, err := walkSamplesRecord(k, rec, buf, true, func(ref uint64, lo int, s []S) error {
		spans = append(spans, replaySpan{ref: ref, lo: lo, hi: len(s)})
		return nil
	})
	return buf, spans, err
}

// walkSamplesRecord decodes a samples record series by series into buf
// (from its start for each series, or appended when keep) and calls fn
// with each series' ref and where its samples start in buf.
func walkSamplesRecord[S any](k kind[S], rec []byte, buf []S, keep bool, fn func(ref uint64, lo int, buf []S) error) ([]S, error) {
	if len(rec) == 0 {
		return buf, fmt.Errorf("%w: empty record", errRecord)
	}
	n, c := binary.Uvarint(rec[1:])
	if c <= 0 {
		return buf, fmt.Errorf("%w: series count", errRecord)
	}
	src := rec[1+c:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return buf, fmt.Errorf("%w: %s series %d of %d cut short", errRecord, k.name(), i, n)
		}
		ref := binary.LittleEndian.Uint64(src)
		cnt, c := binary.Uvarint(src[8:])
		if c <= 0 || cnt > uint64(len(src)) {
			return buf, fmt.Errorf("%w: %s count of series %d", errRecord, k.name(), i)
		}
		lo := 0
		if keep {
			lo = len(buf)
		} else {
			buf = buf[:0]
		}
		var err error
		buf, src, err = k.decodeSamples(buf, src[8+c:], int(cnt))
		if err != nil {
			return buf, fmt.Errorf("%s series %d: %w", k.name(), i, err)
		}
		if err := fn(ref, lo, buf); err != nil {
			return buf, err
		}
	}
	if len(src) != 0 {
		return buf, fmt.Errorf("%w: %d trailing bytes after %d series", errRecord, len(src), n)
	}
	return buf, nil
}

// refExemplars are exemplars of one series.
type refExemplars struct {
	Ref       uint64
	Exemplars []Exemplar
}

// appendExemplarsRecord encodes one record:
//
//	type=6 | count uvarint | count × (ref uint64 LE | n uvarint |
//	        n × (t varint | value bits uint64 LE | canonical labels))
func appendExemplarsRecord(dst []byte, series []refExemplars) []byte {
	dst = append(dst, recExemplars)
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	for _, s := range series {
		dst = appendExemplarsEntry(dst, s.Ref, s.Exemplars)
	}
	return dst
}

// appendExemplarsEntry appends one series' entry of an exemplar record.
func appendExemplarsEntry(dst []byte, ref uint64, es []Exemplar) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, ref)
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	for _, e := range es {
		dst = binary.AppendVarint(dst, e.T)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Value))
		dst = appendCanonicalLabels(dst, e.Labels)
	}
	return dst
}

// decodeExemplarsRecord calls fn for each series' exemplars of an exemplar
// record (type byte included: 6, or 2 of the pre-1 histogram WAL).
func decodeExemplarsRecord(b *labels.ScratchBuilder, rec []byte, fn func(ref uint64, es []Exemplar) error) error {
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 {
		return fmt.Errorf("%w: exemplar series count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return fmt.Errorf("%w: exemplar series %d of %d cut short", errRecord, i, n)
		}
		ref := binary.LittleEndian.Uint64(src)
		m, k := binary.Uvarint(src[8:])
		if k <= 0 || m > uint64(len(src))/10 {
			return fmt.Errorf("%w: exemplar count of series %d", errRecord, i)
		}
		src = src[8+k:]
		es := make([]Exemplar, 0, m)
		for j := uint64(0); j < m; j++ {
			t, k := binary.Varint(src)
			if k <= 0 || len(src) < k+8 {
				return fmt.Errorf("%w: exemplar %d of series %d", errRecord, j, i)
			}
			e := Exemplar{T: t, Value: math.Float64frombits(binary.LittleEndian.Uint64(src[k:]))}
			var err error
			if e.Labels, src, err = decodeCanonicalLabels(b, src[k+8:]); err != nil {
				return fmt.Errorf("%w: exemplar %d of series %d labels: %v", errRecord, j, i, err)
			}
			es = append(es, e)
		}
		if err := fn(ref, es); err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in exemplar record", errRecord, len(src))
	}
	return nil
}

// appendMetadataRecord encodes one record:
//
//	type=7 | count uvarint | count × (name | type | unit | help), each a
//	uvarint length and UTF-8 bytes
func appendMetadataRecord(dst []byte, md []NamedMetadata) []byte {
	dst = append(dst, recMetadata)
	dst = binary.AppendUvarint(dst, uint64(len(md)))
	for _, m := range md {
		for _, s := range []string{m.Name, string(m.Type), m.Unit, m.Help} {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}

// decodeMetadataRecord calls fn for each entry of a metadata record (type
// byte included: 7, or 3 of the pre-1 histogram WAL).
func decodeMetadataRecord(rec []byte, fn func(NamedMetadata)) error {
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || n > uint64(len(rec)) {
		return fmt.Errorf("%w: metadata count", errRecord)
	}
	src := rec[1+k:]
	for i := uint64(0); i < n; i++ {
		var f [4]string
		for j := range f {
			var ok bool
			if f[j], src, ok = readString(src); !ok {
				return fmt.Errorf("%w: metadata %d of %d", errRecord, i, n)
			}
		}
		fn(NamedMetadata{Name: f[0], Metadata: Metadata{Type: model.MetricType(f[1]), Unit: f[2], Help: f[3]}})
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in metadata record", errRecord, len(src))
	}
	return nil
}
