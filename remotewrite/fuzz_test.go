package remotewrite

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/acta-remote/acta-remote/apistatus"
	"github.com/acta-remote/acta-remote/internal/testkit"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/acta-remote/acta-remote/histfile"
)

// referenceDecode is what the handler decoded with before the wire
// decoder: the series count on the wire, then the generated Unmarshal.
func referenceDecode(h *Handler, s *scratch, typ msgType, b []byte) error {
	field, generated := timeseriesFieldV1, h.generatedV1
	if typ == msgV2 {
		field, generated = timeseriesFieldV2, h.generatedV2
	}
	if n, ok := countTopLevel(b, field); ok {
		if err := h.countSeries(s, n); err != nil {
			return err
		}
	}
	return generated(s, b)
}

// sameDecode reports how two decodes of one body differ: the error, every
// batch entry (label pair bytes, sample bits, start timestamps, histograms
// through their bit-exact record encoding, exemplars), metadata, counts and
// rejections.
func sameDecode(a, b *scratch, errA, errB error) error {
	if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
		return fmt.Errorf("error %v, want %v", errA, errB)
	}
	if errA != nil {
		return nil
	}
	a.finish()
	b.finish()
	if len(a.batch.Series) != len(b.batch.Series) {
		return fmt.Errorf("%d series, want %d", len(a.batch.Series), len(b.batch.Series))
	}
	for i := range a.batch.Series {
		x, y := &a.batch.Series[i], &b.batch.Series[i]
		if !bytes.Equal(x.LabelPairs, y.LabelPairs) {
			return fmt.Errorf("series %d label pairs % x, want % x", i, x.LabelPairs, y.LabelPairs)
		}
		if len(x.Samples) != len(y.Samples) || len(x.Histograms) != len(y.Histograms) || len(x.Exemplars) != len(y.Exemplars) {
			return fmt.Errorf("series %d: %d/%d/%d samples/histograms/exemplars, want %d/%d/%d", i,
				len(x.Samples), len(x.Histograms), len(x.Exemplars), len(y.Samples), len(y.Histograms), len(y.Exemplars))
		}
		for j := range x.Samples {
			if x.Samples[j].T != y.Samples[j].T || math.Float64bits(x.Samples[j].V) != math.Float64bits(y.Samples[j].V) {
				return fmt.Errorf("series %d sample %d = %v, want %v", i, j, x.Samples[j], y.Samples[j])
			}
		}
		for j := range x.Histograms {
			if !bytes.Equal(histfile.AppendRecord(nil, x.Histograms[j]), histfile.AppendRecord(nil, y.Histograms[j])) {
				return fmt.Errorf("series %d histogram %d differs", i, j)
			}
		}
		if !slices.Equal(x.SampleStarts, y.SampleStarts) || !slices.Equal(x.HistogramStarts, y.HistogramStarts) {
			return fmt.Errorf("series %d start timestamps %v %v, want %v %v", i, x.SampleStarts, x.HistogramStarts, y.SampleStarts, y.HistogramStarts)
		}
		for j := range x.Exemplars {
			ex, ey := x.Exemplars[j], y.Exemplars[j]
			if !labels.Equal(ex.Labels, ey.Labels) || ex.T != ey.T || math.Float64bits(ex.Value) != math.Float64bits(ey.Value) {
				return fmt.Errorf("series %d exemplar %d = %v, want %v", i, j, ex, ey)
			}
		}
	}
	if fmt.Sprint(a.batch.Metadata) != fmt.Sprint(b.batch.Metadata) {
		return fmt.Errorf("metadata %v, want %v", a.batch.Metadata, b.batch.Metadata)
	}
	if a.stats != b.stats || a.nerrs != b.nerrs || fmt.Sprint(a.errs) != fmt.Sprint(b.errs) ||
		fmt.Sprint(a.reason) != fmt.Sprint(b.reason) || fmt.Sprint(a.events) != fmt.Sprint(b.events) {
		return fmt.Errorf("stats %+v %d %v %v %v, want %+v %d %v %v %v", a.stats, a.nerrs, a.errs, a.reason, a.events,
			b.stats, b.nerrs, b.errs, b.reason, b.events)
	}
	return nil
}

