package otlp

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// otlpZeroThreshold is the zero bucket width Prometheus's OTLP receiver
// gives every converted exponential histogram (its defaultZeroThreshold):
// OTLP's own zero_threshold field is not carried over.
const otlpZeroThreshold = 1e-128

// addExponentialHistogramDataPoints stores each data point as one integer
// native histogram sample under the family name, with its exemplars, as
// Prometheus's OTLP receiver converts them: labels from the attributes,
// schema = scale (scales above 8 merged down to 8, below -4 rejected),
// zero threshold 1e-128, spans and deltas from the dense bucket arrays.
// Cumulative points keep UnknownCounterReset so the reader detects
// resets; delta ones (delta_temporality native) are gauge histograms.
func (t *Translator) addExponentialHistogramDataPoints(metric, family string, dps pmetric.ExponentialHistogramDataPointSlice, delta bool) {
	for i := range dps.Len() {
		dp := dps.At(i)
		h, err := exponentialToNative(dp, delta)
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		base, err := t.dataPointLabels(dp.Attributes(), "")
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		ms := msTimestamp(dp.Timestamp())
		exs, err := t.convertExemplars(metric, dp.Exemplars(), ms)
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		sortExemplars(exs)
		ls := t.withName(base, family)
		t.appendHistogram(ls, actastore.HistogramSample{T: ms, H: h}, msTimestamp(dp.StartTimestamp()))
		t.appendExemplars(ls, exs)
	}
}

// exponentialToNative converts one data point (Prometheus's OTLP receiver,
// v0.316.0, exponentialToNativeHistogram): a delta point gets the
// GaugeType reset hint, as Prometheus gives it under native delta
// ingestion so that its TSDB does not cut a chunk at every "reset".
func exponentialToNative(dp pmetric.ExponentialHistogramDataPoint, delta bool) (*histogram.Histogram, error) {
	scale := dp.Scale()
	if scale < histogram.ExponentialSchemaMin {
		return nil, fmt.Errorf("exponential histogram scale %d below the smallest native schema %d", scale, histogram.ExponentialSchemaMin)
	}
	var scaleDown int32
	if scale > histogram.ExponentialSchemaMax {
		scaleDown = scale - histogram.ExponentialSchemaMax
		scale = histogram.ExponentialSchemaMax
	}
	hint := histogram.UnknownCounterReset
	if delta {
		hint = histogram.GaugeType
	}
	h := &histogram.Histogram{
		CounterResetHint: hint,
		Schema:           scale,
		ZeroThreshold:    otlpZeroThreshold,
		ZeroCount:        dp.ZeroCount(),
	}
	h.PositiveSpans, h.PositiveBuckets = bucketsLayout(dp.Positive().BucketCounts().AsRaw(), dp.Positive().Offset(), scaleDown)
	h.NegativeSpans, h.NegativeBuckets = bucketsLayout(dp.Negative().BucketCounts().AsRaw(), dp.Negative().Offset(), scaleDown)
	if dp.Flags().NoRecordedValue() {
		// The stale marker: the stale NaN in Sum, and Prometheus also puts
		// its bits in Count.
		h.Sum = math.Float64frombits(value.StaleNaN)
		h.Count = value.StaleNaN
		return h, nil
	}
	if dp.HasSum() {
		h.Sum = dp.Sum()
	}
	h.Count = dp.Count()
	return h, nil
}

// bucketsLayout turns OTLP's dense bucket counts starting at index offset
// (bucket i covers (base^(offset+i), base^(offset+i+1)]) into native spans
// and deltas. Native bucket indexes are one above OTLP's (upper bound
// base^index). With scaleDown > 0, each group of 2^scaleDown neighbouring
// buckets merges into one. Gaps of at most two empty buckets are filled
// with zero buckets instead of starting a span, as Prometheus does, so
// the layout (not just the counts) matches its own conversion.
func bucketsLayout(counts []uint64, offset, scaleDown int32) ([]histogram.Span, []int64) {
	if len(counts) == 0 {
		return nil, nil
	}
	var (
		spans  = []histogram.Span{{Offset: offset>>scaleDown + 1}}
		deltas []int64
		prev   int64
	)
	add := func(c int64) {
		spans[len(spans)-1].Length++
		deltas = append(deltas, c-prev)
		prev = c
	}
	idx := offset>>scaleDown + 1 // native index of the bucket being summed
	last := idx - 1              // native index of the last bucket emitted
	var sum int64
	emit := func() {
		switch gap := idx - last - 1; {
		case gap > 2:
			spans = append(spans, histogram.Span{Offset: gap})
		default:
			for range gap {
				add(0)
			}
		}
		add(sum)
		last = idx
	}
	for i, c := range counts {
		next := (int32(i)+offset)>>scaleDown + 1
		if next == idx {
			sum += int64(c)
			continue
		}
		if sum != 0 {
			emit()
		}
		sum, idx = int64(c), next
	}
	emit()
	return spans, deltas
}

// appendHistogram adds one histogram sample to the series with labels ls.
// appendHistogram adds one histogram to the series with labels ls; st is
// its start timestamp (ms; 0: none), as appendSample's.
func (t *Translator) appendHistogram(ls labels.Labels, hs actastore.HistogramSample, st int64) {
	i := t.extrasIndex(ls)
	t.out.Extras[i].Histograms = append(t.out.Extras[i].Histograms, hs)
	t.out.Histograms++
	if st != 0 {
		t.out.Extras[i].HistogramStarts = append(t.out.Extras[i].HistogramStarts, actastore.StartTime{T: hs.T, ST: st})
	}
}

// extrasIndex returns the index of the series with labels ls in
// t.out.Extras, adding the series if new.
func (t *Translator) extrasIndex(ls labels.Labels) int {
	h := ls.Hash()
	for _, i := range t.hindex[h] {
		if labels.Equal(t.out.Extras[i].Labels, ls) {
			return i
		}
	}
	t.hindex[h] = append(t.hindex[h], len(t.out.Extras))
	t.out.Extras = append(t.out.Extras, actastore.SeriesExtras{Labels: ls})
	return len(t.out.Extras) - 1
}
