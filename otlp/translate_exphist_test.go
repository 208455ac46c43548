//go:build !otlpfuzz

package otlp

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
)

// formatHistSeries renders histogram series one line per sample with the
// sample's record encoding in hex: every field, floats as bits.
func formatHistSeries(ss []actastore.SeriesExtras) []string {
	var out []string
	for _, s := range ss {
		for _, h := range s.Histograms {
			out = append(out, fmt.Sprintf("%s %d %x", s.Labels, h.T, histfile.AppendRecord(nil, h)))
		}
	}
	sort.Strings(out)
	return out
}

func formatMetadata(md []actastore.NamedMetadata) []string {
	var out []string
	for _, m := range md {
		out = append(out, fmt.Sprintf("%s %s %q %q", m.Name, m.Type, m.Unit, m.Help))
	}
	sort.Strings(out)
	return out
}

func formatMetadataMap(md map[string]actastore.Metadata) []string {
	var out []actastore.NamedMetadata
	for k, v := range md {
		out = append(out, actastore.NamedMetadata{Name: k, Metadata: v})
	}
	return formatMetadata(out)
}

// randExpBuckets fills an exponential histogram data point: scales from
// -4 to 20 (above 8 Prometheus merges buckets), offsets either side of
// zero, runs of empty buckets of every length (gaps up to two become zero
// buckets, longer ones new spans), sometimes no sum.
func randExpBuckets(r *rand.Rand, dp pmetric.ExponentialHistogramDataPoint) {
	dp.SetScale(int32(r.IntN(25) - 4))
	total := uint64(0)
	fill := func(b pmetric.ExponentialHistogramDataPointBuckets) {
		if r.IntN(4) == 0 {
			return
		}
		b.SetOffset(int32(r.IntN(40) - 20))
		n := r.IntN(30)
		counts := make([]uint64, n)
		for i := range counts {
			if r.IntN(3) > 0 {
				counts[i] = uint64(r.IntN(50))
			}
			total += counts[i]
		}
		b.BucketCounts().FromRaw(counts)
	}
	fill(dp.Positive())
	fill(dp.Negative())
	zc := uint64(r.IntN(5))
	dp.SetZeroCount(zc)
	dp.SetZeroThreshold(r.Float64() / 1000) // not carried over, as in Prometheus
	dp.SetCount(total + zc)
	if r.IntN(3) > 0 {
		dp.SetSum(r.Float64()*100 - 20)
	}
	dp.SetStartTimestamp(pcommon.Timestamp(1))
}

// TestExponentialHistogramsMatchPrometheus converts hand-picked data points
// (scale reduction, gaps, negative buckets, stale, no sum, an unusable
// scale) and compares every field with Prometheus's own conversion.
func TestExponentialHistogramsMatchPrometheus(t *testing.T) {
	type bk struct {
		off    int32
		counts []uint64
	}
	cases := []struct {
		name     string
		scale    int32
		pos, neg bk
		zero     uint64
		sum      *float64
		stale    bool
	}{
		{name: "schema0", scale: 0, pos: bk{0, []uint64{1, 1}}, zero: 1, sum: ptr(4.5)},
		{name: "min_schema", scale: -4, pos: bk{-3, []uint64{2, 0, 5}}, neg: bk{1, []uint64{7}}, sum: ptr(-1.0)},
		{name: "max_schema", scale: 8, pos: bk{100, []uint64{1, 0, 0, 1, 0, 0, 0, 3}}, sum: ptr(2.0)},
		{name: "scale9_merges", scale: 9, pos: bk{-7, []uint64{1, 2, 3, 4, 5, 0, 0, 6, 7}}, neg: bk{3, []uint64{9, 9}}, sum: ptr(1e9)},
		{name: "scale20_merges", scale: 20, pos: bk{-5000, []uint64{1, 2, 3, 0, 0, 0, 0, 0, 0, 4}}, zero: 3},
		{name: "leading_trailing_zeros", scale: 3, pos: bk{-2, []uint64{0, 0, 4, 0, 1, 0, 0}}, neg: bk{0, []uint64{0, 2}}, sum: ptr(0.5)},
		{name: "zero_only", scale: 2, zero: 5, sum: ptr(0.0)},
		{name: "stale", scale: 1, pos: bk{0, []uint64{1}}, stale: true},
	}
	md := pmetric.NewMetrics()
	sm := newResource(md, nil)
	for i, c := range cases {
		m := sm.Metrics().AppendEmpty()
		m.SetName("latency_" + c.name)
		m.SetUnit("ms")
		m.SetDescription("help for " + c.name)
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := h.DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.Timestamp(t0ns + uint64(i)*1_000_000))
		dp.SetScale(c.scale)
		dp.Positive().SetOffset(c.pos.off)
		dp.Positive().BucketCounts().FromRaw(c.pos.counts)
		dp.Negative().SetOffset(c.neg.off)
		dp.Negative().BucketCounts().FromRaw(c.neg.counts)
		dp.SetZeroCount(c.zero)
		total := c.zero
		for _, v := range append(append([]uint64(nil), c.pos.counts...), c.neg.counts...) {
			total += v
		}
		dp.SetCount(total)
		if c.sum != nil {
			dp.SetSum(*c.sum)
		}
		if c.stale {
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
	}
	got := NewTranslator(DefaultConfig()).Translate(md)
	prom, err := prometheusTranslate(t, md, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got.Rejected != 0 || got.Histograms != len(cases) || len(prom.hists) != len(cases) {
		t.Fatalf("rejected %d (%q), histograms %d, Prometheus's %d", got.Rejected, got.Reasons, got.Histograms, len(prom.hists))
	}
	diffLines(t, "ours vs Prometheus", formatHistSeries(got.Extras), formatHistSeries(prom.hists))
	diffLines(t, "metadata ours vs Prometheus", formatMetadata(got.Metadata), formatMetadataMap(prom.meta))
	for _, s := range got.Extras {
		for _, h := range s.Histograms {
			if err := h.H.Validate(); err != nil && !strings.Contains(s.Labels.String(), "stale") {
				t.Errorf("%s: %v", s.Labels, err)
			}
		}
	}

	// A scale below -4 has no native schema: rejected, the rest kept.
	md2 := pmetric.NewMetrics()
	m := newResource(md2, nil).Metrics().AppendEmpty()
	m.SetName("coarse")
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.SetScale(-5)
	if got := NewTranslator(DefaultConfig()).Translate(md2); got.Rejected != 1 || got.Histograms != 0 {
		t.Fatalf("scale -5: rejected %d, histograms %d", got.Rejected, got.Histograms)
	}
}
