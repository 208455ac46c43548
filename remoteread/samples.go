package remoteread

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/VictoriaMetrics/easyproto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/acta-remote/acta-remote/actastore"
)

// The SAMPLES answer is one snappy block holding a prompb.ReadResponse with
// a QueryResult per query, in request order. The pipeline's workers
// marshal and compress each series on its own: a snappy block is its
// uncompressed length followed by elements (snappy format_description.txt),
// and elements compressed from consecutive pieces of the input, each on
// its own, decode to the pieces' concatenation. So the block is the total
// length, then for each query the compressed QueryResult prefix (tag and
// length) and the compressed pieces of its series. Nothing is sent before
// the last series is done (the block starts with its total length); the
// per-query sample limit bounds what is held.
//
// Each series piece is QueryResult's field 1 (tag, length, TimeSeries),
// marshalled by the generated prompb code, so the decoded answer is byte
// for byte what prompb.ReadResponse.Marshal gives, except for a series
// holding a -0 sample: gogo's marshaller drops a double equal to 0 (proto3
// default), so -0 would come back +0. Such a series is marshalled with
// easyproto, which writes every field it is given.

// readResponseResults and queryResultTimeseries are the field numbers of
// ReadResponse.results and QueryResult.timeseries (prompb remote.proto).
const (
	readResponseResults   = 1
	queryResultTimeseries = 1
)

const negZeroBits = 1 << 63 // math.Float64bits(-0)

// segmentBytes is the largest block the compressed answer is gathered in:
// appending to one growing slice would copy it again at every doubling (a
// many-series answer is tens of MB).
const segmentBytes = 1 << 20

// segments is bytes gathered in blocks, written in order. Blocks double
// from the first piece's size up to segmentBytes, so a one-series answer
// costs one block of its size.
type segments [][]byte

func (sg *segments) append(b []byte) {
	n := len(*sg)
	if n > 0 && cap((*sg)[n-1])-len((*sg)[n-1]) >= len(b) {
		(*sg)[n-1] = append((*sg)[n-1], b...)
		return
	}
	size := len(b)
	if n > 0 {
		size = max(size, min(segmentBytes, 2*cap((*sg)[n-1])))
	}
	*sg = append(*sg, append(make([]byte, 0, size), b...))
}

// samples answers with the snappy ReadResponse.
func (h *Handler) samples(w http.ResponseWriter, r *http.Request, queries []query) {
	var parts segments // compressed elements, in order
	total := 0         // uncompressed ReadResponse length
	var nsamples int64
	for i, q := range queries {
		comp, raw, n, err := h.selectSamples(r, i, q)
		if err != nil {
			apistatus.WriteText(w, apistatus.RemoteRead, err)
			return
		}
		prefix := protowire.AppendTag(nil, readResponseResults, protowire.BytesType)
		prefix = protowire.AppendVarint(prefix, uint64(raw))
		piece, _ := compressPiece(nil, prefix)
		parts = append(parts, piece)
		parts = append(parts, comp...)
		total += len(prefix) + raw
		nsamples += n
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Encoding", "snappy")
	if _, err := w.Write(binary.AppendUvarint(nil, uint64(total))); err != nil {
		h.log.Debug("remote read: client went away", "err", err)
		return
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			h.log.Debug("remote read: client went away", "err", err)
			return
		}
	}
	h.m.samples.Add(float64(nsamples))
}

// selectSamples returns one query's series as compressed snappy elements,
// their uncompressed length and the samples they hold.
func (h *Handler) selectSamples(r *http.Request, idx int, q query) (comp segments, raw int, samples int64, err error) {
	ss := h.q.Select(r.Context(), q.mint, q.maxt, q.matchers...)
	b := budget{lim: &h.lim, query: idx}
	newEncoder := func() seriesEncoder {
		e := samplesEncoderPool.Get().(*samplesEncoder)
		e.lim, e.idx = &h.lim, idx
		return e
	}
	emit := func(j *job) error {
		if err := b.addSamples(j.samples); err != nil {
			return err
		}
		comp.append(j.piece)
		raw += j.raw
		return nil
	}
	if err := eachSeries(r.Context(), ss, idx, &b, newEncoder, emit, nil); err != nil {
		return nil, 0, 0, err
	}
	return comp, raw, b.samples, nil
}

// samplesEncoder is one worker's scratch for SAMPLES pieces.
type samplesEncoder struct {
	lim *Limits
	idx int
	ts  prompb.TimeSeries
	raw []byte
	m   easyproto.Marshaler // series holding -0 only
}

