// The comparisons with Prometheus link its config and storage packages,
// whose size makes fuzz minimization crawl; fuzz with -tags otlpfuzz to
// leave them out (see FuzzHandler).

//go:build !otlpfuzz

package otlp

import (
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// Vocabularies with the names that trip translators: dots, collisions
// after escaping, leading digits and underscores, reserved names, UTF-8,
// unit strings with and without suffix mappings.
var (
	randAttrNames = []string{"a.b", "a_b", "a-b", "_x", "__y", "9n", "__name__", "le", "quantile", "job", "instance",
		"service.name", "service.namespace", "service.instance.id", "host.name", "ü.ñ", "a__b", "http.route", "otel_scope_name"}
	randAttrValues  = []any{"v", "", "x;y", "ü", int64(7), 2.5, true}
	randMetricNames = []string{"http.requests", "x", "foo_total", "total", "ratio", "1abc", "ü.metric", "a..b", "mem.used", "dur_seconds", "__"}
	randUnits       = []string{"", "1", "By", "s", "ms", "{req}", "By/s", "%", "m/s", "Cel", "unknownunit"}
)

func randAttrs(r *rand.Rand, m pcommon.Map, n int) {
	for range n {
		k := randAttrNames[r.IntN(len(randAttrNames))]
		switch v := randAttrValues[r.IntN(len(randAttrValues))].(type) {
		case string:
			m.PutStr(k, v)
		case int64:
			m.PutInt(k, v)
		case float64:
			m.PutDouble(k, v)
		case bool:
			m.PutBool(k, v)
		}
	}
}

func randMetrics(r *rand.Rand) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for range 1 + r.IntN(3) {
		rm := md.ResourceMetrics().AppendEmpty()
		randAttrs(r, rm.Resource().Attributes(), r.IntN(6))
		for range 1 + r.IntN(2) {
			sm := rm.ScopeMetrics().AppendEmpty()
			if r.IntN(2) == 0 {
				sm.Scope().SetName("scope.lib")
				sm.Scope().SetVersion("1.0")
				randAttrs(r, sm.Scope().Attributes(), r.IntN(2))
			}
			for range 1 + r.IntN(5) {
				randMetric(r, sm.Metrics().AppendEmpty())
			}
		}
	}
	return md
}

