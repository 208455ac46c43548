package otlp

import (
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// addMetadata records the family's type, unit and help as Prometheus's
// OTLP receiver does (v0.316.0, otelMetricTypeToPromMetricType and
// UnitNamer): gauge; monotonic sum counter, other sums gauge; histogram and
// exponential histogram histogram; summary summary; a delta sum or
// histogram (delta_temporality native) unknown, as Prometheus marks delta
// for now; the unit as Prometheus words ("seconds"), the description as
// help.
func (t *Translator) addMetadata(m pmetric.Metric, family string) {
	typ := model.MetricTypeUnknown
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		typ = model.MetricTypeGauge
	case pmetric.MetricTypeSum:
		typ = model.MetricTypeGauge
		if m.Sum().IsMonotonic() {
			typ = model.MetricTypeCounter
		}
	case pmetric.MetricTypeHistogram, pmetric.MetricTypeExponentialHistogram:
		typ = model.MetricTypeHistogram
	case pmetric.MetricTypeSummary:
		typ = model.MetricTypeSummary
	}
	if isDelta(m) {
		typ = model.MetricTypeUnknown
	}
	t.setMetadata(family, actastore.Metadata{Type: typ, Unit: (&otlptranslator.UnitNamer{}).Build(m.Unit()), Help: m.Description()})
}

// targetInfoMetadata is what Prometheus's OTLP receiver records for
// target_info.
var targetInfoMetadata = actastore.Metadata{Type: model.MetricTypeGauge, Help: "Target metadata"}

func (t *Translator) setMetadata(family string, md actastore.Metadata) {
	if i, ok := t.mindex[family]; ok {
		t.out.Metadata[i].Metadata = md // the last one wins, as in a store
		return
	}
	t.mindex[family] = len(t.out.Metadata)
	t.out.Metadata = append(t.out.Metadata, actastore.NamedMetadata{Name: family, Metadata: md})
}
