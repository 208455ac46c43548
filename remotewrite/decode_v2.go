package remotewrite

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
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
	lo := len(s.samples)
	var histograms, exemplars, nrefs int
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
			histograms++
		case 4:
			exemplars++
		case 5:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			s.stats.metadata++
			if err := checkMetadataRefs(f.b, len(s.symbols)); err != nil && refErr == nil {
				refErr = fmt.Errorf("%w: series %d: metadata: %v", ErrBadRequest, idx, err)
			}
		}
	}
	if refErr == nil && nrefs%2 != 0 {
		refErr = fmt.Errorf("%w: series %d: labels_refs has odd length %d", ErrBadRequest, idx, nrefs)
	}
	if refErr != nil {
		n := len(s.samples) - lo
		s.samples = s.samples[:lo]
		s.stats.samples += n
		s.stats.histograms += histograms
		s.stats.exemplars += exemplars
		s.reject(n, refErr)
		return nil
	}
	h.endSeries(s, idx, lo, histograms, exemplars)
	return nil
}

// checkMetadataRefs range-checks Metadata's help_ref (3) and unit_ref (4).
// The metadata itself is not stored yet.
func checkMetadataRefs(b []byte, nsym int) error {
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return err
		}
		b = rest
		if (f.num == 3 || f.num == 4) && f.typ == protowire.VarintType && f.v >= uint64(nsym) {
			return fmt.Errorf("field %d ref %d out of range, request has %d symbols", f.num, f.v, nsym)
		}
	}
	return nil
}
