package remotewrite

import (
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
)

// decodeV1 decodes a Remote-Write 1.0 prometheus.WriteRequest. A malformed
// message fails the whole request; an invalid series is rejected alone.
func (h *Handler) decodeV1(s *scratch, b []byte) error {
	req := &s.w1
	if n, ok := countTopLevel(b, timeseriesFieldV1); ok {
		if err := h.countSeries(s, n); err != nil {
			return err
		}
	}
	if err := req.Unmarshal(b); err != nil {
		return malformed("WriteRequest", err)
	}
	if err := h.countSeries(s, len(req.Timeseries)); err != nil {
		return err
	}
	for i := range req.Timeseries {
		h.seriesV1(s, i, &req.Timeseries[i])
	}
	for i := range req.Metadata {
		if md := metadataV1(&req.Metadata[i]); md.Name != "" {
			s.batch.AddMetadata(md)
		}
	}
	return nil
}

// seriesV1 converts one TimeSeries into the scratch arenas.
func (h *Handler) seriesV1(s *scratch, idx int, ts *prompb.TimeSeries) {
	s.pairs = s.pairs[:0]
	for _, l := range ts.Labels {
		s.pairs = append(s.pairs, pair{name: l.Name, value: l.Value})
	}
	lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
	for _, smp := range ts.Samples {
		s.samples = append(s.samples, actastore.Sample{T: smp.Timestamp, V: smp.Value})
	}
	for i := range ts.Exemplars {
		e := ts.Exemplars[i].ToExemplar(&s.sb, nil)
		s.exs = append(s.exs, actastore.Exemplar{Labels: e.Labels, Value: e.Value, T: e.Ts})
	}
	for i := range ts.Histograms {
		s.hists = append(s.hists, histogramSampleV1(&ts.Histograms[i]))
	}
	h.endSeries(s, idx, lo, hlo, elo, nil)
}
