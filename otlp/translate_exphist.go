package otlp

import "go.opentelemetry.io/collector/pdata/pmetric"

// errNoNativeHistograms explains the rejection. Prometheus stores an
// exponential histogram as one native histogram sample; the store keeps only
// float samples so far.
const errNoNativeHistograms = "exponential histogram data points are not supported yet: the store has no native histograms"

// addExponentialHistogramDataPoints rejects every data point for now. When
// the store gains native histograms, this becomes: labels from
// dataPointLabels(dp.Attributes(), family), the data point converted to a
// native histogram (schema, zero bucket, spans and deltas, as Prometheus's
// exponentialToNativeHistogram does), appended under those labels. The
// walk, naming, temporality check and target_info span already cover it.
func (t *Translator) addExponentialHistogramDataPoints(metric, _ string, dps pmetric.ExponentialHistogramDataPointSlice) {
	t.reject(dps.Len(), "metric %q: %s", metric, errNoNativeHistograms)
}
