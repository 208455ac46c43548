package actastore

import (
	"github.com/prometheus/prometheus/model/histogram"
)

// StartTimeSeries is a Series of a Select that also gives the start
// timestamps stored with its samples.
type StartTimeSeries interface {
	// StartTimes returns the start timestamps of the series' float samples
	// and of its histograms in the selected range: sorted by T, one entry
	// per sample that has one (nil when none has).
	StartTimes() (floats, hists []StartTime)
}

// seriesStarts is a selected series' start timestamps of each kind.
type seriesStarts struct {
	floats, hists []StartTime
}

// StartTimes implements StartTimeSeries.
func (l *loadedSeries) StartTimes() (floats, hists []StartTime) {
	return l.starts.floats, l.starts.hists
}

// zeroSampleLookahead is how far after a Select's range its samples are
// read with StartTimeZeroSamples: a sample just after the range may have
// its zero sample in it (a counter reset between the range's end and the
// next sample). A zero sample more than this before its sample, and after
// the range's end, is not presented (Prometheus would): a start timestamp
// that old before its sample is not a reset seen by a scrape.
const zeroSampleLookahead = 5 * 60 * 1000

func zeroSampleReadMaxt(maxt int64) int64 {
	if maxt > 1<<63-1-zeroSampleLookahead {
		return 1<<63 - 1
	}
	return maxt + zeroSampleLookahead
}

// withZeroSamplesIn adds the zero samples (addZeroSamples) to a series'
// samples read in [mint, maxt+zeroSampleLookahead] and cuts them, and
// their start timestamps, back to [mint, maxt].
func withZeroSamplesIn(smps []Sample, hists []HistogramSample, sts seriesStarts, mint, maxt, minT int64) ([]Sample, []HistogramSample, seriesStarts) {
	l := loadedSeries{samples: smps, hists: hists, starts: sts}
	l.addZeroSamples(mint, minT)
	l.samples = inRange(floats, nil, l.samples, mint, maxt)
	l.hists = inRange(histograms, nil, l.hists, mint, maxt)
	l.starts.floats = startsIn(l.starts.floats, mint, maxt)
	l.starts.hists = startsIn(l.starts.hists, mint, maxt)
	return l.samples, l.hists, l.starts
}

// addZeroSamples adds, for each sample with a start timestamp, the zero
// sample Prometheus's head appender adds for it with
// created-timestamp-zero-ingestion (tsdb/head_append_v2.go,
// bestEffortAppendSTZeroSample, v0.316.0): at the start timestamp st, when
// st is after the series' previous sample (a zero sample older than it is
// out of order there, and ignored), and within the selected range (st >=
// mint; st is before its sample, so at most maxt). The rules Prometheus
// applies to st alone (st before its sample, not below the oldest
// timestamp accepted) were applied at ingestion (startVerdict); minT
// applies the floor again, for start timestamps stored before a change of
// it. A float zero sample is 0; a histogram one is empty, with the
// counter-reset hint and the schema, zero threshold and custom values of
// its sample, as Prometheus builds it.
//
// The previous sample of the first one in range may be before mint: st >=
// mint is then after it, so the range read is enough to decide.
func (l *loadedSeries) addZeroSamples(mint, minT int64) {
	if len(l.starts.floats) > 0 {
		l.samples = withZeroSamples(floats, l.samples, l.starts.floats, mint, minT, func(s Sample, st int64) Sample {
			return Sample{T: st}
		})
	}
	if len(l.starts.hists) > 0 {
		l.hists = withZeroSamples(histograms, l.hists, l.starts.hists, mint, minT, zeroHistogram)
	}
}

func zeroHistogram(h HistogramSample, st int64) HistogramSample {
	z := HistogramSample{T: st}
	if h.FH != nil {
		z.FH = &histogram.FloatHistogram{CounterResetHint: histogram.CounterReset, Schema: h.FH.Schema,
			ZeroThreshold: h.FH.ZeroThreshold, CustomValues: h.FH.CustomValues}
	} else if h.H != nil {
		z.H = &histogram.Histogram{CounterResetHint: histogram.CounterReset, Schema: h.H.Schema,
			ZeroThreshold: h.H.ZeroThreshold, CustomValues: h.H.CustomValues}
	}
	return z
}

// withZeroSamples returns sorted ss with the zero samples of its start
// timestamps sts (sorted, entries of samples of ss only) inserted.
func withZeroSamples[S any](k kind[S], ss []S, sts []StartTime, mint, minT int64, zero func(S, int64) S) []S {
	out := make([]S, 0, len(ss)+len(sts))
	j := 0
	for i, smp := range ss {
		t := k.ts(smp)
		for j < len(sts) && sts[j].T < t {
			j++
		}
		if j < len(sts) && sts[j].T == t {
			st := sts[j].ST
			after := i == 0 || st > k.ts(ss[i-1])
			if after && st < t && st >= mint && st >= minT {
				out = append(out, zero(smp, st))
			}
		}
		out = append(out, smp)
	}
	return out
}
