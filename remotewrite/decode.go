package remotewrite

import (
	"fmt"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/prometheus/common/model"

	"github.com/acta-remote/acta-remote/actastore"
)

// The decoders unmarshal the request with the generated prompb messages
// (prompb.WriteRequest for 1.0, writev2.Request for 2.0), pooled in the
// scratch, then validate each series and append it into the scratch batch.

func malformed(what string, err error) error {
	return fmt.Errorf("%w: malformed protobuf: %s: %v", apistatus.ErrBadRequest, what, err)
}

// endSeries turns the series just converted (s.pairs, the samples from lo,
// histograms from hlo, exemplars from elo, its 2.0 metadata) into batch
// entries, or records why it is rejected.
func (h *Handler) endSeries(s *scratch, idx, lo, hlo, elo int, md *actastore.Metadata) {
	n, nh, ne := len(s.samples)-lo, len(s.hists)-hlo, len(s.exs)-elo
	s.stats.samples += n
	s.stats.histograms += nh
	s.stats.exemplars += ne
	if err := h.checkLabels(s, idx); err != nil {
		s.samples, s.hists, s.exs = s.samples[:lo], s.hists[:hlo], s.exs[:elo]
		s.stats.rejectedHistograms += nh
		s.reject(n, err)
		return
	}
	if n == 0 && nh == 0 && ne == 0 && md == nil {
		s.reject(0, fmt.Errorf("%w: series %d (%s) has no samples", apistatus.ErrBadRequest, idx, describe(s.pairs)))
		return
	}
	lset := labelsOf(s)
	if n > 0 || nh > 0 || ne > 0 {
		s.batch.Series = append(s.batch.Series, actastore.SeriesData{Labels: lset})
		s.spans = append(s.spans, span{lo, len(s.samples), hlo, len(s.hists), elo, len(s.exs)})
	}
	if md != nil {
		s.batch.AddMetadata(actastore.NamedMetadata{Name: familyOf(lset.Get(model.MetricNameLabel), md.Type), Metadata: *md})
	}
}

// countSeries checks the request's series count against the limit.
func (h *Handler) countSeries(s *scratch, n int) error {
	if n > h.lim.MaxSeriesPerRequest {
		return fmt.Errorf("%w: more than %d series in one request, limit remote_write.max_series_per_request", apistatus.ErrTooLarge, h.lim.MaxSeriesPerRequest)
	}
	s.stats.series = n
	return nil
}