// realBodies are request bodies a real Prometheus sent (testdata/bodies,
// see its README), decoded from snappy.
func realBodies(t testing.TB) map[string][]byte {
	paths, _ := filepath.Glob("testdata/bodies/*.snappy")
	out := map[string][]byte{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := snappy.Decode(nil, raw)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// FuzzDecode holds the handler's decoder to the generated one: on every
// body it gives what the series count on the wire plus the generated
// prompb/writev2 Unmarshal and the same conversion give (the same verdict,
// error text, label pairs, sample bits, histograms, exemplars, metadata
// and rejections), and where the wire decoder takes a body itself
// (without falling back) it gives exactly that too. Whatever is accepted
// is a batch the store can take: each series with __name__, no empty name
// or value, within the label limit, and every sample stored or rejected.
func FuzzDecode(f *testing.F) {
	add := func(b []byte, _ error) { f.Add(b, false); f.Add(b, true) }
	add((&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		series("__name__", "m", "job", "a"),
		{Labels: testkit.Labels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}}},
		series("b", "x", "a", "y"),
	}}).Marshal())
	req := v2Req([]string{"__name__", "m", "job", "a"}, []string{"job", "b"})
	req.Timeseries[0].Metadata = writev2.Metadata{HelpRef: 1, UnitRef: 2}
	req.Timeseries[1].Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{1, 2}, Value: 1}}
	add(req.Marshal())
	// Start timestamps: set, zero, negative, after the sample.
	req.Timeseries[0].Samples = []writev2.Sample{{Value: 1, Timestamp: 2000, StartTimestamp: 1000}, {Value: 2, Timestamp: 3000},
		{Value: 3, Timestamp: 4000, StartTimestamp: -1}, {Value: 4, Timestamp: 5000, StartTimestamp: 9000}}
	req.Timeseries[1].Histograms = []writev2.Histogram{{Count: &writev2.Histogram_CountInt{CountInt: 1}, Timestamp: 2000, StartTimestamp: 1500}}
	add(req.Marshal())
	add([]byte{0x0a, 0x00}, nil)
	add([]byte{0x2a, 0x02, 0x0a, 0x01}, nil)
	for name, b := range realBodies(f) {
		f.Add(b, bytes.Contains([]byte(name), []byte("rw2")))
	}

	h := New(&memAppender{}, testLimits, slog.New(slog.DiscardHandler), nil)
	f.Fuzz(func(t *testing.T, data []byte, v2 bool) {
		typ, wire := msgV1, h.wireV1
		if v2 {
			typ, wire = msgV2, h.wireV2
		}
		s, ref := getScratch(), getScratch()
		defer putScratch(s)
		defer putScratch(ref)
		err := h.decode(s, typ, data)
		errRef := referenceDecode(h, ref, typ, data)
		if d := sameDecode(s, ref, err, errRef); d != nil {
			t.Fatalf("decode differs from the generated decoder: %v", d)
		}
		if errRef == nil {
			ws := getScratch()
			defer putScratch(ws)
			ws.stats.series = ref.stats.series
			if werr := wire(ws, data); werr == nil {
				if d := sameDecode(ws, ref, nil, nil); d != nil {
					t.Fatalf("wire decoder accepted the body and differs: %v", d)
				}
			}
		}
		if err != nil {
			if apistatus.HTTP(apistatus.RemoteWrite, err)/100 != 4 {
				t.Fatalf("decode error %v maps to %d, want 4xx", err, apistatus.HTTP(apistatus.RemoteWrite, err))
			}
			return
		}
		stored := 0
		for _, ss := range s.batch.Series {
			ls := pairsLabels(ss.LabelPairs)
			if len(ss.Samples) == 0 && len(ss.Histograms) == 0 && len(ss.Exemplars) == 0 {
				t.Fatalf("empty series %s in batch", ls)
			}
			if !ls.Has(labels.MetricName) || ls.Len() > testLimits.MaxLabelsPerSeries {
				t.Fatalf("invalid series %s in batch", ls)
			}
			ls.Range(func(l labels.Label) {
				if l.Name == "" || l.Value == "" {
					t.Fatalf("empty label name or value in %s", ls)
				}
			})
			stored += len(ss.Samples)
		}
		if stored+s.stats.rejectedSamples != s.stats.samples {
			t.Fatalf("%d stored + %d rejected != %d decoded samples", stored, s.stats.rejectedSamples, s.stats.samples)
		}
	})
}

