package actastore

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/labels"
)

// Sample is one float sample: T in milliseconds since the Unix epoch, V with
// its exact IEEE 754 bits (stale markers included).
type Sample struct {
	T int64
	V float64
}

// SeriesSamples is one series' samples in an append batch. Labels must be
// sorted by name with unique, valid names and include __name__.
type SeriesSamples struct {
	Labels  labels.Labels
	Samples []Sample
	// Starts are start timestamps of some of Samples (SeriesData.SampleStarts).
	Starts []StartTime
}

// AppendResult reports what one Append stored. A batch may be partly
// accepted: rejected series or samples are counted and described in Errors,
// and the rest is durable when Append returns nil.
type AppendResult struct {
	SamplesWritten  int     // samples stored (exact duplicates dropped silently count here)
	SamplesRejected int     // samples refused, by any reason
	Errors          []error // at most a few, each wrapping one of the sentinels below
}

// Sentinel errors of the store seam. Receivers map them to statuses with
// errors.Is: the data errors to 400, ErrOverloaded to 429/503, others to 500.
var (
	// ErrInvalidSeries: the label set is empty, unsorted, has a duplicate or
	// invalid name, or lacks __name__.
	ErrInvalidSeries = errors.New("actastore: invalid series labels")
	// ErrOutOfOrder: the sample is older than the out-of-order window allows.
	ErrOutOfOrder = errors.New("actastore: out-of-order sample")
	// ErrOutOfBounds: the timestamp is beyond Options.MaxFuture ahead of the
	// store's clock, or below Options.MinTimestamp.
	ErrOutOfBounds = errors.New("actastore: sample timestamp out of bounds")
	// ErrDuplicateSample: same timestamp as a stored sample, different value.
	ErrDuplicateSample = errors.New("actastore: duplicate sample for timestamp")
	// ErrTooManySeries: the series limit (cardinality) would be exceeded.
	ErrTooManySeries = errors.New("actastore: series limit exceeded")
	// ErrOverloaded: the WAL or head is over its budget; retry later.
	ErrOverloaded = errors.New("actastore: overloaded, retry later")
	// ErrQueryLimit: a Select would return more series or samples than allowed.
	ErrQueryLimit = errors.New("actastore: query limit exceeded")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("actastore: store closed")
)

// SeriesSet iterates the series of a Select, sorted by labels.
type SeriesSet interface {
	Next() bool
	At() Series
	Err() error
	Close() error
}

// Series is one selected series.
type Series interface {
	Labels() labels.Labels
	// Iterator returns the series' samples in [mint, maxt], sorted by
	// timestamp, without duplicates.
	Iterator() SampleIterator
}

// SampleIterator iterates samples in timestamp order.
type SampleIterator interface {
	Next() bool
	At() (t int64, v float64)
	Err() error
}

// Querier is what the read paths use.
type Querier interface {
	// Select returns the series matching all matchers with their samples in
	// [mint, maxt] (milliseconds, inclusive both ends, as remote read uses).
	Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) SeriesSet
}

// Rejection reasons: the "reason" label of acta_store_samples_rejected_total
// and the keys of Result.Reasons.
const (
	ReasonInvalidSeries    = "invalid_series"
	ReasonInvalidHistogram = "invalid_histogram"
	ReasonOutOfOrder       = "out_of_order"
	ReasonDuplicate        = "duplicate"
	ReasonTooManySeries    = "too_many_series"
	ReasonOutOfBounds      = "out_of_bounds"
	// ReasonExemplarLabels: an exemplar's labels exceed 128 UTF-8
	// characters (OpenMetrics); it is dropped, as Prometheus drops it.
	ReasonExemplarLabels = "exemplar_labels_too_long"
)

var reasons = []string{ReasonInvalidSeries, ReasonInvalidHistogram, ReasonOutOfOrder, ReasonDuplicate, ReasonTooManySeries,
	ReasonOutOfBounds, ReasonExemplarLabels}

// ReasonOf names the rejection reason of an error wrapping one of the data
// sentinels, or "" for any other error.
func ReasonOf(err error) string {
	switch {
	case errors.Is(err, ErrInvalidSeries):
		return ReasonInvalidSeries
	case errors.Is(err, ErrInvalidHistogram):
		return ReasonInvalidHistogram
	case errors.Is(err, ErrOutOfOrder):
		return ReasonOutOfOrder
	case errors.Is(err, ErrDuplicateSample):
		return ReasonDuplicate
	case errors.Is(err, ErrTooManySeries):
		return ReasonTooManySeries
	case errors.Is(err, ErrOutOfBounds):
		return ReasonOutOfBounds
	}
	return ""
}
