package actastore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

// BenchmarkSealedZstdLevel measures what the Zstandard level of rewritten
// files buys and costs: a day of 15 s samples of three shapes (a counter
// with a reset, a 2-decimal gauge, float noise), jittered timestamps,
// written as sealed files. It reports bytes a sample and seconds of one
// core per GiB of samples encoded (16 bytes each, as decoded).
func BenchmarkSealedZstdLevel(b *testing.B) {
	const n = 5760
	r := rand.New(rand.NewPCG(8, 8))
	ts := scrapeTimes(r, n, -1, 0)
	shapes := map[string][]Sample{}
	c, g := 0.0, 50.0
	for _, name := range []string{"counter", "gauge2dp", "noise"} {
		ss := make([]Sample, n)
		for i := range ss {
			var v float64
			switch name {
			case "counter":
				c += float64(500 + r.IntN(600))
				if i == n/2 {
					c = 0
				}
				v = c
			case "gauge2dp":
				g += float64(r.IntN(201)-100) / 100
				v = float64(int64(g*100)) / 100
			default:
				v = r.NormFloat64()
			}
			ss[i] = Sample{T: ts[i], V: v}
		}
		shapes[name] = ss
	}
	dir := b.TempDir()
	for _, name := range []string{"counter", "gauge2dp", "noise"} {
		bs, err := sealedFloatBatches(shapes[name], 65536)
		if err != nil {
			b.Fatal(err)
		}
		for _, level := range []int{1, 3, 6, 9, 12, 19} {
			b.Run(fmt.Sprintf("%s/zstd%d", name, level), func(b *testing.B) {
				p := filepath.Join(dir, "f.acta")
				var size int64
				for b.Loop() {
					os.Remove(p)
					w, err := acta.Create(p, bs[0].Schema, acta.WriterOptions{Codec: acta.CodecZstd, ZstdLevel: level, Encoding: acta.EncodingAdaptive, RowBlockTarget: 1 << 24})
					if err != nil {
						b.Fatal(err)
					}
					for _, bb := range bs {
						if err := w.Append(bb); err != nil {
							b.Fatal(err)
						}
						w.Flush()
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					fi, _ := os.Stat(p)
					size = fi.Size()
				}
				b.ReportMetric(float64(size)/n, "bytes/sample")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9/(float64(n*16)/(1<<30)), "s/GiB-of-samples")
			})
		}
	}
}
