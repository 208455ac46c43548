// Package histtest holds the native histogram cases every round-trip test
// of the project runs (histfile, the store, remote write, remote read): each
// exponential schema with positive, negative and zero buckets, counter
// resets and every reset hint, float histograms, custom buckets (-53), an
// empty histogram and stale markers. Every case passes
// model/histogram's Validate.
package histtest

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"

	"github.com/acta-remote/acta-remote/histfile"
)

// StaleSum is the Prometheus stale marker (model/value.StaleNaN) as a sum.
var StaleSum = math.Float64frombits(value.StaleNaN)

// Series is one case: a metric name and its samples in timestamp order.
type Series struct {
	Name    string
	Samples []histfile.Sample
}

// intHist builds a valid integer histogram from absolute bucket counts.
func intHist(schema int32, zt float64, zc uint64, sum float64, hint histogram.CounterResetHint,
	ps []histogram.Span, pos []int64, ns []histogram.Span, neg []int64) *histogram.Histogram {
	h := &histogram.Histogram{CounterResetHint: hint, Schema: schema, ZeroThreshold: zt, ZeroCount: zc,
		Sum: sum, PositiveSpans: ps, NegativeSpans: ns}
	h.Count = zc
	h.PositiveBuckets = deltas(pos, &h.Count)
	h.NegativeBuckets = deltas(neg, &h.Count)
	return h
}

func deltas(abs []int64, count *uint64) []int64 {
	if abs == nil {
		return nil
	}
	out := make([]int64, len(abs))
	prev := int64(0)
	for i, v := range abs {
		out[i] = v - prev
		prev = v
		*count += uint64(v)
	}
	return out
}

// Cases returns fresh copies of every case; t0 is the first timestamp (ms),
// samples are 15 s apart.
func Cases(t0 int64) []Series {
	var out []Series
	at := func(i int) int64 { return t0 + int64(i)*15000 }
	// Every exponential schema, both signs and a zero bucket, a zero-length
	// span and a gap, growing counts, then a reset.
	for schema := int32(-4); schema <= 8; schema++ {
		var ss []histfile.Sample
		for i := 0; i < 6; i++ {
			k := int64(i + 1)
			if i >= 4 {
				k = int64(i - 3) // counter reset at i == 4
			}
			hint := histogram.UnknownCounterReset
			if i == 4 {
				hint = histogram.CounterReset
			} else if i > 0 {
				hint = histogram.NotCounterReset
			}
			h := intHist(schema, math.Ldexp(1, -128), uint64(2*k), 1.5*float64(k)+0.1, hint,
				[]histogram.Span{{Offset: -2, Length: 2}, {Offset: 0, Length: 0}, {Offset: 3, Length: 3}},
				[]int64{k, 3 * k, 0, 7 * k, k},
				[]histogram.Span{{Offset: 1, Length: 1}},
				[]int64{5 * k})
			ss = append(ss, histfile.Sample{T: at(i), H: h})
		}
		out = append(out, Series{Name: "h_schema_" + itoa(schema), Samples: ss})
	}
	// Float histograms: fractional counts, a gauge, a negative sum.
	{
		var ss []histfile.Sample
		for i := 0; i < 5; i++ {
			f := float64(i) + 0.25
			ss = append(ss, histfile.Sample{T: at(i), FH: &histogram.FloatHistogram{
				CounterResetHint: histogram.GaugeType, Schema: 3, ZeroThreshold: 0.001,
				ZeroCount: 0.5 * f, Count: 0.5*f + 6.5*f, Sum: -3.3 * f,
				PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 5, Length: 1}},
				PositiveBuckets: []float64{f, 2.5 * f, 0.5 * f},
				NegativeSpans:   []histogram.Span{{Offset: -3, Length: 1}},
				NegativeBuckets: []float64{2.5 * f},
			}})
		}
		out = append(out, Series{Name: "fh_gauge", Samples: ss})
	}
	// Custom buckets (NHCB), integer and float.
	{
		cv := []float64{0.1, 0.5, 1, 5}
		var ss, fs []histfile.Sample
		for i := 0; i < 4; i++ {
			k := int64(i + 1)
			h := intHist(histogram.CustomBucketsSchema, 0, 0, 2.75*float64(k), histogram.UnknownCounterReset,
				[]histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}}, []int64{k, 2 * k, 0, 4 * k}, nil, nil)
			h.CustomValues = append([]float64(nil), cv...)
			ss = append(ss, histfile.Sample{T: at(i), H: h})
			fh := h.ToFloat(nil)
			fh.PositiveBuckets[0] += 0.5
			fh.Count += 0.5
			fs = append(fs, histfile.Sample{T: at(i), FH: fh})
		}
		out = append(out, Series{Name: "h_custom", Samples: ss}, Series{Name: "fh_custom", Samples: fs})
	}
	// Empty histogram, then a stale marker, then one more (integer), and a
	// float series ending stale.
	{
		empty := &histogram.Histogram{Schema: 0, ZeroThreshold: 0}
		one := intHist(0, 0, 1, 0.5, histogram.UnknownCounterReset, nil, nil, nil, nil)
		stale := &histogram.Histogram{Sum: StaleSum}
		out = append(out, Series{Name: "h_stale", Samples: []histfile.Sample{
			{T: at(0), H: empty}, {T: at(1), H: one}, {T: at(2), H: stale}, {T: at(3), H: one.Copy()},
		}})
		fone := one.ToFloat(nil)
		out = append(out, Series{Name: "fh_stale", Samples: []histfile.Sample{
			{T: at(0), FH: fone}, {T: at(1), FH: &histogram.FloatHistogram{Sum: StaleSum}},
		}})
	}
	return out
}

func itoa(v int32) string {
	if v < 0 {
		return "m" + itoa(-v)
	}
	const digits = "0123456789"
	if v < 10 {
		return digits[v : v+1]
	}
	return itoa(v/10) + digits[v%10:v%10+1]
}
