package actastore

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// Batch is one request's data of every kind: float samples, native
// histograms, exemplars and metric metadata. A receiver fills it with Add and
// AddMetadata while it decodes, then hands it to Appender.Commit, which
// stores all of it with one WAL write and one (group-commit) fsync — the
// shape of Prometheus's storage.Appender (add, add, ..., Commit).
//
// A Batch does not copy what it is given: the slices (and label sets) must
// stay unchanged until Commit returns. The store keeps its own copy of
// everything it stores. Reset empties a Batch keeping its capacity, so a
// receiver can pool them.
type Batch struct {
	Series   []SeriesData
	Metadata []NamedMetadata
}

// SeriesData is one series' part of a Batch. Labels follow SeriesSamples'
// rules (a permutation of a valid label set is sorted by the store).
// Samples and Histograms are in any order; T is ms since the Unix epoch.
type SeriesData struct {
	Labels labels.Labels
	// LabelPairs, when set, stands for Labels (left empty): the series'
	// labels in the order the sender sent them, in the canonical
	// encoding's form: their count (AppendLabelCount), then each label
	// (AppendLabelPair). For labels sent sorted these bytes are the
	// series' canonical encoding, so the store finds a known series by
	// their hash, compared with its stored labels byte for byte, and
	// decodes, sorts and validates them only for a series it does not know
	// yet: a receiver never builds a labels.Labels for the series it sees
	// again and again.
	LabelPairs []byte
	Samples    []Sample
	Histograms []HistogramSample
	Exemplars  []Exemplar
	// SampleStarts and HistogramStarts are the start timestamps a sender
	// gave for some of Samples and Histograms (by T, any order; nil when
	// none): stored with the samples accepted, checked as Prometheus does
	// (startTimeVerdict); one whose sample is rejected is dropped with it.
	SampleStarts    []StartTime
	HistogramStarts []StartTime
}

// AppendLabelCount starts a SeriesData.LabelPairs encoding: the number of
// labels that follow, as a uvarint.
func AppendLabelCount(dst []byte, n int) []byte {
	return binary.AppendUvarint(dst, uint64(n))
}

// AppendLabelPair appends one label to a SeriesData.LabelPairs encoding
// (after AppendLabelCount): uvarint name length, name, uvarint value
// length, value.
func AppendLabelPair(dst, name, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// labelsFromPairs decodes a LabelPairs encoding into a sorted label set;
// a count other than the labels that follow is an error.
func labelsFromPairs(b *labels.ScratchBuilder, pairs []byte) (labels.Labels, error) {
	b.Reset()
	n, k := binary.Uvarint(pairs)
	if k <= 0 {
		return labels.EmptyLabels(), fmt.Errorf("%w: bad label pair encoding", ErrInvalidSeries)
	}
	pairs = pairs[k:]
	got := uint64(0)
	for ; len(pairs) > 0; got++ {
		var name, value string
		var ok bool
		if name, pairs, ok = readString(pairs); !ok {
			return labels.EmptyLabels(), fmt.Errorf("%w: bad label pair encoding", ErrInvalidSeries)
		}
		if value, pairs, ok = readString(pairs); !ok {
			return labels.EmptyLabels(), fmt.Errorf("%w: bad label pair encoding", ErrInvalidSeries)
		}
		b.Add(name, value)
	}
	if got != n {
		return labels.EmptyLabels(), fmt.Errorf("%w: bad label pair encoding: count %d, %d labels follow", ErrInvalidSeries, n, got)
	}
	b.Sort()
	return b.Labels(), nil
}

// Add queues one series' data. Empty data is ignored.
func (b *Batch) Add(lset labels.Labels, samples []Sample, hists []HistogramSample, exemplars []Exemplar) {
	if len(samples) == 0 && len(hists) == 0 && len(exemplars) == 0 {
		return
	}
	b.Series = append(b.Series, SeriesData{Labels: lset, Samples: samples, Histograms: hists, Exemplars: exemplars})
}

// AddMetadata queues a metric family's metadata (the latest per name wins).
func (b *Batch) AddMetadata(m NamedMetadata) {
	if m.Name != "" {
		b.Metadata = append(b.Metadata, m)
	}
}

// Reset empties the batch, dropping every reference into the data it held
// but keeping the capacity of its slices.
func (b *Batch) Reset() {
	clear(b.Series)
	clear(b.Metadata)
	b.Series, b.Metadata = b.Series[:0], b.Metadata[:0]
}

// Len is the number of items of every kind in the batch.
func (b *Batch) Len() (samples, histograms, exemplars, metadata int) {
	for i := range b.Series {
		samples += len(b.Series[i].Samples)
		histograms += len(b.Series[i].Histograms)
		exemplars += len(b.Series[i].Exemplars)
	}
	return samples, histograms, exemplars, len(b.Metadata)
}

// Counts says what became of the items of one kind in a Commit.
type Counts struct {
	Written  int // stored, exact duplicates of stored items included
	Rejected int // refused, for any reason
}

// Result reports what one Commit stored. A batch may be partly accepted:
// rejected items are counted per kind and by reason, and described by a few
// Errors (each wrapping a sentinel of api.go); the rest is durable when
// Commit returns a nil error.
type Result struct {
	Samples    Counts
	Histograms Counts
	Exemplars  Counts
	Metadata   Counts
	// Reasons counts rejected items of every kind by reason: the values of
	// the "reason" label of acta_store_samples_rejected_total (Reason*).
	// Nil when nothing was rejected.
	Reasons map[string]int
	Errors  []error // at most maxResultErrors
}

// Rejected is the number of rejected items of every kind.
func (r *Result) Rejected() int {
	return r.Samples.Rejected + r.Histograms.Rejected + r.Exemplars.Rejected + r.Metadata.Rejected
}

// reject counts n rejected items of one kind under reason and keeps err as
// an example.
func (r *Result) reject(c *Counts, n int, reason string, err error) {
	if n <= 0 {
		return
	}
	c.Rejected += n
	if r.Reasons == nil {
		r.Reasons = make(map[string]int, 2)
	}
	r.Reasons[reason] += n
	if err != nil && len(r.Errors) < maxResultErrors {
		r.Errors = append(r.Errors, err)
	}
}

// Appender is what the receivers write to: one Commit per request.
type Appender interface {
	// Commit stores the batch durably (per the WAL sync policy) before it
	// returns. A non-nil error means nothing of the batch was acknowledged
	// (ErrClosed, ErrOverloaded, a cancelled context, an I/O failure);
	// otherwise Result says what was stored and what was refused.
	Commit(ctx context.Context, b *Batch) (Result, error)
}
