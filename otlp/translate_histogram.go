package otlp

import (
	"math"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// Suffixes and label names of classic histograms and summaries.
const (
	sumSuffix     = "_sum"
	countSuffix   = "_count"
	bucketSuffix  = "_bucket"
	leLabel       = "le"
	quantileLabel = "quantile"
	plusInf       = "+Inf"
)

// addHistogramDataPoints writes each data point as a Prometheus classic
// histogram, in Prometheus's order: _sum (only when the point has a sum),
// _count, cumulative _bucket{le} per explicit bound, then _bucket{le="+Inf"}
// equal to the count. An explicit +Inf bound is skipped (the +Inf bucket
// comes from the count); bucket counts beyond the bounds are ignored.
//
// Exemplars go to buckets as Prometheus's translator hands them out:
// walking the exemplars in the request's order, each bucket takes the next
// ones whose value is at most its bound, stopping at the first above it
// (so an exemplar out of value order may land in a higher bucket); the
// +Inf bucket takes the rest; _sum and _count get none.
func (t *Translator) addHistogramDataPoints(metric, family string, dps pmetric.HistogramDataPointSlice) {
	sumName, countName, bucketName := family+sumSuffix, family+countSuffix, family+bucketSuffix
	for i := range dps.Len() {
		dp := dps.At(i)
		base, err := t.dataPointLabels(dp.Attributes(), "")
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		ts, st := msTimestamp(dp.Timestamp()), msTimestamp(dp.StartTimestamp())
		exs, err := t.convertExemplars(metric, dp.Exemplars(), ts)
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		stale := dp.Flags().NoRecordedValue()
		val := func(v float64) float64 {
			if stale {
				return staleNaN
			}
			return v
		}
		if dp.HasSum() {
			t.appendSample(t.withName(base, sumName), ts, st, val(dp.Sum()))
		}
		t.appendSample(t.withName(base, countName), ts, st, val(float64(dp.Count())))

		bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
		var cumulative uint64
		next := 0 // first exemplar not yet in a bucket
		for j := 0; j < bounds.Len() && j < counts.Len(); j++ {
			bound := bounds.At(j)
			cumulative += counts.At(j)
			if math.IsInf(bound, 1) {
				continue
			}
			from := next
			for next < len(exs) && exs[next].Value <= bound {
				next++
			}
			le := strconv.FormatFloat(bound, 'f', -1, 64)
			ls := t.withName(base, bucketName, leLabel, le)
			t.appendSample(ls, ts, st, val(float64(cumulative)))
			t.appendBucketExemplars(ls, exs[from:next])
		}
		ls := t.withName(base, bucketName, leLabel, plusInf)
		t.appendSample(ls, ts, st, val(float64(dp.Count())))
		t.appendBucketExemplars(ls, exs[next:])
	}
}

// appendBucketExemplars sorts one bucket's share of the point's exemplars
// (shared with no other bucket) and adds it to the bucket's series.
func (t *Translator) appendBucketExemplars(ls labels.Labels, es []actastore.Exemplar) {
	sortExemplars(es)
	t.appendExemplars(ls, es)
}

// addSummaryDataPoints writes _sum, _count and one series per quantile
// under the family name with quantile="<q>", in Prometheus's order.
func (t *Translator) addSummaryDataPoints(metric, family string, dps pmetric.SummaryDataPointSlice) {
	sumName, countName := family+sumSuffix, family+countSuffix
	for i := range dps.Len() {
		dp := dps.At(i)
		base, err := t.dataPointLabels(dp.Attributes(), "")
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		ts, st := msTimestamp(dp.Timestamp()), msTimestamp(dp.StartTimestamp())
		stale := dp.Flags().NoRecordedValue()
		val := func(v float64) float64 {
			if stale {
				return staleNaN
			}
			return v
		}
		t.appendSample(t.withName(base, sumName), ts, st, val(dp.Sum()))
		t.appendSample(t.withName(base, countName), ts, st, val(float64(dp.Count())))
		qs := dp.QuantileValues()
		for j := range qs.Len() {
			q := qs.At(j)
			qstr := strconv.FormatFloat(q.Quantile(), 'f', -1, 64)
			t.appendSample(t.withName(base, family, quantileLabel, qstr), ts, st, val(q.Value()))
		}
	}
}