func randMetric(r *rand.Rand, m pmetric.Metric) {
	m.SetName(randMetricNames[r.IntN(len(randMetricNames))])
	m.SetUnit(randUnits[r.IntN(len(randUnits))])
	ts := func() pcommon.Timestamp {
		return pcommon.Timestamp(t0ns + uint64(r.IntN(900))*1e9 + uint64(r.IntN(1e6)))
	}
	flags := func() pmetric.DataPointFlags {
		return pmetric.DefaultDataPointFlags.WithNoRecordedValue(r.IntN(8) == 0)
	}
	n := r.IntN(4)
	temp := func() pmetric.AggregationTemporality {
		if r.IntN(4) == 0 {
			return pmetric.AggregationTemporalityDelta
		}
		return pmetric.AggregationTemporalityCumulative
	}
	switch r.IntN(5) {
	case 0:
		dps := m.SetEmptyGauge().DataPoints()
		for range n {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(ts())
			dp.SetDoubleValue(r.NormFloat64())
			dp.SetFlags(flags())
			randAttrs(r, dp.Attributes(), r.IntN(4))
			randExemplars(r, dp.Exemplars(), dp.Timestamp())
		}
	case 1:
		s := m.SetEmptySum()
		s.SetIsMonotonic(r.IntN(2) == 0)
		s.SetAggregationTemporality(temp())
		for range n {
			dp := s.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts())
			dp.SetIntValue(r.Int64N(1000))
			dp.SetFlags(flags())
			randAttrs(r, dp.Attributes(), r.IntN(4))
			randExemplars(r, dp.Exemplars(), dp.Timestamp())
		}
	case 2:
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(temp())
		for range n {
			dp := h.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts())
			nb := r.IntN(4)
			bounds := make([]float64, nb)
			for i := range bounds {
				bounds[i] = float64(i+1) * 0.25
			}
			if nb > 0 && r.IntN(5) == 0 {
				bounds[nb-1] = math.Inf(1)
			}
			counts := make([]uint64, nb+r.IntN(2)) // sometimes one short
			var total uint64
			for i := range counts {
				counts[i] = uint64(r.IntN(5))
				total += counts[i]
			}
			dp.ExplicitBounds().FromRaw(bounds)
			dp.BucketCounts().FromRaw(counts)
			dp.SetCount(total)
			if r.IntN(2) == 0 {
				dp.SetSum(float64(total) * 0.3)
			}
			dp.SetFlags(flags())
			randAttrs(r, dp.Attributes(), r.IntN(4))
			randExemplars(r, dp.Exemplars(), dp.Timestamp())
		}
	case 3:
		dps := m.SetEmptySummary().DataPoints()
		for range n {
			dp := dps.AppendEmpty()
			dp.SetTimestamp(ts())
			dp.SetCount(uint64(r.IntN(100)))
			dp.SetSum(r.Float64() * 10)
			for _, q := range []float64{0.5, 0.9, 0.99}[:r.IntN(4)] {
				qv := dp.QuantileValues().AppendEmpty()
				qv.SetQuantile(q)
				qv.SetValue(r.Float64())
			}
			dp.SetFlags(flags())
			randAttrs(r, dp.Attributes(), r.IntN(4))
		}
	case 4:
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(temp())
		for range n {
			dp := h.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts())
			randExpBuckets(r, dp)
			dp.SetFlags(flags())
			randAttrs(r, dp.Attributes(), r.IntN(4))
			randExemplars(r, dp.Exemplars(), dp.Timestamp())
		}
	}
}

// randExemplars adds up to three exemplars: values around the histogram
// bounds and out of order, trace and span IDs or not, attributes that
// collide with trace_id, empty values, sets over 128 characters, times
// before, at and after the point's, or none.
func randExemplars(r *rand.Rand, es pmetric.ExemplarSlice, ts pcommon.Timestamp) {
	for range r.IntN(4) {
		ex := es.AppendEmpty()
		switch r.IntN(3) {
		case 0:
			ex.SetIntValue(r.Int64N(3))
		default:
			ex.SetDoubleValue(float64(r.IntN(6)) * 0.25) // on and between the bounds
		}
		switch r.IntN(4) {
		case 0: // no time
		case 1:
			ex.SetTimestamp(ts)
		default:
			ex.SetTimestamp(ts - pcommon.Timestamp(r.IntN(5e9)) + 1e9)
		}
		if r.IntN(4) != 0 {
			var id pcommon.TraceID
			for i := range id {
				id[i] = byte(r.IntN(256))
			}
			ex.SetTraceID(id)
		}
		if r.IntN(4) != 0 {
			var id pcommon.SpanID
			for i := range id {
				id[i] = byte(r.IntN(256))
			}
			ex.SetSpanID(id)
		}
		attrs := ex.FilteredAttributes()
		for range r.IntN(3) {
			switch r.IntN(5) {
			case 0:
				attrs.PutStr("trace_id", "from-attr")
			case 1:
				attrs.PutStr("user", "")
			case 2:
				attrs.PutStr("long", strings.Repeat("x", 40+r.IntN(60)))
			default:
				attrs.PutInt(randAttrNames[r.IntN(len(randAttrNames))], r.Int64N(100))
			}
		}
	}
}

// formatExemplars renders exemplars one a line: series, time, value bits,
// exemplar labels.
func formatExemplars(ss []actastore.SeriesExtras) []string {
	var out []string
	for _, s := range ss {
		for _, e := range s.Exemplars {
			out = append(out, fmt.Sprintf("%s %d %v(%x) %s", s.Labels, e.T, e.Value, math.Float64bits(e.Value), e.Labels))
		}
	}
	sort.Strings(out)
	return out
}

