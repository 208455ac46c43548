package remotewrite

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// Native histograms, exemplars and metadata are rare next to float samples
// and structurally deep, so they are unmarshalled with the generated prompb
// code rather than walked by hand; the result goes straight into the
// scratch's extras arenas.

// metricTypes maps the wire enums (prompb MetricMetadata.MetricType and
// writev2 Metadata.MetricType share the numbering) to Prometheus's names.
var metricTypes = [...]model.MetricType{
	model.MetricTypeUnknown, model.MetricTypeCounter, model.MetricTypeGauge, model.MetricTypeHistogram,
	model.MetricTypeGaugeHistogram, model.MetricTypeSummary, model.MetricTypeInfo, model.MetricTypeStateset,
}

func metricType(t int32) model.MetricType {
	if t < 0 || int(t) >= len(metricTypes) {
		return model.MetricTypeUnknown
	}
	return metricTypes[t]
}

// histogramSample converts a decoded histogram, keeping integer histograms
// integer (Remote-Write: count_int vs count_float decides).
func histogramSampleV1(h *prompb.Histogram) actastore.HistogramSample {
	if h.IsFloatHistogram() {
		return actastore.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()}
	}
	return actastore.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()}
}

func histogramSampleV2(h *writev2.Histogram) actastore.HistogramSample {
	if h.IsFloatHistogram() {
		return actastore.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()}
	}
	return actastore.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()}
}

// parseHistogramV1 decodes a prompb.Histogram (TimeSeries field 4).
func parseHistogramV1(b []byte) (actastore.HistogramSample, error) {
	var h prompb.Histogram
	if err := h.Unmarshal(b); err != nil {
		return actastore.HistogramSample{}, err
	}
	return histogramSampleV1(&h), nil
}

// parseHistogramV2 decodes a writev2.Histogram (TimeSeries field 3).
func parseHistogramV2(b []byte) (actastore.HistogramSample, error) {
	var h writev2.Histogram
	if err := h.Unmarshal(b); err != nil {
		return actastore.HistogramSample{}, err
	}
	return histogramSampleV2(&h), nil
}

// parseExemplarV1 decodes a prompb.Exemplar (TimeSeries field 3).
func (s *scratch) parseExemplarV1(b []byte) (actastore.Exemplar, error) {
	var e prompb.Exemplar
	if err := e.Unmarshal(b); err != nil {
		return actastore.Exemplar{}, err
	}
	s.sb.Reset()
	for _, l := range e.Labels {
		s.sb.Add(l.Name, l.Value)
	}
	s.sb.Sort()
	return actastore.Exemplar{Labels: s.sb.Labels(), Value: e.Value, T: e.Timestamp}, nil
}

// parseExemplarV2 decodes a writev2.Exemplar (TimeSeries field 4); label
// references out of the symbol table reject the series.
func (s *scratch) parseExemplarV2(b []byte) (actastore.Exemplar, error) {
	var e writev2.Exemplar
	if err := e.Unmarshal(b); err != nil {
		return actastore.Exemplar{}, err
	}
	if len(e.LabelsRefs)%2 != 0 {
		return actastore.Exemplar{}, fmt.Errorf("exemplar labels_refs has odd length %d", len(e.LabelsRefs))
	}
	s.sb.Reset()
	for i := 0; i < len(e.LabelsRefs); i += 2 {
		n, v := e.LabelsRefs[i], e.LabelsRefs[i+1]
		if int(n) >= len(s.symbols) || int(v) >= len(s.symbols) {
			return actastore.Exemplar{}, fmt.Errorf("exemplar labels_refs[%d] out of range, request has %d symbols", i, len(s.symbols))
		}
		s.sb.Add(s.symbols[n], s.symbols[v])
	}
	s.sb.Sort()
	return actastore.Exemplar{Labels: s.sb.Labels(), Value: e.Value, T: e.Timestamp}, nil
}

// parseMetadataV1 decodes a prompb.MetricMetadata (WriteRequest field 3).
func parseMetadataV1(b []byte) (actastore.NamedMetadata, error) {
	var m prompb.MetricMetadata
	if err := m.Unmarshal(b); err != nil {
		return actastore.NamedMetadata{}, err
	}
	return actastore.NamedMetadata{Name: m.MetricFamilyName,
		Metadata: actastore.Metadata{Type: metricType(int32(m.Type)), Unit: m.Unit, Help: m.Help}}, nil
}

// parseMetadataV2 decodes a writev2.Metadata (TimeSeries field 5).
func (s *scratch) parseMetadataV2(b []byte) (actastore.Metadata, bool, error) {
	var m writev2.Metadata
	if err := m.Unmarshal(b); err != nil {
		return actastore.Metadata{}, false, err
	}
	if int(m.HelpRef) >= len(s.symbols) {
		return actastore.Metadata{}, false, fmt.Errorf("field 3 ref %d out of range, request has %d symbols", m.HelpRef, len(s.symbols))
	}
	if int(m.UnitRef) >= len(s.symbols) {
		return actastore.Metadata{}, false, fmt.Errorf("field 4 ref %d out of range, request has %d symbols", m.UnitRef, len(s.symbols))
	}
	// Symbols alias the pooled decode buffer; the store keeps metadata.
	md := actastore.Metadata{Type: metricType(int32(m.Type)), Help: strings.Clone(s.symbols[m.HelpRef]), Unit: strings.Clone(s.symbols[m.UnitRef])}
	// An all-default Metadata is what a sender without metadata sends.
	empty := m.Type == writev2.Metadata_METRIC_TYPE_UNSPECIFIED && md.Help == "" && md.Unit == ""
	return md, !empty, nil
}

// appendExtras hands histograms, exemplars and metadata to the store, after
// the float samples. A store error fails the request (5xx/429: the sender
// resends it whole; the float samples it already stored come back as exact
// duplicates, which the store drops). A store without ExtrasAppender gets
// them counted as not stored, and the 2.0 headers say 0 written.
func (h *Handler) appendExtras(ctx context.Context, s *scratch) error {
	ea, ok := h.app.(actastore.ExtrasAppender)
	if !ok {
		h.m.notStored.WithLabelValues("histogram").Add(float64(len(s.hists)))
		h.m.notStored.WithLabelValues("exemplar").Add(float64(len(s.exs)))
		h.m.notStored.WithLabelValues("metadata").Add(float64(len(s.meta)))
		return nil
	}
	res, err := ea.AppendExtras(ctx, actastore.ExtrasBatch{Series: s.extras, Metadata: s.meta})
	if err != nil {
		h.log.Warn("remote write: store refused histograms/exemplars", "err", err, "series", len(s.extras))
		return withConfigKey(err)
	}
	s.stats.histogramsWritten = res.HistogramsWritten
	s.stats.exemplarsWritten = res.ExemplarsWritten
	s.stats.rejectedHistograms += res.HistogramsRejected
	for _, e := range res.Errors {
		s.reject(0, withConfigKey(e))
	}
	if len(res.Errors) == 0 && res.HistogramsRejected > 0 {
		s.reject(0, fmt.Errorf("%w: store rejected %d histograms", ErrBadRequest, res.HistogramsRejected))
	}
	return nil
}
