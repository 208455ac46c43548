package remotewrite

import (
	"fmt"
	"math"

	"github.com/prometheus/common/model"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/acta-remote/acta-remote/actastore"
)

// The decoders below walk the protobuf wire format directly and append into
// the scratch batch, instead of unmarshalling a request-sized object tree
// first and copying it again. Field numbers are those of prompb/types.proto,
// prompb/remote.proto and prompb/io/prometheus/write/v2/types.proto; they are
// wire constants and never change.

func malformed(what string, err error) error {
	return fmt.Errorf("%w: malformed protobuf: %s: %v", ErrBadRequest, what, err)
}

// field is one decoded protobuf field; exactly one of v/b is meaningful.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint or fixed64 payload
	b   []byte // bytes payload
}

// next consumes one field from b.
func next(b []byte) (field, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, protowire.ParseError(n)
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v32 uint32
		v32, n = protowire.ConsumeFixed32(b)
		f.v = uint64(v32)
	case protowire.BytesType:
		f.b, n = protowire.ConsumeBytes(b)
	default: // groups are not used by any Prometheus message
		return field{}, nil, fmt.Errorf("field %d: unsupported wire type %d", num, typ)
	}
	if n < 0 {
		return field{}, nil, fmt.Errorf("field %d: %v", num, protowire.ParseError(n))
	}
	return f, b[n:], nil
}

// want checks a known field's wire type.
func (f field) want(t protowire.Type) error {
	if f.typ != t {
		return fmt.Errorf("field %d: wire type %d, want %d", f.num, f.typ, t)
	}
	return nil
}

// parseSample decodes a Sample message (1.0 and 2.0 share fields 1 and 2:
// double value, int64 timestamp in ms). The value keeps its exact bits.
func parseSample(b []byte) (actastore.Sample, error) {
	var s actastore.Sample
	for len(b) > 0 {
		f, rest, err := next(b)
		if err != nil {
			return s, err
		}
		b = rest
		switch f.num {
		case 1:
			if err := f.want(protowire.Fixed64Type); err != nil {
				return s, err
			}
			s.V = math.Float64frombits(f.v)
		case 2:
			if err := f.want(protowire.VarintType); err != nil {
				return s, err
			}
			s.T = int64(f.v)
		}
	}
	return s, nil
}

// endSeries turns the series just decoded (s.pairs, the samples from lo,
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
		s.reject(0, fmt.Errorf("%w: series %d (%s) has no samples", ErrBadRequest, idx, describe(s.pairs)))
		return
	}
	lset := labelsOf(s)
	if n > 0 {
		s.batch = append(s.batch, actastore.SeriesSamples{Labels: lset})
		s.spans = append(s.spans, span{lo, len(s.samples)})
	}
	if nh > 0 || ne > 0 {
		s.extras = append(s.extras, actastore.SeriesExtras{Labels: lset})
		s.xspans = append(s.xspans, xspan{hlo, len(s.hists), elo, len(s.exs)})
	}
	if md != nil {
		s.meta = append(s.meta, actastore.NamedMetadata{Name: lset.Get(model.MetricNameLabel), Metadata: *md})
	}
}

func (h *Handler) countSeries(s *scratch) (int, error) {
	if s.stats.series >= h.lim.MaxSeriesPerRequest {
		return 0, fmt.Errorf("%w: more than %d series in one request, limit remote_write.max_series_per_request", ErrTooLarge, h.lim.MaxSeriesPerRequest)
	}
	s.stats.series++
	return s.stats.series - 1, nil
}
