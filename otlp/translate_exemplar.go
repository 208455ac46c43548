package otlp

import (
	"encoding/hex"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// Exemplar label names for the trace context, as Prometheus's OTLP
// translator names them (OTel metrics data model, "Exemplars").
const (
	traceIDLabel = "trace_id"
	spanIDLabel  = "span_id"
)

// maxExemplarRunes is OpenMetrics 1.0's limit on an exemplar's label set
// (names and values, in UTF-8 characters).
const maxExemplarRunes = 128

// convertExemplars turns a data point's exemplars into store exemplars as
// Prometheus v0.316.0's OTLP translator does (getPromExemplars): the
// trace and span IDs as lower-case hex under trace_id and span_id, then
// the filtered attributes as they are (names not escaped) when all the
// labels stay within 128 characters, else the IDs alone; labels sorted,
// empty values left out (as its TSDB does); the time in milliseconds. They
// keep the request's order (sortExemplars orders a series' exemplars).
//
// Two differences, both for exemplars Prometheus stores where no query
// finds them: an exemplar without a time (0) takes the data point's time
// dpMs, as Prometheus's own scrape does for exemplars without one (its
// OTLP path stores them at 0); one whose time is negative as int64
// milliseconds is dropped, with a reason but no rejected data point.
//
// An exemplar without a value is an error: Prometheus fails the request;
// we reject its data point.
func (t *Translator) convertExemplars(metric string, es pmetric.ExemplarSlice, dpMs int64) ([]actastore.Exemplar, error) {
	if es.Len() == 0 {
		return nil, nil
	}
	out := make([]actastore.Exemplar, 0, es.Len())
	for i := range es.Len() {
		ex := es.At(i)
		var v float64
		switch ex.ValueType() {
		case pmetric.ExemplarValueTypeInt:
			v = float64(ex.IntValue())
		case pmetric.ExemplarValueTypeDouble:
			v = ex.DoubleValue()
		default:
			return nil, fmt.Errorf("exemplar %d has no value (type %s)", i, ex.ValueType())
		}
		ms := timestamp.FromTime(ex.Timestamp().AsTime())
		switch {
		case ms == 0:
			ms = dpMs
		case ms < 0:
			t.reject(0, "metric %q: exemplar dropped: time_unix_nano %d is after year 2262", metric, uint64(ex.Timestamp()))
			continue
		}
		out = append(out, actastore.Exemplar{Labels: t.exemplarLabels(ex), Value: v, T: ms})
	}
	return out, nil
}

func (t *Translator) exemplarLabels(ex pmetric.Exemplar) labels.Labels {
	t.exScratch.Reset()
	runes := 0
	add := func(name, value string) {
		runes += utf8.RuneCountInString(name) + utf8.RuneCountInString(value)
		t.exScratch.Add(name, value)
	}
	var traceID, spanID bool
	if id := ex.TraceID(); !id.IsEmpty() {
		traceID = true
		add(traceIDLabel, hex.EncodeToString(id[:]))
	}
	if id := ex.SpanID(); !id.IsEmpty() {
		spanID = true
		add(spanIDLabel, hex.EncodeToString(id[:]))
	}
	// The trace context wins over attributes of the same name.
	overridden := func(k string) bool { return traceID && k == traceIDLabel || spanID && k == spanIDLabel }
	attrs := ex.FilteredAttributes()
	attrRunes := 0
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !overridden(k) {
			attrRunes += utf8.RuneCountInString(k) + utf8.RuneCountInString(v.AsString())
		}
		return true
	})
	if runes+attrRunes <= maxExemplarRunes {
		attrs.Range(func(k string, v pcommon.Value) bool {
			if !overridden(k) {
				t.exScratch.Add(k, v.AsString())
			}
			return true
		})
	}
	t.exScratch.Sort()
	return t.exScratch.Labels().WithoutEmpty()
}

// sortExemplars puts a series' exemplars in the order Prometheus's
// appenders take them.
func sortExemplars(es []actastore.Exemplar) { slices.SortFunc(es, compareExemplars) }

// compareExemplars orders by time, value, then labels (Prometheus's
// model/exemplar.Compare).
func compareExemplars(a, b actastore.Exemplar) int {
	switch {
	case a.T != b.T:
		return cmpInt(a.T, b.T)
	case a.Value < b.Value:
		return -1
	case a.Value > b.Value:
		return 1
	}
	return labels.Compare(a.Labels, b.Labels)
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

// appendExemplars adds exemplars to the series with labels ls, sharing its
// Extras entry with the series' native histograms if it has any.
func (t *Translator) appendExemplars(ls labels.Labels, es []actastore.Exemplar) {
	if len(es) == 0 {
		return
	}
	t.out.Exemplars += len(es)
	i := t.extrasIndex(ls)
	t.out.Extras[i].Exemplars = append(t.out.Extras[i].Exemplars, es...)
}
