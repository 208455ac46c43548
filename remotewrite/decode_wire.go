package remotewrite

import (
	"github.com/VictoriaMetrics/easyproto"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// The wire decoder walks the request with easyproto (VictoriaMetrics's
// zero-copy protobuf reader): label names and values, and 2.0 symbols, are
// strings aliasing the decoded body, samples go straight into the arena.
// Native histograms, exemplars and metadata are rare: each is unmarshalled
// with its generated message, which keeps their conversion the generated
// decoder's. Field numbers are those of prompb's types.proto/remote.proto
// and writev2's types.proto (frozen by the protocols).
//
// Every field the generated messages know is checked for its wire type, as
// the generated Unmarshal does; anything unexpected returns errWire and
// the generated decoder takes the body.

// next reads the next field of b into fc; a field the generated code would
// refuse or read differently (number 0 or beyond int32) is errWire.
//
// FieldNum is a uint32, so int32(FieldNum) <= 0 is "0 or beyond int32"
// in one compare; that and the named results keep next within the
// compiler's inlining budget (cost 77 of 80; it runs for every field of
// every label and sample).
func next(fc *easyproto.FieldContext, b []byte) (rest []byte, err error) {
	if rest, err = fc.NextField(b); err != nil || int32(fc.FieldNum) <= 0 {
		err = errWire
	}
	return
}

// wireV1 decodes a prometheus.WriteRequest: timeseries = 1, metadata = 3.
func (h *Handler) wireV1(s *scratch, b []byte) error {
	var fc easyproto.FieldContext
	idx := 0
	for len(b) > 0 {
		var err error
		if b, err = next(&fc, b); err != nil {
			return err
		}
		switch fc.FieldNum {
		case 1:
			msg, ok := fc.MessageData()
			if !ok {
				return errWire
			}
			if err := h.wireSeriesV1(s, idx, msg); err != nil {
				return err
			}
			idx++
		case 3:
			msg, ok := fc.MessageData()
			if !ok {
				return errWire
			}
			var md prompb.MetricMetadata
			if md.Unmarshal(msg) != nil {
				return errWire
			}
			s.batch.AddMetadata(metadataV1(&md))
		}
	}
	return nil
}

// wireSeriesV1 decodes one prompb.TimeSeries: labels = 1, samples = 2,
// exemplars = 3, histograms = 4.
func (h *Handler) wireSeriesV1(s *scratch, idx int, b []byte) error {
	s.beginSeries()
	lo, hlo, elo := len(s.samples), len(s.hists), len(s.exs)
	var fc easyproto.FieldContext
	for len(b) > 0 {
		var err error
		if b, err = next(&fc, b); err != nil {
			return err
		}
		if fc.FieldNum > 4 {
			continue
		}
		msg, ok := fc.MessageData()
		if !ok {
			return errWire
		}
		switch fc.FieldNum {
		case 1:
			name, value, err := wireLabel(msg)
			if err != nil {
				return err
			}
			h.addPair(s, name, value)
		case 2:
			smp, _, err := wireSample(msg, false)
			if err != nil {
				return err
			}
			s.samples = append(s.samples, smp)
		case 3:
			var e prompb.Exemplar
			if e.Unmarshal(msg) != nil {
				return errWire
			}
			s.exs = append(s.exs, exemplarV1(s, &e))
		case 4:
			var hp prompb.Histogram
			if hp.Unmarshal(msg) != nil {
				return errWire
			}
			s.hists = append(s.hists, histogramSampleV1(&hp))
		}
	}
	h.endSeries(s, idx, lo, hlo, elo, nil)
	return nil
}

// wireLabel decodes a prompb.Label: name = 1, value = 2 (the last one sent
// wins, as in the generated code).
func wireLabel(b []byte) (name, value string, err error) {
	var fc easyproto.FieldContext
	for len(b) > 0 {
		if b, err = next(&fc, b); err != nil {
			return "", "", err
		}
		var ok bool
		switch fc.FieldNum {
		case 1:
			name, ok = fc.String()
		case 2:
			value, ok = fc.String()
		default:
			continue
		}
		if !ok {
			return "", "", errWire
		}
	}
	return name, value, nil
}

// wireSample decodes a prompb.Sample (value = 1, timestamp = 2) or, with
// v2, a writev2.Sample (also start_timestamp = 3, ms; 0 when not sent).
func wireSample(b []byte, v2 bool) (actastore.Sample, int64, error) {
	var fc easyproto.FieldContext
	var smp actastore.Sample
	var st int64
	for len(b) > 0 {
		var err error
		if b, err = next(&fc, b); err != nil {
			return smp, 0, err
		}
		ok := true
		switch fc.FieldNum {
		case 1:
			smp.V, ok = fc.Double()
		case 2:
			smp.T, ok = fc.Int64()
		case 3:
			if v2 {
				st, ok = fc.Int64()
			}
		}
		if !ok {
			return smp, 0, errWire
		}
	}
	return smp, st, nil
}

// wireV2 decodes an io.prometheus.write.v2.Request: symbols = 4,
// timeseries = 5. The symbols are read first: the spec does not order the
// fields, and a series may only be resolved against the whole table.
func (h *Handler) wireV2(s *scratch, b []byte) error {
	var fc easyproto.FieldContext
	for rest := b; len(rest) > 0; {
		var err error
		if rest, err = next(&fc, rest); err != nil {
			return err
		}
		switch fc.FieldNum {
		case 4:
			sym, ok := fc.String()
			if !ok {
				return errWire
			}
			s.syms = append(s.syms, sym)
		case 5:
			if _, ok := fc.MessageData(); !ok {
				return errWire
			}
		}
	}
	idx := 0
	for len(b) > 0 {
		b, _ = next(&fc, b) // checked above
		if fc.FieldNum != 5 {
			continue
		}
		msg, _ := fc.MessageData()
		if err := h.wireSeriesV2(s, idx, msg); err != nil {
			return err
		}
		idx++
	}
	return nil
}

// wireSeriesV2 decodes one writev2.TimeSeries: labels_refs = 1 (packed or
// not), samples = 2, histograms = 3, exemplars = 4, metadata = 5 (merged
// when sent twice, as the generated code does).
func (h *Handler) wireSeriesV2(s *scratch, idx int, b []byte) error {
	s.refs = s.refs[:0]
	clear(s.v2exs)
	s.v2exs = s.v2exs[:0]
	var md writev2.Metadata
	lo, hlo := len(s.samples), len(s.hists)
	s.stlo, s.hstlo = len(s.sts), len(s.hsts)
	var fc easyproto.FieldContext
	for len(b) > 0 {
		var err error
		if b, err = next(&fc, b); err != nil {
			return err
		}
		if fc.FieldNum == 1 {
			var ok bool
			if s.refs, ok = fc.UnpackUint32s(s.refs); !ok {
				return errWire
			}
			continue
		}
		if fc.FieldNum > 5 {
			continue
		}
		msg, ok := fc.MessageData()
		if !ok {
			return errWire
		}
		switch fc.FieldNum {
		case 2:
			smp, st, err := wireSample(msg, true)
			if err != nil {
				return err
			}
			s.samples = append(s.samples, smp)
			s.addStart(smp.T, st)
		case 3:
			var hp writev2.Histogram
			if hp.Unmarshal(msg) != nil {
				return errWire
			}
			s.hists = append(s.hists, histogramSampleV2(&hp))
			s.addHistStart(hp.Timestamp, hp.StartTimestamp)
		case 4:
			s.v2exs = append(s.v2exs, writev2.Exemplar{})
			if s.v2exs[len(s.v2exs)-1].Unmarshal(msg) != nil {
				return errWire
			}
		case 5:
			if md.Unmarshal(msg) != nil {
				return errWire
			}
		}
	}
	h.finishSeriesV2(s, idx, s.syms, s.refs, s.v2exs, &md, lo, hlo)
	return nil
}
