package remotewrite

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// decodeV1 decodes a Remote-Write 1.0 prometheus.WriteRequest:
// field 1 repeated TimeSeries, field 3 repeated MetricMetadata.
// A malformed message fails the whole request; an invalid series is
// rejected alone.
func (h *Handler) decodeV1(s *scratch, b []byte) error {
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return malformed("WriteRequest", err)
		}
		b = rest
		switch f.num {
		case 1:
			if err := f.want(protowire.BytesType); err != nil {
				return malformed("WriteRequest", err)
			}
			idx, err := h.countSeries(s)
			if err != nil {
				return err
			}
			if err := h.seriesV1(s, idx, f.b); err != nil {
				return malformed(fmt.Sprintf("timeseries %d", idx), err)
			}
		case 3:
			if err := f.want(protowire.BytesType); err != nil {
				return malformed("WriteRequest", err)
			}
			md, err := parseMetadataV1(f.b)
			if err != nil {
				return malformed(fmt.Sprintf("metadata %d", s.stats.metadata), err)
			}
			s.stats.metadata++
			if md.Name != "" {
				s.meta = append(s.meta, md)
			}
		}
	}
	return nil
}

// seriesV1 decodes a TimeSeries: 1 Label, 2 Sample, 3 Exemplar, 4 Histogram.
func (h *Handler) seriesV1(s *scratch, idx int, b []byte) error {
	s.pairs = s.pairs[:0]
	lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return err
		}
		b = rest
		switch f.num {
		case 1:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			p, err := parseLabel(f.b)
			if err != nil {
				return fmt.Errorf("label %d: %w", len(s.pairs), err)
			}
			s.pairs = append(s.pairs, p)
		case 2:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			smp, err := parseSample(f.b)
			if err != nil {
				return fmt.Errorf("sample %d: %w", len(s.samples)-lo, err)
			}
			s.samples = append(s.samples, smp)
		case 3:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			e, err := s.parseExemplarV1(f.b)
			if err != nil {
				return fmt.Errorf("exemplar %d: %w", len(s.exs)-elo, err)
			}
			s.exs = append(s.exs, e)
		case 4:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			hs, err := parseHistogramV1(f.b)
			if err != nil {
				return fmt.Errorf("histogram %d: %w", len(s.hists)-hlo, err)
			}
			s.hists = append(s.hists, hs)
		}
	}
	h.endSeries(s, idx, lo, hlo, elo, nil)
	return nil
}

// parseLabel decodes a Label: 1 name, 2 value.
func parseLabel(b []byte) (pair, error) {
	var p pair
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return p, err
		}
		b = rest
		switch f.num {
		case 1, 2:
			if err := f.want(protowire.BytesType); err != nil {
				return p, err
			}
			if f.num == 1 {
				p.name = str(f.b)
			} else {
				p.value = str(f.b)
			}
		}
	}
	return p, nil
}
