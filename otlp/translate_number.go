package otlp

import (
	"math"

	"github.com/prometheus/prometheus/model/value"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// staleNaN is Prometheus's stale marker (bits 0x7ff0000000000002): a data
// point flagged NoRecordedValue ends its series the way a vanished scrape
// target does.
var staleNaN = math.Float64frombits(value.StaleNaN)

// addNumberDataPoints writes gauges and sums, one sample per data point
// under the family name (a monotonic sum's name already carries _total).
// A sum's exemplars go with its series; a gauge's are dropped, as
// Prometheus's translator drops them.
func (t *Translator) addNumberDataPoints(metric, family string, dps pmetric.NumberDataPointSlice, sum bool) {
	for i := range dps.Len() {
		dp := dps.At(i)
		ls, err := t.dataPointLabels(dp.Attributes(), family)
		if err != nil {
			t.reject(1, "metric %q: %v", metric, err)
			continue
		}
		ms := msTimestamp(dp.Timestamp())
		var exs []actastore.Exemplar
		if sum {
			if exs, err = t.convertExemplars(metric, dp.Exemplars(), ms); err != nil {
				t.reject(1, "metric %q: %v", metric, err)
				continue
			}
			sortExemplars(exs)
		}
		var v float64 // an unset value reads as 0, as in Prometheus
		switch dp.ValueType() {
		case pmetric.NumberDataPointValueTypeInt:
			v = float64(dp.IntValue())
		case pmetric.NumberDataPointValueTypeDouble:
			v = dp.DoubleValue()
		}
		if dp.Flags().NoRecordedValue() {
			v = staleNaN
		}
		t.appendSample(ls, ms, msTimestamp(dp.StartTimestamp()), v)
		t.appendExemplars(ls, exs)
	}
}
