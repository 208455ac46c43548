package actastore

import (
	"context"
	"errors"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile"
)

// Native histograms, exemplars and metric metadata at the store seam: a
// Batch carries them with the float samples, and one Commit stores all.
//
// A series may hold float samples and histogram samples, as Prometheus
// allows (a metric changing type between scrapes): floats go to the series'
// float files, histograms to its histogram files (each kind its own
// sequence, rotated alike), and a read returns both, each in timestamp order (Series.Iterator, HistogramSeries.HistogramIterator).

// HistogramSample is one native histogram sample: T in ms since the Unix
// epoch, exactly one of H (integer counts) or FH (float counts). A stale
// marker is a histogram whose Sum has the stale NaN bits (model/value).
type HistogramSample = histfile.Sample

// Exemplar is one exemplar: its own labels (trace_id, span_id, ...), value
// with exact bits, T in ms (0 when the sender gave none, as prompb does).
type Exemplar struct {
	Labels labels.Labels
	Value  float64
	T      int64
}

// Metadata is a metric family's type, unit and help text, as Remote-Write
// 1.0 MetricMetadata, 2.0 per-series Metadata and OTLP carry them.
type Metadata struct {
	Type model.MetricType // "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset", "unknown"
	Unit string
	Help string
}

// NamedMetadata is the metadata of one metric family (the __name__ of its
// series; for classic histograms the family name without _bucket/_sum/_count).
type NamedMetadata struct {
	Name string
	Metadata
}

// SeriesExtras is one series' histograms and exemplars (receivers that group
// them apart from float samples before adding both to a Batch).
type SeriesExtras struct {
	Labels     labels.Labels
	Histograms []HistogramSample
	Exemplars  []Exemplar
	// HistogramStarts are start timestamps of some of Histograms
	// (SeriesData.HistogramStarts).
	HistogramStarts []StartTime
}

// ErrInvalidHistogram: a histogram fails model/histogram's Validate (spans
// and buckets disagree, counts do not add up, unknown schema, ...).
var ErrInvalidHistogram = errors.New("actastore: invalid native histogram")

// HistogramSeries is implemented by the Series of a store that holds native
// histograms. The iterator returns the series' histogram samples in
// [mint, maxt], sorted by timestamp, one per timestamp.
type HistogramSeries interface {
	Series
	HistogramIterator() HistogramIterator
}

// HistogramIterator iterates histogram samples in timestamp order. At's
// histogram must not be modified and is valid until the iterator is dropped.
type HistogramIterator interface {
	Next() bool
	At() HistogramSample
	Err() error
}

// ExemplarQuerier returns stored exemplars of the matching series in
// [mint, maxt] (ms, inclusive), per series in timestamp order.
type ExemplarQuerier interface {
	SelectExemplars(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesExemplars, error)
}

// SeriesExemplars is one series' exemplars.
type SeriesExemplars struct {
	Labels    labels.Labels
	Exemplars []Exemplar
}

// MetadataQuerier returns the metadata stored for metric families; an empty
// name returns all, sorted by name.
type MetadataQuerier interface {
	Metadata(ctx context.Context, name string) ([]NamedMetadata, error)
}
