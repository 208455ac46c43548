package remoteread

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// BenchmarkRead reads 200 series x 2000 samples (flushed to their Acta
// files) over loopback with each response type, all series at once and one
// series alone, and reports samples/s.
func BenchmarkRead(b *testing.B) {
	st := openStoreOpts(b, actastore.Options{BlockRows: 1000})
	rl := readLimits
	rl.MaxSamplesPerQuery = 1 << 30
	_, rurl := server(b, st, rl)
	const nseries, nsamples = 200, 2000
	for i := range nseries {
		ss := make([]actastore.Sample, nsamples)
		for j := range ss {
			ss[j] = actastore.Sample{T: int64(j) * 15000, V: float64(i*j%1000) + 0.25}
		}
		ls := labels.FromStrings("__name__", "bench", "i", fmt.Sprint(i))
		if _, err := st.Append(b.Context(), []actastore.SeriesSamples{{Labels: ls, Samples: ss}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.(interface{ FlushAll() error }).FlushAll(); err != nil {
		b.Fatal(err)
	}
	for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES} {
		for _, sel := range []struct {
			name   string
			m      *prompb.LabelMatcher
			series int
		}{{"all", m(prompb.LabelMatcher_EQ, "__name__", "bench"), nseries}, {"one", m(prompb.LabelMatcher_EQ, "i", "7"), 1}} {
			body := testkit.ReadRequest([]prompb.ReadRequest_ResponseType{typ}, q(0, math.MaxInt64, sel.m))
			b.Run(typ.String()+"/"+sel.name, func(b *testing.B) {
				b.ReportAllocs()
				var n int64
				for b.Loop() {
					resp, err := http.Post(rurl, "application/x-protobuf", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					n, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil {
						b.Fatal(err) // a stream cut short
					}
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
				samples := float64(sel.series * nsamples)
				b.ReportMetric(float64(b.N)*samples/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(float64(n)/samples, "B/sample")
			})
		}
	}
}
