package rotation

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

// BenchmarkFlushBlock is the cost of one head flush of a 15 s series at
// max_head_age 5m (a 20-row block) with and without zstd: what the choice
// of a flush codec costs in CPU, next to TestFigures' bytes.
func BenchmarkFlushBlock(b *testing.B) {
	smps := realistic15s("counter", 5, 20*512)
	blocks := chunk(smps, 20)
	for _, c := range []struct {
		name string
		o    acta.WriterOptions
	}{{"zstd3", flushOptions}, {"none", acta.WriterOptions{Encoding: acta.EncodingAdaptive}}} {
		b.Run(c.name, func(b *testing.B) {
			s := seriesSchema(b)
			path := filepath.Join(b.TempDir(), "f.acta")
			w, err := acta.Create(path, s, c.o)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run := blocks[i%len(blocks)]
				ts := make([]int64, len(run))
				vs := make([]float64, len(run))
				for k, smp := range run {
					ts[k], vs[k] = smp.t, smp.v
				}
				if err := w.Append(&acta.Batch{Schema: s, Rows: len(run), Columns: []acta.Array{
					&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				if i%512 == 511 { // keep the file bounded
					b.StopTimer()
					w.Close()
					os.Remove(path)
					if w, err = acta.Create(path, s, c.o); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}
