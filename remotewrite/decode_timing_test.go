package remotewrite

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// BenchmarkDecode measures the decoders alone on a Prometheus-shaped request
// (2000 series of 4 labels, one sample each): samples/s and allocations.
// "wire" is what the handler runs (decode: the zero-copy decoder),
// "generated" the prompb/writev2 Unmarshal decoder it falls back to, with
// the same conversion: the difference is the generated code's strings and
// structs per series.
func BenchmarkDecode(b *testing.B) {
	v1 := &prompb.WriteRequest{}
	st := writev2.NewSymbolTable()
	v2 := &writev2.Request{}
	for i := range 2000 {
		ls := testkit.Labels("__name__", fmt.Sprintf("metric_%d", i%50), "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250), "job", "node", "mode", "idle")
		v1.Timeseries = append(v1.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: float64(i), Timestamp: 1}}})
		var refs []uint32
		for _, l := range ls {
			refs = append(refs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		v2.Timeseries = append(v2.Timeseries, writev2.TimeSeries{LabelsRefs: refs, Samples: []writev2.Sample{{Value: float64(i), Timestamp: 1}}})
	}
	v2.Symbols = st.Symbols()
	b1, _ := v1.Marshal()
	b2, _ := v2.Marshal()
	lim := testLimits
	lim.MaxSeriesPerRequest = 10000
	h := New(&memAppender{}, lim, slog.New(slog.DiscardHandler), nil)
	for _, c := range []struct {
		name string
		data []byte
		typ  msgType
	}{{"rw1.0", b1, msgV1}, {"rw2.0", b2, msgV2}} {
		for _, dec := range []struct {
			name string
			f    func(*scratch, []byte) error
		}{
			{"wire", func(s *scratch, b []byte) error { return h.decode(s, c.typ, b) }},
			{"generated", map[msgType]func(*scratch, []byte) error{msgV1: h.generatedV1, msgV2: h.generatedV2}[c.typ]},
		} {
			b.Run(c.name+"/"+dec.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(snappy.Encode(nil, c.data))))
				for b.Loop() {
					s := getScratch()
					err := dec.f(s, c.data)
					if err != nil || len(s.batch.Series) != 2000 || s.nerrs != 0 {
						b.Fatalf("decode: %v, %d series, %d errors %v", err, len(s.batch.Series), s.nerrs, s.errs)
					}
					s.finish()
					putScratch(s)
				}
				b.ReportMetric(float64(b.N)*2000/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}
