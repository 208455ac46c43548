package otlp

import (
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pmetric"
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
func (t *Translator) addHistogramDataPoints(metric, family string, dps pmetric.HistogramDataPointSlice) {
	sumName, countName, bucketName := family+sumSuffix, family+countSuffix, family+bucketSuffix
	for i := range dps.Len() {
		dp := dps.At(i)
		base, err := t.dataPointLabels(dp.Attributes(), "")
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		ts := msTimestamp(dp.Timestamp())
		stale := dp.Flags().NoRecordedValue()
		val := func(v float64) float64 {
			if stale {
				return staleNaN
			}
			return v
		}
		if dp.HasSum() {
			t.appendSample(t.withName(base, sumName), ts, val(dp.Sum()))
		}
		t.appendSample(t.withName(base, countName), ts, val(float64(dp.Count())))

		bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
		var cumulative uint64
		for j := 0; j < bounds.Len() && j < counts.Len(); j++ {
			bound := bounds.At(j)
			cumulative += counts.At(j)
			if math.IsInf(bound, 1) {
				continue
			}
			le := strconv.FormatFloat(bound, 'f', -1, 64)
			t.appendSample(t.withName(base, bucketName, leLabel, le), ts, val(float64(cumulative)))
		}
		t.appendSample(t.withName(base, bucketName, leLabel, plusInf), ts, val(float64(dp.Count())))
	}
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
		ts := msTimestamp(dp.Timestamp())
		stale := dp.Flags().NoRecordedValue()
		val := func(v float64) float64 {
			if stale {
				return staleNaN
			}
			return v
		}
		t.appendSample(t.withName(base, sumName), ts, val(dp.Sum()))
		t.appendSample(t.withName(base, countName), ts, val(float64(dp.Count())))
		qs := dp.QuantileValues()
		for j := range qs.Len() {
			q := qs.At(j)
			qstr := strconv.FormatFloat(q.Quantile(), 'f', -1, 64)
			t.appendSample(t.withName(base, family, quantileLabel, qstr), ts, val(q.Value()))
		}
	}
}
