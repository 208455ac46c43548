package actastore

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

// BenchmarkAppendDuringCompaction measures Append latency (a 2000-series
// remote-write-sized batch, WAL fsync each) while a maintenance pass
// compacts 400 sealed day files (200 series x 2 days of 20-row blocks, as
// 5-minute flushes leave them): paced at the default 16 MiB/s, unpaced, and
// with no compaction running, so the pacing's effect on ingestion shows.
// go test -run '^$' -bench AppendDuringCompaction -benchtime 200x ./actastore
func BenchmarkAppendDuringCompaction(b *testing.B) {
	for _, c := range []struct {
		name string
		run  bool
		rate int64
	}{{"idle", false, 0}, {"paced-16MiB", true, 16 << 20}, {"unpaced", true, 0}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			clk := &fakeClock{}
			clk.Set(day0 + 2*24*hour)
			opts := Options{Now: clk.Now, Logger: quiet, MaintenanceInterval: -1, MaxHeadAge: time.Hour,
				Rotation: rotation.Policy{Period: 24 * time.Hour}, Compaction: CompactionOptions{BytesPerSec: c.rate}}
			s := openT(b, dir, opts)
			ls := benchLabels(2000)
			batch := make([]SeriesSamples, len(ls))
			for i, l := range ls {
				batch[i] = SeriesSamples{Labels: l, Samples: []Sample{{T: day0 + 2*24*hour, V: 1}}}
			}
			mustAppend(b, s, batch)
			refs := make([]uint64, 200)
			for i := range refs {
				refs[i] = refOf(b, s, ls[i])
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			// Two sealed days for the first 200 series, written directly.
			for i, ref := range refs {
				for d := int64(0); d < 2; d++ {
					writeDayFile(b, seriesFilePath(dir, ref, day0+d*24*hour), day0+d*24*hour, i)
				}
			}
			s = openT(b, dir, opts)
			defer s.abandon()
			done := make(chan MaintenanceResult, 1)
			if c.run {
				go func() { r, _ := s.Maintain(); done <- r }()
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				ts := day0 + 2*24*hour + int64(n+1)*step15
				for i := range batch {
					batch[i].Samples[0] = Sample{T: ts, V: float64(n)}
				}
				start := time.Now()
				mustAppend(b, s, batch)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(p float64) float64 {
				return float64(lat[int(math.Min(float64(len(lat)-1), p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			if c.run {
				r := <-done
				b.ReportMetric(float64(r.Compacted), "files-compacted")
			}
		})
	}
}

// writeDayFile writes a day of 15 s samples in 20-row blocks, uncompressed,
// as flushes leave a sealed file.
func writeDayFile(b testing.TB, path string, start int64, series int) {
	w, err := acta.Create(path, floatSchema, floats.writerOptions(fileOptions{blockRows: 4096}))
	if err != nil {
		b.Fatal(err)
	}
	ts := make([]int64, 20)
	vs := make([]float64, 20)
	for k := 0; k < 5760/20; k++ {
		for j := range ts {
			step := k*20 + j
			ts[j] = start + int64(step)*step15
			vs[j] = realisticValue(series, step)
		}
		if err := w.Append(&acta.Batch{Schema: floatSchema, Rows: 20, Columns: []acta.Array{
			&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		b.Fatal(err)
	}
}
