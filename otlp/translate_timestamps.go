package otlp

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// refuseBadTimestamps removes from md, and rejects, every data point whose
// time would be stored at or before the Unix epoch: time_unix_nano 0 (a
// sender that never set it), below one millisecond, or at 2^63 ns and
// above (negative once Prometheus converts it to int64 milliseconds).
//
// Prometheus v0.316.0's OTLP receiver has no check of its own: it hands
// such a sample to its TSDB, which refuses it as out of bounds (older than
// the head's appendable window) and fails the whole request with 400. We
// refuse just these points, in partial_success, before anything else sees
// them: the delta conversion would otherwise start a stream's sum at 1970,
// and target_info would span back to it.
func (t *Translator) refuseBadTimestamps(md pmetric.Metrics) {
	walkMetrics(md, func(m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			refuseIn(t, m.Name(), m.Gauge().DataPoints())
		case pmetric.MetricTypeSum:
			refuseIn(t, m.Name(), m.Sum().DataPoints())
		case pmetric.MetricTypeHistogram:
			refuseIn(t, m.Name(), m.Histogram().DataPoints())
		case pmetric.MetricTypeSummary:
			refuseIn(t, m.Name(), m.Summary().DataPoints())
		case pmetric.MetricTypeExponentialHistogram:
			refuseIn(t, m.Name(), m.ExponentialHistogram().DataPoints())
		}
	})
}

type timestamped interface{ Timestamp() pcommon.Timestamp }

// pointSlice is what the pdata data point slices have in common.
type pointSlice[P timestamped] interface {
	Len() int
	At(int) P
	RemoveIf(func(P) bool)
}

func refuseIn[P timestamped, S pointSlice[P]](t *Translator, metric string, dps S) {
	bad := 0
	for i := range dps.Len() {
		if badTimestamp(dps.At(i).Timestamp()) != "" {
			bad++
		}
	}
	if bad == 0 {
		return
	}
	dps.RemoveIf(func(dp P) bool {
		why := badTimestamp(dp.Timestamp())
		if why != "" {
			t.reject(1, "metric %q: data point refused: %s", metric, why)
		}
		return why != ""
	})
	t.out.DataPoints += bad
}

// badTimestamp says why ts cannot be stored, or "" if it can.
func badTimestamp(ts pcommon.Timestamp) string {
	switch {
	case ts == 0:
		return "time_unix_nano is 0 (not set)"
	case ts > math.MaxInt64:
		return fmt.Sprintf("time_unix_nano %d is after year 2262 (negative as a signed 64-bit number)", uint64(ts))
	case msTimestamp(ts) <= 0:
		return fmt.Sprintf("time_unix_nano %d is within the first millisecond of 1970", uint64(ts))
	}
	return ""
}