// Encodings a sender may legally produce, and some it may not: the wire
// decoder takes the ones it is built for itself and leaves the others to
// the generated decoder, and either way the result is the generated
// decoder's.
func TestWireDecoderEdgeCases(t *testing.T) {
	type pb = []byte
	tag := func(num protowire.Number, typ protowire.Type) pb { return protowire.AppendTag(nil, num, typ) }
	msg := func(num protowire.Number, parts ...pb) pb {
		return protowire.AppendBytes(tag(num, protowire.BytesType), bytes.Join(parts, nil))
	}
	str := func(num protowire.Number, s string) pb {
		return protowire.AppendString(tag(num, protowire.BytesType), s)
	}
	dbl := func(num protowire.Number, v float64) pb {
		return protowire.AppendFixed64(tag(num, protowire.Fixed64Type), math.Float64bits(v))
	}
	vint := func(num protowire.Number, v uint64) pb {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	raw := func(b ...byte) pb { return b }
	// A varint field 1 of a number beyond protowire.Number's int32.
	bigVint := func(num uint64) pb { return protowire.AppendVarint(protowire.AppendVarint(nil, num<<3), 1) }
	label := func(n, v string) pb { return msg(1, str(1, n), str(2, v)) }
	sample := func(v float64, ts int64) pb { return msg(2, dbl(1, v), vint(2, uint64(ts))) }
	group := append(tag(9, protowire.StartGroupType), tag(9, protowire.EndGroupType)...)
	nameM := label("__name__", "m")
	cases := []struct {
		name string
		v2   bool
		body pb
		wire bool // the wire decoder takes it itself
	}{
		{"plain", false, msg(1, nameM, sample(1, 1000)), true},
		{"fields in reverse order", false, msg(1, sample(1, 1000), label("job", "a"), nameM), true},
		{"label value before name, repeated name", false, msg(1, msg(1, str(2, "m"), str(1, "x"), str(1, "__name__")), sample(1, 1)), true},
		{"sample fields repeated: last wins", false, msg(1, nameM, msg(2, dbl(1, 1), vint(2, 5), dbl(1, -0.0), vint(2, 7))), true},
		{"negative timestamp", false, msg(1, nameM, sample(2, -5)), true},
		{"unknown fields of every scalar type", false, append(msg(1, nameM, sample(1, 1), vint(9, 3), dbl(10, 1),
			protowire.AppendFixed32(tag(11, protowire.Fixed32Type), 7), str(12, "x")), vint(7, 1)...), true},
		{"non-minimal varint length", false, func() pb {
			body := append(nameM, sample(3, 3)...)
			return append(append(tag(1, protowire.BytesType), 0x80|byte(len(body)), 0x00), body...)
		}(), true},
		{"empty series", false, msg(1), true},
		{"empty label value dropped", false, msg(1, nameM, label("job", ""), sample(1, 1)), true},
		{"wrong wire type for samples", false, msg(1, nameM, vint(2, 1)), false},
		{"wrong wire type for a sample value", false, msg(1, nameM, msg(2, vint(1, 1))), false},
		{"field number 0", false, append(msg(1, nameM, sample(1, 1)), 0x02, 0x00), false},
		{"field number 2^31-1, unknown", false, msg(1, nameM, sample(1, 1), vint(math.MaxInt32, 1)), true},
		{"field number 2^31", false, msg(1, nameM, sample(1, 1), bigVint(math.MaxInt32+1)), false},
		{"field number 2^32-1 in a label", false, msg(1, msg(1, str(1, "__name__"), str(2, "m"), bigVint(math.MaxUint32)), sample(1, 1)), false},
		{"group in an unknown field", false, msg(1, nameM, sample(1, 1), group), false},
		{"truncated", false, msg(1, nameM, sample(1, 1))[:10], false},
		{"10-byte varint with high bits", false, msg(1, nameM, msg(2, append(tag(2, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))), false},
		{"metadata", false, append(msg(1, nameM, sample(1, 1)), msg(3, vint(1, 1), str(2, "m"), str(4, "help"), str(5, "unit"))...), true},

		{"2.0 plain", true, append(str(4, ""), append(str(4, "__name__"), append(str(4, "m"), msg(5, msg(1, raw(1, 2)), sample(1, 1))...)...)...), true},
		{"2.0 symbols after series", true, append(msg(5, msg(1, raw(1, 2)), sample(1, 1)), append(str(4, ""), append(str(4, "__name__"), str(4, "m")...)...)...), true},
		{"2.0 refs unpacked", true, append(str(4, ""), append(str(4, "__name__"), append(str(4, "m"), msg(5, vint(1, 1), vint(1, 2), sample(1, 1))...)...)...), true},
		{"2.0 refs split in two packed runs", true, append(str(4, ""), append(str(4, "__name__"), append(str(4, "m"), msg(5, msg(1, raw(1)), msg(1, raw(2)), sample(1, 1))...)...)...), true},
		{"2.0 metadata sent twice merges", true, append(str(4, ""), append(str(4, "__name__"), append(str(4, "m"), append(str(4, "h"),
			msg(5, msg(1, raw(1, 2)), sample(1, 1), msg(5, vint(1, 2)), msg(5, vint(3, 3)))...)...)...)...), true},
		{"2.0 sample start timestamp", true, append(str(4, ""), append(str(4, "__name__"), append(str(4, "m"), msg(5, msg(1, raw(1, 2)), msg(2, dbl(1, 1), vint(2, 9), vint(3, 4)))...)...)...), true},
		{"2.0 ref beyond uint32", true, append(str(4, ""), msg(5, vint(1, 1<<32), sample(1, 1))...), false},
		{"2.0 symbol as varint", true, vint(4, 1), false},
	}
	h := New(&memAppender{}, testLimits, slog.New(slog.DiscardHandler), nil)
	for _, c := range cases {
		typ, wire := msgV1, h.wireV1
		if c.v2 {
			typ, wire = msgV2, h.wireV2
		}
		s, ref, ws := getScratch(), getScratch(), getScratch()
		err := h.decode(s, typ, c.body)
		errRef := referenceDecode(h, ref, typ, c.body)
		if d := sameDecode(s, ref, err, errRef); d != nil {
			t.Errorf("%s: differs from the generated decoder: %v", c.name, d)
		}
		ws.stats.series = ref.stats.series
		if werr := wire(ws, c.body); (werr == nil) != c.wire {
			t.Errorf("%s: wire decoder error %v, want it to take the body: %v (generated decoder: %v)", c.name, werr, c.wire, errRef)
		} else if werr == nil {
			if d := sameDecode(ws, ref, nil, nil); d != nil {
				t.Errorf("%s: wire decoder differs from the generated one: %v", c.name, d)
			}
		}
		putScratch(s)
		putScratch(ref)
		putScratch(ws)
	}
}

// Real Prometheus bodies take the wire decoder's own path (no fallback)
// and decode exactly as the generated decoder does.
func TestRealBodiesTakeTheWirePath(t *testing.T) {
	bodies := realBodies(t)
	if len(bodies) < 2 {
		t.Fatalf("found %d bodies in testdata/bodies", len(bodies))
	}
	lim := testLimits
	lim.MaxSeriesPerRequest, lim.MaxLabelsPerSeries, lim.MaxLabelNameLength, lim.MaxLabelValueLength = 10000, 64, 1024, 4096
	h := New(&memAppender{}, lim, slog.New(slog.DiscardHandler), nil)
	for name, b := range bodies {
		typ, wire := msgV1, h.wireV1
		if bytes.Contains([]byte(name), []byte("rw2")) {
			typ, wire = msgV2, h.wireV2
		}
		ws, ref := getScratch(), getScratch()
		errRef := referenceDecode(h, ref, typ, b)
		ws.stats.series = ref.stats.series
		if err := wire(ws, b); err != nil {
			t.Fatalf("%s: wire decoder: %v", name, err)
		}
		if d := sameDecode(ws, ref, nil, errRef); d != nil {
			t.Fatalf("%s: %v", name, d)
		}
		if ws.nerrs != 0 || len(ws.batch.Series) < 600 || ws.stats.histograms == 0 {
			t.Fatalf("%s: %d series, %d histograms, rejections %v", name, len(ws.batch.Series), ws.stats.histograms, ws.errs)
		}
		if typ == msgV2 && len(ws.batch.Metadata) == 0 {
			t.Fatalf("%s: no metadata", name)
		}
		putScratch(ws)
		putScratch(ref)
	}
}