// TestTranslateRandomAgainstPrometheus compares our series with
// Prometheus's for random requests under every strategy and a mix of
// options, delta temporality rejected or ingested natively, exemplars on
// every kind. Where Prometheus fails a request (it rolls the whole request
// back) there is nothing to compare; we count those to be sure most
// requests are compared.
func TestTranslateRandomAgainstPrometheus(t *testing.T) {
	strategies := []otlptranslator.TranslationStrategyOption{
		otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation,
	}
	r := rand.New(rand.NewPCG(1, 2))
	compared, skipped, exemplars := 0, 0, 0
	skipReasons := map[string]int{}
	log.SetOutput(io.Discard) // Prometheus's translator logs overwritten __name__ with the log package
	defer log.SetOutput(os.Stderr)
	for i := range 800 {
		cfg := DefaultConfig()
		cfg.TranslationStrategy = strategies[i%len(strategies)]
		switch r.IntN(3) {
		case 1:
			cfg.PromoteResourceAttributes = []string{"host.name", "a.b", "_x"}
		case 2:
			cfg.PromoteAllResourceAttributes = true
			cfg.IgnoreResourceAttributes = []string{"host.name"}
		}
		cfg.KeepIdentifyingResourceAttributes = r.IntN(2) == 0
		cfg.PromoteScopeMetadata = r.IntN(2) == 0
		cfg.TargetInfo = r.IntN(4) != 0
		cfg.LabelNameUnderscoreSanitization = r.IntN(3) != 0
		cfg.LabelNamePreserveMultipleUnderscores = r.IntN(3) != 0
		if r.IntN(3) != 0 {
			cfg.DeltaTemporality = DeltaNative
		}

		md := randMetrics(r)
		prom, err := prometheusTranslate(t, md, cfg)
		got := NewTranslator(cfg).Translate(md)
		if err != nil {
			skipped++
			skipReasons[err.Error()]++
			continue
		}
		compared++
		diffLines(t, "random request", formatSeries(got.Series), formatSeries(prom.series))
		if t.Failed() {
			t.Fatalf("request %d differs (config %+v)", i, cfg)
		}
		// Everything Prometheus accepted we accepted, except what became
		// native histograms.
		expHist := 0
		for j := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(j).ScopeMetrics()
			for k := range sms.Len() {
				ms := sms.At(k).Metrics()
				for l := range ms.Len() {
					if ms.At(l).Type() == pmetric.MetricTypeExponentialHistogram {
						expHist += ms.At(l).ExponentialHistogram().DataPoints().Len()
					}
				}
			}
		}
		if got.Rejected != 0 || prom.histograms != expHist || got.Histograms != expHist {
			t.Fatalf("request %d: rejected %d, native histograms %d, Prometheus's %d, exponential data points %d; reasons %q",
				i, got.Rejected, got.Histograms, prom.histograms, expHist, got.Reasons)
		}
		diffLines(t, "random request histograms", formatHistSeries(got.Extras), formatHistSeries(prom.hists))
		diffLines(t, "random request metadata", formatMetadata(got.Metadata), formatMetadataMap(prom.meta))
		diffLines(t, "random request exemplars", formatExemplars(got.Extras), formatExemplars(prom.exemplars))
		exemplars += got.Exemplars
		if t.Failed() {
			t.Fatalf("request %d differs (config %+v)", i, cfg)
		}
	}
	t.Logf("compared %d random requests (%d exemplars), %d skipped (Prometheus failed them): %v", compared, exemplars, skipped, skipReasons)
	if compared < 400 || exemplars < 500 {
		t.Fatalf("only %d of 800 requests compared, %d exemplars", compared, exemplars)
	}
}
