package remoteread

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/acta-remote/acta-remote/actastore"
)

// Native histograms in remote read. SAMPLES answers carry them in
// TimeSeries.histograms with every field as stored (reset hints included).
// STREAMED_XOR_CHUNKS answers encode a series holding histograms with
// Prometheus's own chunk encoder (storage.NewSeriesToChunkEncoder), the
// one its remote read handler and TSDB use: XOR chunks for floats,
// HISTOGRAM and FLOAT_HISTOGRAM chunks for histograms, a new chunk at each
// change of value type, of schema or zero threshold, at a counter reset and
// every 120 samples. As in Prometheus's chunks, a sample's reset hint is
// not kept per sample: the chunk header says whether its first sample is a
// reset (or a gauge histogram), later samples read back NotCounterReset
// (GaugeType in gauge chunks), and all samples of a chunk share one bucket
// layout (missing buckets read back as empty buckets).

// histogramsOf returns the series' histogram iterator if it has at least
// one histogram in range, positioned on it.
func histogramsOf(s actastore.Series) (actastore.HistogramIterator, bool, error) {
	hs, ok := s.(actastore.HistogramSeries)
	if !ok {
		return nil, false, nil
	}
	it := hs.HistogramIterator()
	if !it.Next() {
		return nil, false, it.Err()
	}
	return it, true, nil
}

// appendHistograms adds the series' histograms to a SAMPLES answer.
func appendHistograms(ts *prompb.TimeSeries, it actastore.HistogramIterator, b *budget) error {
	for ok := true; ok; ok = it.Next() {
		if err := b.addSample(); err != nil {
			return err
		}
		hs := it.At()
		if hs.FH != nil {
			ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(hs.T, hs.FH))
		} else {
			ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(hs.T, hs.H))
		}
	}
	return it.Err()
}

// mixedSample is one float or histogram sample for the chunk encoder.
type mixedSample struct {
	t  int64
	f  float64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

func (s mixedSample) T() int64                      { return s.t }
func (s mixedSample) ST() int64                     { return 0 }
func (s mixedSample) F() float64                    { return s.f }
func (s mixedSample) H() *histogram.Histogram       { return s.h }
func (s mixedSample) FH() *histogram.FloatHistogram { return s.fh }
func (s mixedSample) Copy() chunks.Sample {
	c := s
	if s.h != nil {
		c.h = s.h.Copy()
	}
	if s.fh != nil {
		c.fh = s.fh.Copy()
	}
	return c
}

func (s mixedSample) Type() chunkenc.ValueType {
	switch {
	case s.h != nil:
		return chunkenc.ValHistogram
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

// mixedSamples merges a series' floats and histograms (hit positioned on
// its first histogram) by timestamp; at a shared timestamp the float comes
// first. The budget bounds what is collected.
func mixedSamples(s actastore.Series, hit actastore.HistogramIterator, b *budget) ([]chunks.Sample, error) {
	var out []chunks.Sample
	fit := s.Iterator()
	fok, hok := fit.Next(), true
	for fok || hok {
		if err := b.addSample(); err != nil {
			return nil, err
		}
		ft, fv := int64(0), 0.0
		if fok {
			ft, fv = fit.At()
		}
		if fok && (!hok || ft <= hit.At().T) {
			out = append(out, mixedSample{t: ft, f: fv})
			fok = fit.Next()
			continue
		}
		hs := hit.At()
		out = append(out, mixedSample{t: hs.T, h: hs.H, fh: hs.FH})
		hok = hit.Next()
	}
	if err := fit.Err(); err != nil {
		return nil, err
	}
	return out, hit.Err()
}

// chunkTypes maps chunk encodings to the remote read chunk types.
func chunkType(e chunkenc.Encoding) (prompb.Chunk_Encoding, error) {
	switch e {
	case chunkenc.EncXOR:
		return prompb.Chunk_XOR, nil
	case chunkenc.EncHistogram:
		return prompb.Chunk_HISTOGRAM, nil
	case chunkenc.EncFloatHistogram:
		return prompb.Chunk_FLOAT_HISTOGRAM, nil
	}
	return 0, fmt.Errorf("chunk encoding %s has no remote read type", e)
}

// encodeMixed encodes samples into chunks as Prometheus's TSDB would and
// calls emit for each.
func encodeMixed(lset labels.Labels, samples []chunks.Sample, emit func(prompb.Chunk) error) error {
	cs := storage.NewSeriesToChunkEncoder(storage.NewListSeries(lset, samples))
	it := cs.Iterator(nil)
	for it.Next() {
		m := it.At()
		typ, err := chunkType(m.Chunk.Encoding())
		if err != nil {
			return err
		}
		if err := emit(prompb.Chunk{MinTimeMs: m.MinTime, MaxTimeMs: m.MaxTime, Type: typ, Data: m.Chunk.Bytes()}); err != nil {
			return err
		}
	}
	return it.Err()
}

// histogramSeries encodes one series holding histograms into j.out: its
// chunks, in frames of at most maxData bytes of chunks. The series alone
// is held to the query's sample limit while its samples are collected
// (the writer counts the query's total).
func (cw *chunkWriter) histogramSeries(j *job, hit actastore.HistogramIterator, maxData int) {
	s := j.s
	b := budget{lim: cw.lim, query: cw.idx}
	samples, err := mixedSamples(s, hit, &b)
	if err != nil {
		j.err = fmt.Errorf("query %d: reading series %s: %w", cw.idx, s.Labels(), err)
		return
	}
	j.samples = int64(len(samples))
	left := maxData
	err = encodeMixed(s.Labels(), samples, func(c prompb.Chunk) error {
		cw.chks = append(cw.chks, c)
		if left -= c.Size(); left > 0 {
			return nil
		}
		left = maxData
		cw.frame(j)
		return j.err
	})
	if err == nil {
		cw.frame(j)
		err = j.err
	}
	if err != nil {
		j.err = fmt.Errorf("query %d: series %s: %w", cw.idx, s.Labels(), err)
	}
}
