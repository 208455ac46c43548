package remotewrite

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/acta-remote/acta-remote/actastore"
)

// decodeV2 decodes a Remote-Write 2.0 io.prometheus.write.v2.Request:
// field 4 repeated string symbols, field 5 repeated TimeSeries. Symbols are
// gathered in a first pass because protobuf does not order fields, so a
// sender may put series before the table they refer to.
func (h *Handler) decodeV2(s *scratch, b []byte) error {
	for rest := b; len(rest) > 0; {
		f, r, err := next(rest)
		if err != nil {
			return malformed("Request", err)
		}
		rest = r
		if f.num == 4 {
			if err := f.want(protowire.BytesType); err != nil {
				return malformed("Request", err)
			}
			s.symbols = append(s.symbols, str(f.b))
		}
	}
	for len(b) > 0 {
		f, rest, _ := next(b) // the first pass proved the framing
		b = rest
		if f.num != 5 {
			continue
		}
		if err := f.want(protowire.BytesType); err != nil {
			return malformed("Request", err)
		}
		idx, err := h.countSeries(s)
		if err != nil {
			return err
		}
		if err := h.seriesV2(s, idx, f.b); err != nil {
			return malformed(fmt.Sprintf("timeseries %d", idx), err)
		}
	}
	return nil
}

// seriesV2 decodes a TimeSeries: 1 labels_refs (packed or not), 2 Sample,
// 3 Histogram, 4 Exemplar, 5 Metadata. Symbol references out of range
// reject the series (Remote-Write 2.0 spec: the receiver cannot resolve it).
func (h *Handler) seriesV2(s *scratch, idx int, b []byte) error {
	s.pairs = s.pairs[:0]
	lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
	var nrefs int
	var md *actastore.Metadata
	var refErr error
	addRef := func(ref uint64) {
		if refErr != nil {
			return
		}
		if ref >= uint64(len(s.symbols)) {
			refErr = fmt.Errorf("%w: series %d: labels_refs[%d] = %d out of range, request has %d symbols",
				ErrBadRequest, idx, nrefs, ref, len(s.symbols))
			return
		}
		if nrefs%2 == 0 {
			s.pairs = append(s.pairs, pair{name: s.symbols[ref]})
		} else {
			s.pairs[len(s.pairs)-1].value = s.symbols[ref]
		}
		nrefs++
	}
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return err
		}
		b = rest
		switch f.num {
		case 1:
			switch f.typ {
			case protowire.VarintType:
				addRef(f.v)
			case protowire.BytesType:
				for p := f.b; len(p) > 0; {
					v, n := protowire.ConsumeVarint(p)
					if n < 0 {
						return fmt.Errorf("labels_refs: %v", protowire.ParseError(n))
					}
					addRef(v)
					p = p[n:]
				}
			default:
				return fmt.Errorf("labels_refs: wire type %d", f.typ)
			}
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
			hs, err := parseHistogramV2(f.b)
			if err != nil {
				return fmt.Errorf("histogram %d: %w", len(s.hists)-hlo, err)
			}
			s.hists = append(s.hists, hs)
		case 4:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			e, err := s.parseExemplarV2(f.b)
			if err != nil {
				if refErr == nil {
					refErr = fmt.Errorf("%w: series %d: %v", ErrBadRequest, idx, err)
				}
				continue
			}
			s.exs = append(s.exs, e)
		case 5:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			s.stats.metadata++
			m, ok, err := s.parseMetadataV2(f.b)
			if err != nil {
				if refErr == nil {
					refErr = fmt.Errorf("%w: series %d: metadata: %v", ErrBadRequest, idx, err)
				}
				continue
			}
			if ok {
				md = &m
			}
		}
	}
	if refErr == nil && nrefs%2 != 0 {
		refErr = fmt.Errorf("%w: series %d: labels_refs has odd length %d", ErrBadRequest, idx, nrefs)
	}
	if refErr != nil {
		n, nh, ne := len(s.samples)-lo, len(s.hists)-hlo, len(s.exs)-elo
		s.samples, s.hists, s.exs = s.samples[:lo], s.hists[:hlo], s.exs[:elo]
		s.stats.samples += n
		s.stats.histograms += nh
		s.stats.exemplars += ne
		s.stats.rejectedHistograms += nh
		s.reject(n, refErr)
		return nil
	}
	h.endSeries(s, idx, lo, hlo, elo, md)
	return nil
}
