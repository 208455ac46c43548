package histfile_test

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
)

// realisticSeries is n scrapes, 15 s apart, of a request-latency native
// histogram at schema 3 (Prometheus's default for
// prometheus_http_request_duration_seconds is schema 3 too): a lognormal
// latency around 20 ms, 5 to 50 requests per scrape, cumulative counts.
func realisticSeries(n int, seed uint64) []histfile.Sample {
	r := rand.New(rand.NewPCG(seed, 1))
	const schema = 3
	counts := map[int32]uint64{}
	var count, zero uint64
	var sum float64
	out := make([]histfile.Sample, 0, n)
	for i := 0; i < n; i++ {
		for k := 5 + r.IntN(46); k > 0; k-- {
			v := math.Exp(r.NormFloat64()*0.8 + math.Log(0.02))
			count++
			sum += v
			if v <= 1e-128 {
				zero++
				continue
			}
			frac, exp := math.Frexp(v)
			idx := int32(math.Ceil(math.Log2(frac)*8)) + int32(exp)*8
			counts[idx]++
		}
		idxs := make([]int32, 0, len(counts))
		for k := range counts {
			idxs = append(idxs, k)
		}
		slices.Sort(idxs)
		h := &histogram.Histogram{Schema: schema, ZeroThreshold: 1e-128, ZeroCount: zero, Count: count, Sum: sum}
		var prev int64
		last := int32(0)
		for j, idx := range idxs {
			if j == 0 || idx-last > 1 {
				off := idx
				if j > 0 {
					off = idx - last - 1
				}
				h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: off})
			}
			h.PositiveSpans[len(h.PositiveSpans)-1].Length++
			c := int64(counts[idx])
			h.PositiveBuckets = append(h.PositiveBuckets, c-prev)
			prev, last = c, idx
		}
		if i > 0 {
			h.CounterResetHint = histogram.NotCounterReset
		}
		out = append(out, histfile.Sample{T: 1_700_000_000_000 + int64(i)*15_000, H: h})
	}
	return out
}

// BenchmarkBytesPerHistogram reports on-disk bytes per histogram sample of
// a histogram series file (allocated size not counted: the apparent size
// of one file, blocks of blockRows rows) next to Prometheus's histogram
// chunks for the same samples (120 per chunk, plus the 8-byte reference,
// mint, maxt, encoding, length and CRC each chunk costs in its chunk
// files).
func BenchmarkBytesPerHistogram(b *testing.B) {
	const n = 2880 // 12 h of 15 s scrapes
	ss := realisticSeries(n, 7)
	for _, c := range []struct {
		name      string
		blockRows int
	}{{"block20", 20}, {"block80", 80}, {"block240", 240}, {"block4096", 4096}} {
		b.Run(c.name, func(b *testing.B) {
			var size int64
			for b.Loop() {
				path := filepath.Join(b.TempDir(), "h.acta")
				w, err := acta.Create(path, histfile.Schema(), acta.WriterOptions{Codec: acta.CodecZstd, Encoding: acta.EncodingAdaptive})
				if err != nil {
					b.Fatal(err)
				}
				for lo := 0; lo < n; lo += c.blockRows {
					if err := w.Append(histfile.Batch(ss[lo:min(n, lo+c.blockRows)])); err != nil {
						b.Fatal(err)
					}
					if err := w.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				st, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				size = st.Size()
			}
			b.ReportMetric(float64(size)/n, "B/histogram")
			b.ReportMetric(float64(promChunkBytes(b, ss))/n, "prom_B/histogram")
		})
	}
}

// promChunkBytes encodes ss as Prometheus's TSDB does (histogram chunks of
// up to 120 samples) and returns their bytes plus per-chunk file overhead.
func promChunkBytes(b *testing.B, ss []histfile.Sample) int {
	const perChunkOverhead = 8 + 8 + 8 + 1 + 2 + 4 // ref, mint, maxt, encoding, length varint, CRC32
	total := 0
	for lo := 0; lo < len(ss); lo += 120 {
		c := chunkenc.NewHistogramChunk()
		app, err := c.Appender()
		if err != nil {
			b.Fatal(err)
		}
		var chk chunkenc.Chunk = c
		for _, s := range ss[lo:min(len(ss), lo+120)] {
			nc, recoded, napp, err := app.AppendHistogram(nil, 0, s.T, s.H, false)
			if err != nil {
				b.Fatal(err)
			}
			if nc != nil {
				if !recoded { // a new chunk after a full one; recoded replaces it
					total += len(chk.Bytes()) + perChunkOverhead
				}
				chk = nc
			}
			app = napp
		}
		total += len(chk.Bytes()) + perChunkOverhead
	}
	return total
}
