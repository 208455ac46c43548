package otlp

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// Timestamps used across the tests: ns in OTLP, ms in the store.
const (
	t0ns = 1_700_000_000_123_456_789
	t0ms = 1_700_000_000_123
)

// formatSeries renders a batch one sample a line, "labels T V", with the
// stale marker written as "stale" so its exact bits are part of the check.
func formatSeries(ss []actastore.SeriesSamples) []string {
	var out []string
	for _, s := range ss {
		for _, smp := range s.Samples {
			v := fmt.Sprint(smp.V)
			if math.Float64bits(smp.V) == value.StaleNaN {
				v = "stale"
			}
			out = append(out, fmt.Sprintf("%s %d %s", s.Labels.String(), smp.T, v))
		}
	}
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got:\n  %s\n want:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Builders for test input.

func newResource(md pmetric.Metrics, attrs map[string]any) pmetric.ScopeMetrics {
	rm := md.ResourceMetrics().AppendEmpty()
	if err := rm.Resource().Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return rm.ScopeMetrics().AppendEmpty()
}

func setAttrs(m pcommon.Map, attrs map[string]any) {
	if err := m.FromRaw(attrs); err != nil {
		panic(err)
	}
}

var svc = map[string]any{
	"service.name":        "checkout",
	"service.namespace":   "shop",
	"service.instance.id": "pod-1",
	"host.name":           "node-a",
}

func addGauge(sm pmetric.ScopeMetrics, name, unit string, ts uint64, v float64, attrs map[string]any) pmetric.NumberDataPoint {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.SetDoubleValue(v)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func addSum(sm pmetric.ScopeMetrics, name, unit string, monotonic bool, temp pmetric.AggregationTemporality, ts uint64, v int64, attrs map[string]any) {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	s := m.SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(temp)
	dp := s.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(ts - 60e9))
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.SetIntValue(v)
	setAttrs(dp.Attributes(), attrs)
}

func addHistogram(sm pmetric.ScopeMetrics, name, unit string, ts uint64, bounds []float64, counts []uint64, sum *float64, attrs map[string]any) pmetric.HistogramDataPoint {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	if sum != nil {
		dp.SetSum(*sum)
	}
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func addSummary(sm pmetric.ScopeMetrics, name, unit string, ts uint64, count uint64, sum float64, qs [][2]float64) pmetric.SummaryDataPoint {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	dp := m.SetEmptySummary().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.SetCount(count)
	dp.SetSum(sum)
	for _, q := range qs {
		qv := dp.QuantileValues().AppendEmpty()
		qv.SetQuantile(q[0])
		qv.SetValue(q[1])
	}
	return dp
}

func addExpHistogram(sm pmetric.ScopeMetrics, name string, temp pmetric.AggregationTemporality, ts uint64) {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit("s")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(temp)
	dp := h.DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.Timestamp(ts))
	dp.SetScale(0)
	dp.SetCount(3)
	dp.SetSum(4.5)
	dp.SetZeroCount(1)
	dp.Positive().SetOffset(0)
	dp.Positive().BucketCounts().FromRaw([]uint64{1, 1})
}

func ptr[T any](v T) *T { return &v }

// targetInfo is the target_info line for the svc resource at ms.
func targetInfo(ms int64) string {
	return fmt.Sprintf(`{__name__="target_info", host_name="node-a", instance="pod-1", job="shop/checkout"} %d 1`, ms)
}

// TestTranslateMatchesPrometheus runs each case through our translation
// and Prometheus's, and checks both against the series written out by

// Stream start and request times of the delta tests: a delta covers
// (start, end], the next one starts where the last ended.
const (
	dStart = t0ns - 60e9
	dT1    = t0ns
	dT2    = t0ns + 10e9
	dT3    = t0ns + 20e9
)

// addDeltaMetric adds a metric of kind (pmetric.MetricTypeSum, Histogram or
// ExponentialHistogram) with delta temporality and returns it.
func addDeltaMetric(sm pmetric.ScopeMetrics, name, unit string, kind pmetric.MetricType, monotonic bool) pmetric.Metric {
	m := sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	switch kind {
	case pmetric.MetricTypeSum:
		s := m.SetEmptySum()
		s.SetIsMonotonic(monotonic)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	case pmetric.MetricTypeHistogram:
		m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	case pmetric.MetricTypeExponentialHistogram:
		m.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	}
	return m
}

func deltaSumPoint(m pmetric.Metric, start, end uint64, v int64, attrs map[string]any) pmetric.NumberDataPoint {
	dp := m.Sum().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(start))
	dp.SetTimestamp(pcommon.Timestamp(end))
	dp.SetIntValue(v)
	setAttrs(dp.Attributes(), attrs)
	return dp
}

func deltaHistPoint(m pmetric.Metric, start, end uint64, bounds []float64, counts []uint64, sum float64) pmetric.HistogramDataPoint {
	dp := m.Histogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(start))
	dp.SetTimestamp(pcommon.Timestamp(end))
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(sum)
	return dp
}

func deltaExpPoint(m pmetric.Metric, start, end uint64, scale, offset int32, counts []uint64, zero uint64, sum float64) {
	dp := m.ExponentialHistogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(start))
	dp.SetTimestamp(pcommon.Timestamp(end))
	dp.SetScale(scale)
	dp.Positive().SetOffset(offset)
	dp.Positive().BucketCounts().FromRaw(counts)
	n := zero
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetZeroCount(zero)
	dp.SetSum(sum)
}

func addExemplar(es pmetric.ExemplarSlice, ts uint64, v float64, trace byte) {
	ex := es.AppendEmpty()
	ex.SetTimestamp(pcommon.Timestamp(ts))
	ex.SetDoubleValue(v)
	ex.SetTraceID(pcommon.TraceID{trace, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	ex.SetSpanID(pcommon.SpanID{trace, 1, 2, 3, 4, 5, 6, 7})
}
