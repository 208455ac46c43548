package remotewrite

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/acta-remote/acta-remote/apistatus"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// Two decoders turn a request body into the scratch batch:
//
//   - the wire decoder (decode_wire.go) walks the protobuf with easyproto
//     and never allocates per series: label names and values are strings
//     aliasing the decoded body, copied once into the label-pairs arena;
//   - the generated decoder (decode_generated.go) unmarshals prompb /
//     writev2 messages, a string per label.
//
// The wire decoder handles the encodings senders produce; whatever it does
// not take as it is (a malformed body, and legal but unusual ones: groups,
// field number 0, varints that binary.Uvarint calls overflowing) it leaves
// to the generated decoder, which decides as the generated code always
// has. So verdicts and results are the generated code's on every input;
// FuzzDecode holds the wire decoder to that where it accepts. Both feed
// the same per-series conversion (addPair, endSeries, finishSeriesV2).

// errWire: the wire decoder leaves the body to the generated decoder.
var errWire = errors.New("remotewrite: body left to the generated decoder")

// decode decodes a body of type typ into s.
func (h *Handler) decode(s *scratch, typ msgType, b []byte) error {
	field, wire, generated := timeseriesFieldV1, h.wireV1, h.generatedV1
	if typ == msgV2 {
		field, wire, generated = timeseriesFieldV2, h.wireV2, h.generatedV2
	}
	n, ok := countTopLevel(b, field)
	if !ok {
		return generated(s, b)
	}
	if err := h.countSeries(s, n); err != nil {
		return err
	}
	err := wire(s, b)
	if !errors.Is(err, errWire) {
		return err
	}
	s.resetDecoded()
	return generated(s, b)
}

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
		s.dropStarts()
		s.stats.rejectedHistograms += nh
		s.reject(n, err)
		return
	}
	if n == 0 && nh == 0 && ne == 0 && md == nil {
		s.reject(0, fmt.Errorf("%w: series %d (%s) has no samples", apistatus.ErrBadRequest, idx, describe(s.pairs)))
		return
	}
	if n > 0 || nh > 0 || ne > 0 {
		plo := len(s.lp)
		s.lp = actastore.AppendLabelCount(s.lp, len(s.pairs))
		for _, p := range s.pairs {
			s.lp = actastore.AppendLabelPair(s.lp, bytesOf(p.name), bytesOf(p.value))
		}
		s.batch.Series = append(s.batch.Series, actastore.SeriesData{})
		s.spans = append(s.spans, span{lo, len(s.samples), hlo, len(s.hists), elo, len(s.exs), plo, len(s.lp),
			s.stlo, len(s.sts), s.hstlo, len(s.hsts)})
	}
	// The store validates a series' labels in Commit and rejects it alone;
	// metadata is keyed by family name only, so it is taken only from a
	// series whose labels the store will take.
	if md != nil && validForMetadata(s.pairs) {
		s.batch.AddMetadata(actastore.NamedMetadata{Name: familyOf(metricName(s.pairs), md.Type), Metadata: *md})
	}
}

// validForMetadata is the store's label rules that checkLabels leaves to
// it (valid UTF-8, no name twice), for the rare series carrying metadata.
func validForMetadata(ps []pair) bool {
	for i, p := range ps {
		if !utf8.ValidString(p.name) || !utf8.ValidString(p.value) {
			return false
		}
		for _, q := range ps[:i] {
			if q.name == p.name {
				return false
			}
		}
	}
	return true
}

// countSeries checks the request's series count against the limit.
func (h *Handler) countSeries(s *scratch, n int) error {
	if n > h.lim.MaxSeriesPerRequest {
		return fmt.Errorf("%w: more than %d series in one request, limit remote_write.max_series_per_request", apistatus.ErrTooLarge, h.lim.MaxSeriesPerRequest)
	}
	s.stats.series = n
	return nil
}

// finishSeriesV2 converts the rest of one 2.0 series whose samples and
// histograms are in the arenas from lo and hlo: its labels (refs into
// symbols), exemplars and metadata. A reference out of range rejects the
// series (Remote-Write 2.0 spec: the receiver cannot resolve it). The
// labels are resolved in the order sent; the store sorts them.
func (h *Handler) finishSeriesV2(s *scratch, idx int, symbols []string, refs []uint32, exs []writev2.Exemplar, md *writev2.Metadata, lo, hlo int) {
	s.beginSeries()
	elo := len(s.exs)
	var refErr error
	var name string
	for i, ref := range refs {
		if int64(ref) >= int64(len(symbols)) {
			refErr = fmt.Errorf("%w: series %d: labels_refs[%d] = %d out of range, request has %d symbols",
				apistatus.ErrBadRequest, idx, i, ref, len(symbols))
			break
		}
		if i%2 == 0 {
			name = symbols[ref]
		} else {
			h.addPair(s, name, symbols[ref])
		}
	}
	// ToExemplar builds each label set with a ScratchBuilder, which copies
	// the strings into one of its own (stringlabels, Prometheus's default
	// build): the store may keep it though the symbols alias the body.
	for i := range exs {
		e, err := exs[i].ToExemplar(&s.sb, symbols)
		if err != nil {
			if refErr == nil {
				refErr = fmt.Errorf("%w: series %d: exemplar %d: %v", apistatus.ErrBadRequest, idx, i, err)
			}
			continue
		}
		s.exs = append(s.exs, actastore.Exemplar{Labels: e.Labels, Value: e.Value, T: e.Ts})
	}
	m, err := metadataV2(md, symbols)
	if err != nil && refErr == nil {
		refErr = fmt.Errorf("%w: series %d: metadata reference out of range: %v", apistatus.ErrBadRequest, idx, err)
	}
	if refErr == nil && len(refs)%2 != 0 {
		refErr = fmt.Errorf("%w: series %d: labels_refs has odd length %d", apistatus.ErrBadRequest, idx, len(refs))
	}
	if refErr != nil {
		n, nh, ne := len(s.samples)-lo, len(s.hists)-hlo, len(s.exs)-elo
		s.samples, s.hists, s.exs = s.samples[:lo], s.hists[:hlo], s.exs[:elo]
		s.dropStarts()
		s.stats.samples += n
		s.stats.histograms += nh
		s.stats.exemplars += ne
		s.stats.rejectedHistograms += nh
		s.reject(n, refErr)
		return
	}
	h.endSeries(s, idx, lo, hlo, elo, m)
}
