package remotewrite

import (
	"fmt"

	"github.com/acta-remote/acta-remote/apistatus"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// decodeV2 decodes a Remote-Write 2.0 io.prometheus.write.v2.Request. A
// malformed message fails the whole request; an invalid series is rejected
// alone.
func (h *Handler) decodeV2(s *scratch, b []byte) error {
	req := &s.w2
	if n, ok := countTopLevel(b, timeseriesFieldV2); ok {
		if err := h.countSeries(s, n); err != nil {
			return err
		}
	}
	if err := req.Unmarshal(b); err != nil {
		return malformed("Request", err)
	}
	if err := h.countSeries(s, len(req.Timeseries)); err != nil {
		return err
	}
	for i := range req.Timeseries {
		h.seriesV2(s, i, req.Symbols, &req.Timeseries[i])
	}
	return nil
}

// seriesV2 converts one TimeSeries into the scratch arenas. Symbol
// references out of range reject the series (Remote-Write 2.0 spec: the
// receiver cannot resolve it). The series' labels are resolved here rather
// than with TimeSeries.ToLabels, which sorts them: the spec requires sorted
// labels and checkLabels rejects a series that is not.
func (h *Handler) seriesV2(s *scratch, idx int, symbols []string, ts *writev2.TimeSeries) {
	s.pairs = s.pairs[:0]
	lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
	var refErr error
	for i, ref := range ts.LabelsRefs {
		if int64(ref) >= int64(len(symbols)) {
			refErr = fmt.Errorf("%w: series %d: labels_refs[%d] = %d out of range, request has %d symbols",
				apistatus.ErrBadRequest, idx, i, ref, len(symbols))
			break
		}
		if i%2 == 0 {
			s.pairs = append(s.pairs, pair{name: symbols[ref]})
		} else {
			s.pairs[len(s.pairs)-1].value = symbols[ref]
		}
	}
	for _, smp := range ts.Samples {
		s.samples = append(s.samples, actastore.Sample{T: smp.Timestamp, V: smp.Value})
	}
	for i := range ts.Histograms {
		s.hists = append(s.hists, histogramSampleV2(&ts.Histograms[i]))
	}
	for i := range ts.Exemplars {
		e, err := ts.Exemplars[i].ToExemplar(&s.sb, symbols)
		if err != nil {
			if refErr == nil {
				refErr = fmt.Errorf("%w: series %d: exemplar %d: %v", apistatus.ErrBadRequest, idx, i, err)
			}
			continue
		}
		s.exs = append(s.exs, actastore.Exemplar{Labels: e.Labels, Value: e.Value, T: e.Ts})
	}
	md, err := metadataV2(ts, symbols)
	if err != nil && refErr == nil {
		refErr = fmt.Errorf("%w: series %d: metadata reference out of range: %v", apistatus.ErrBadRequest, idx, err)
	}
	if refErr == nil && len(ts.LabelsRefs)%2 != 0 {
		refErr = fmt.Errorf("%w: series %d: labels_refs has odd length %d", apistatus.ErrBadRequest, idx, len(ts.LabelsRefs))
	}
	if refErr != nil {
		n, nh, ne := len(s.samples)-lo, len(s.hists)-hlo, len(s.exs)-elo
		s.samples, s.hists, s.exs = s.samples[:lo], s.hists[:hlo], s.exs[:elo]
		s.stats.samples += n
		s.stats.histograms += nh
		s.stats.exemplars += ne
		s.stats.rejectedHistograms += nh
		s.reject(n, refErr)
		return
	}
	h.endSeries(s, idx, lo, hlo, elo, md)
}
