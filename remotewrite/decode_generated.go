package remotewrite

import (
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
)

// The generated decoder: the request unmarshalled with the generated prompb
// (1.0) or writev2 (2.0) messages, pooled in the scratch. It decides every
// body the wire decoder leaves to it, so a malformed body gets the
// generated code's error. A malformed message fails the whole request; an
// invalid series is rejected alone.

// generatedV1 decodes a Remote-Write 1.0 prometheus.WriteRequest.
func (h *Handler) generatedV1(s *scratch, b []byte) error {
	req := &s.w1
	if err := req.Unmarshal(b); err != nil {
		return malformed("WriteRequest", err)
	}
	if err := h.countSeries(s, len(req.Timeseries)); err != nil {
		return err
	}
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		s.beginSeries()
		for _, l := range ts.Labels {
			h.addPair(s, l.Name, l.Value)
		}
		lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
		for _, smp := range ts.Samples {
			s.samples = append(s.samples, actastore.Sample{T: smp.Timestamp, V: smp.Value})
		}
		for j := range ts.Exemplars {
			s.exs = append(s.exs, exemplarV1(s, &ts.Exemplars[j]))
		}
		for j := range ts.Histograms {
			s.hists = append(s.hists, histogramSampleV1(&ts.Histograms[j]))
		}
		h.endSeries(s, i, lo, hlo, elo, nil)
	}
	for i := range req.Metadata {
		s.batch.AddMetadata(metadataV1(&req.Metadata[i]))
	}
	return nil
}

// generatedV2 decodes a Remote-Write 2.0 io.prometheus.write.v2.Request.
func (h *Handler) generatedV2(s *scratch, b []byte) error {
	req := &s.w2
	if err := req.Unmarshal(b); err != nil {
		return malformed("Request", err)
	}
	if err := h.countSeries(s, len(req.Timeseries)); err != nil {
		return err
	}
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		lo, hlo := len(s.samples), len(s.hists)
		s.stlo, s.hstlo = len(s.sts), len(s.hsts)
		for _, smp := range ts.Samples {
			s.samples = append(s.samples, actastore.Sample{T: smp.Timestamp, V: smp.Value})
			s.addStart(smp.Timestamp, smp.StartTimestamp)
		}
		for j := range ts.Histograms {
			hp := &ts.Histograms[j]
			s.hists = append(s.hists, histogramSampleV2(hp))
			s.addHistStart(hp.Timestamp, hp.StartTimestamp)
		}
		h.finishSeriesV2(s, i, req.Symbols, ts.LabelsRefs, ts.Exemplars, &ts.Metadata, lo, hlo)
	}
	return nil
}

// exemplarV1 converts a 1.0 exemplar (its labels copied into a label set).
func exemplarV1(s *scratch, e *prompb.Exemplar) actastore.Exemplar {
	x := e.ToExemplar(&s.sb, nil)
	return actastore.Exemplar{Labels: x.Labels, Value: x.Value, T: x.Ts}
}