var samplesEncoderPool = sync.Pool{New: func() any { return &samplesEncoder{} }}

// release returns e to the pool unless it holds a large buffer.
func (e *samplesEncoder) release() {
	if cap(e.raw) > maxPooledJob {
		return
	}
	clear(e.ts.Labels[:cap(e.ts.Labels)])
	clear(e.ts.Histograms[:cap(e.ts.Histograms)])
	e.ts.Labels, e.ts.Samples, e.ts.Histograms = e.ts.Labels[:0], e.ts.Samples[:0], e.ts.Histograms[:0]
	samplesEncoderPool.Put(e)
}

// encode sets j.piece to the compressed QueryResult.timeseries field of
// the series, j.raw to its uncompressed length.
func (e *samplesEncoder) encode(j *job) {
	s := j.s
	e.ts.Labels = prompb.FromLabels(s.Labels(), e.ts.Labels[:0])
	e.ts.Samples = e.ts.Samples[:0]
	clear(e.ts.Histograms)
	e.ts.Histograms = e.ts.Histograms[:0]
	negZero := false
	it := s.Iterator()
	for it.Next() {
		t, v := it.At()
		negZero = negZero || math.Float64bits(v) == negZeroBits
		e.ts.Samples = append(e.ts.Samples, prompb.Sample{Timestamp: t, Value: v})
	}
	err := it.Err()
	if err == nil {
		// The series alone is held to the query's limit while histograms
		// are collected; the writer counts the query's total.
		b := budget{lim: e.lim, query: e.idx, samples: int64(len(e.ts.Samples))}
		var hit actastore.HistogramIterator
		var ok bool
		if hit, ok, err = histogramsOf(s); err == nil && ok {
			err = appendHistograms(&e.ts, hit, &b)
		}
	}
	if err != nil {
		j.err = fmt.Errorf("query %d: reading series %s: %w", e.idx, s.Labels(), err)
		return
	}
	j.samples = int64(len(e.ts.Samples) + len(e.ts.Histograms))
	if j.samples == 0 {
		return // nothing in range: not part of the answer (as Prometheus leaves it out)
	}

	e.raw = protowire.AppendTag(e.raw[:0], queryResultTimeseries, protowire.BytesType)
	if negZero {
		e.raw = e.marshalExact(e.raw)
	} else {
		size := e.ts.Size()
		e.raw = protowire.AppendVarint(e.raw, uint64(size))
		e.raw = slices.Grow(e.raw, size)[:len(e.raw)+size]
		if _, err := e.ts.MarshalToSizedBuffer(e.raw[len(e.raw)-size:]); err != nil {
			j.err = fmt.Errorf("cannot marshal series %s: %w", s.Labels(), err)
			return
		}
	}
	j.raw = len(e.raw)
	j.piece, j.out = compressPiece(j.out, e.raw)
}

// marshalExact appends e.ts, length-prefixed, writing every sample's value
// (also ±0) and timestamp.
func (e *samplesEncoder) marshalExact(dst []byte) []byte {
	e.m.Reset()
	mm := e.m.MessageMarshaler()
	for _, l := range e.ts.Labels {
		lm := mm.AppendMessage(1)
		lm.AppendString(1, l.Name)
		lm.AppendString(2, l.Value)
	}
	for _, smp := range e.ts.Samples {
		sm := mm.AppendMessage(2)
		sm.AppendDouble(1, smp.Value)
		sm.AppendInt64(2, smp.Timestamp)
	}
	for i := range e.ts.Histograms {
		// Histograms keep gogo's marshalling (a -0 sum reads back +0).
		hb, err := e.ts.Histograms[i].Marshal()
		if err != nil {
			panic(fmt.Sprintf("remoteread: marshal histogram: %v", err)) // a struct the generated code built cannot fail
		}
		mm.AppendBytes(4, hb)
	}
	return e.m.MarshalWithLen(dst)
}

// compressPiece compresses raw with snappy into buf (grown as needed) and
// returns the elements without the block's length header, and buf.
func compressPiece(buf, raw []byte) (piece, out []byte) {
	n := snappy.MaxEncodedLen(len(raw))
	buf = slices.Grow(buf[:0], n)[:n]
	enc := snappy.Encode(buf, raw)
	_, k := binary.Uvarint(enc)
	return enc[k:], buf
}
