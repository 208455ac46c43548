package actastore

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile"
)

// Record payloads of the histogram WAL (<dir>/histograms/wal; framing is
// package wal's). Layouts in docs/format/histogram.md. Frozen.
const (
	hrecHistograms byte = 1 // histogram samples of one or more series
	hrecExemplars  byte = 2 // exemplars of one or more series
	hrecMetadata   byte = 3 // metric family metadata
)

// refHistograms are histogram samples of one series.
type refHistograms struct {
	Ref     uint64
	Samples []HistogramSample
}

// refExemplars are exemplars of one series.
type refExemplars struct {
	Ref       uint64
	Exemplars []Exemplar
}

// appendHistogramsRecord encodes one record:
//
//	type=1 | count uvarint | count × (ref uint64 LE | n uvarint | n × histfile record)
func appendHistogramsRecord(dst []byte, series []refHistograms) []byte {
	dst = append(dst, hrecHistograms)
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	for _, s := range series {
		dst = binary.LittleEndian.AppendUint64(dst, s.Ref)
		dst = binary.AppendUvarint(dst, uint64(len(s.Samples)))
		for _, h := range s.Samples {
			dst = histfile.AppendRecord(dst, h)
		}
	}
	return dst
}

func decodeHistogramsRecord(rec []byte, fn func(ref uint64, hs []HistogramSample) error) error {
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 {
		return fmt.Errorf("%w: histogram series count", errRecord)
	}
	src := rec[1+k:]
	var hs []HistogramSample
	for i := uint64(0); i < n; i++ {
		if len(src) < 8 {
			return fmt.Errorf("%w: histogram series %d of %d cut short", errRecord, i, n)
		}
		ref := binary.LittleEndian.Uint64(src)
		m, k := binary.Uvarint(src[8:])
		if k <= 0 || m > uint64(len(src)) {
			return fmt.Errorf("%w: histogram count of series %d", errRecord, i)
		}
		src = src[8+k:]
		hs = hs[:0]
		for j := uint64(0); j < m; j++ {
			h, rest, err := histfile.DecodeRecord(src)
			if err != nil {
				return fmt.Errorf("%w: histogram %d of series %d: %v", errRecord, j, i, err)
			}
			hs = append(hs, h)
			src = rest
		}
		if err := fn(ref, hs); err != nil {
			return err
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in histogram record", errRecord, len(src))
	}
	return nil
}

// appendExemplarsRecord encodes one record:
//
//	type=2 | count uvarint | count × (ref uint64 LE | n uvarint |
//	        n × (t varint | value bits uint64 LE | canonical labels))
func appendExemplarsRecord(dst []byte, series []refExemplars) []byte {
	dst = append(dst, hrecExemplars)
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	for _, s := range series {
		dst = binary.LittleEndian.AppendUint64(dst, s.Ref)
		dst = binary.AppendUvarint(dst, uint64(len(s.Exemplars)))
		for _, e := range s.Exemplars {
			dst = binary.AppendVarint(dst, e.T)
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Value))
			dst = appendCanonicalLabels(dst, e.Labels)
		}
	}
	return dst
}

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
		if k <= 0 || m > uint64(len(src)) {
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
//	type=3 | count uvarint | count × (name | type | unit | help), each a
//	uvarint length and UTF-8 bytes
func appendMetadataRecord(dst []byte, md []NamedMetadata) []byte {
	dst = append(dst, hrecMetadata)
	dst = binary.AppendUvarint(dst, uint64(len(md)))
	for _, m := range md {
		for _, s := range []string{m.Name, string(m.Type), m.Unit, m.Help} {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}

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
