package acta

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

const benchRows = 1 << 20

func benchData() ([]int64, []float64) {
	ts := make([]int64, benchRows)
	vs := make([]float64, benchRows)
	for i := range ts {
		ts[i] = 1_700_000_000_000 + int64(i)*15_000
		vs[i] = math.Sin(float64(i)/100) * 1000
	}
	return ts, vs
}

// BenchmarkWrite1M writes 1M (timestamp ms, float64) rows in 64 Ki-row
// blocks, appending 8 Ki rows per call.
func BenchmarkWrite1M(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{{"raw", WriterOptions{}}, {"adaptive-zstd", WriterOptions{Encoding: EncodingAdaptive, Codec: CodecZstd}}} {
		b.Run(tc.name, func(b *testing.B) {
			ts, vs := benchData()
			s := tsSchema(b)
			dir := b.TempDir()
			b.SetBytes(benchRows * 16)
			b.ReportAllocs()
			var size int64
			for i := 0; i < b.N; i++ {
				path := filepath.Join(dir, "w.acta")
				os.Remove(path)
				w, err := Create(path, s, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				for o := 0; o < benchRows; o += 8192 {
					if err := w.Append(tsBatch(s, ts[o:o+8192], vs[o:o+8192])); err != nil {
						b.Fatal(err)
					}
				}
				sum, err := w.Finish()
				if err != nil {
					b.Fatal(err)
				}
				size = sum.BytesWritten
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size)/benchRows, "B/row")
		})
	}
}

// BenchmarkWriteSmallBlocks is the store's flush pattern: 120-row blocks,
// Append + Flush each (no fsync, to measure the CPU path).
func BenchmarkWriteSmallBlocks(b *testing.B) {
	ts, vs := benchData()
	s := tsSchema(b)
	path := filepath.Join(b.TempDir(), "small.acta")
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.SetBytes(120 * 16)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o := (i * 120) % (benchRows - 120)
		if err := w.Append(tsBatch(s, ts[o:o+120], vs[o:o+120])); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
	b.ReportMetric(float64(w.Size())/float64(b.N), "B/block")
}

// BenchmarkScan1M scans 1M rows: everything, and a 1% primary range.
func BenchmarkScan1M(b *testing.B) {
	ts, vs := benchData()
	s := tsSchema(b)
	path := filepath.Join(b.TempDir(), "scan.acta")
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Append(tsBatch(s, ts, vs)); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    ScanOptions
		rows int64
	}{
		{"all", ScanOptions{}, benchRows},
		{"range1pct", ScanOptions{Range: &PrimaryRange{ts[benchRows/2], ts[benchRows/2+benchRows/100]}}, benchRows / 100},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(tc.rows * 16)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sc, err := r.Scan(tc.o)
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for {
					bt, err := sc.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n += int64(bt.Rows)
				}
				if n != tc.rows {
					b.Fatalf("%d rows, want %d", n, tc.rows)
				}
			}
			b.ReportMetric(float64(tc.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkOpenSmallBlocks opens a file of 10,000 120-row blocks (the
// store's shape before compaction): discovery cost per block.
func BenchmarkOpenSmallBlocks(b *testing.B) {
	ts, vs := benchData()
	s := tsSchema(b)
	path := filepath.Join(b.TempDir(), "many.acta")
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	const blocks = 10000
	for i := 0; i < blocks; i++ {
		o := (i * 120) % (benchRows - 120)
		w.Append(tsBatch(s, ts[o:o+120], vs[o:o+120]))
		w.Flush()
	}
	if _, err := w.Finish(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Blocks()) != blocks {
			b.Fatal("blocks")
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blocks), "ns/block")
}
