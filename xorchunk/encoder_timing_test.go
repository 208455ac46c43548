package xorchunk

import (
	"math"
	"math/rand"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// benchSamples is one series of a 12 h scrape at 15 s: 2880 samples, a
// jittered timestamp and a counter, a gauge or a constant.
func benchSamples(kind string) ([]int64, []float64) {
	rng := rand.New(rand.NewSource(1))
	ts := make([]int64, 2880)
	vs := make([]float64, 2880)
	v := 1000.0
	for i := range ts {
		ts[i] = 1_700_000_000_000 + int64(i)*15000 + rng.Int63n(50) - 25
		switch kind {
		case "counter":
			v += float64(rng.Intn(100))
		case "gauge":
			v = math.Round(rng.NormFloat64()*1e4) / 100
		}
		vs[i] = v
	}
	return ts, vs
}

// BenchmarkEncode encodes 2880 samples into 24 chunks of 120, as the
// streamed remote read does for a 12 h series: Encoder against chunkenc's
// appender. samples/s and B/sample are the figures that matter.
func BenchmarkEncode(b *testing.B) {
	for _, kind := range []string{"counter", "gauge", "constant"} {
		ts, vs := benchSamples(kind)
		b.Run(kind+"/xorchunk", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			var e Encoder
			for b.Loop() {
				buf = buf[:0]
				for i := range ts {
					if i%120 == 0 {
						if i > 0 {
							buf = e.Finish(buf)
						}
						e.Start(buf)
					}
					e.Append(ts[i], vs[i])
				}
				buf = e.Finish(buf)
			}
			b.ReportMetric(float64(b.N)*float64(len(ts))/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(len(buf))/float64(len(ts)), "B/sample")
		})
		b.Run(kind+"/chunkenc", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = 0
				var c *chunkenc.XORChunk
				var app chunkenc.Appender
				for i := range ts {
					if i%120 == 0 {
						if c != nil {
							n += len(c.Bytes())
						}
						c = chunkenc.NewXORChunk()
						app, _ = c.Appender()
					}
					app.Append(0, ts[i], vs[i])
				}
				n += len(c.Bytes())
			}
			b.ReportMetric(float64(b.N)*float64(len(ts))/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(n)/float64(len(ts)), "B/sample")
		})
	}
}

// BenchmarkDecode reads BenchmarkEncode's chunks (2880 samples in 24
// chunks of 120) into a slice: Decoder against chunkenc's iterator, as a
// plain read used it (through chunkenc.Iterator).
func BenchmarkDecode(b *testing.B) {
	type smp struct {
		t int64
		v float64
	}
	for _, kind := range []string{"counter", "gauge", "constant"} {
		ts, vs := benchSamples(kind)
		chunks := reference(ts, vs, 120)
		out := make([]smp, 0, len(ts))
		b.Run(kind+"/xorchunk", func(b *testing.B) {
			b.ReportAllocs()
			var d Decoder
			for b.Loop() {
				out = out[:0]
				for _, c := range chunks {
					d.Reset(c)
					for d.Next() {
						t, v := d.At()
						out = append(out, smp{t, v})
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ts)), "ns/sample")
		})
		b.Run(kind+"/chunkenc", func(b *testing.B) {
			b.ReportAllocs()
			var xc chunkenc.XORChunk
			var it chunkenc.Iterator
			for b.Loop() {
				out = out[:0]
				for _, c := range chunks {
					xc.Reset(c)
					it = xc.Iterator(it)
					for it.Next() == chunkenc.ValFloat {
						t, v := it.At()
						out = append(out, smp{t, v})
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ts)), "ns/sample")
		})
	}
}
