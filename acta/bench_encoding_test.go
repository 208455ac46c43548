package acta

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkEncodingFiles writes the issue 3 metric shapes (1M samples at
// 15 s with millisecond jitter) through the real Writer and reads them back
// with Scan, so bytes per sample are whole-file sizes: prologue, schema,
// every frame's prefix, header, descriptors, statistics, padding and
// trailer included. The column layer's own benchmark
// (internal/encoding BenchmarkMetricShapes) splits the same figures by
// column and compares Prometheus XOR chunks.
//
//	go test -run '^$' -bench BenchmarkEncodingFiles -benchtime 1x ./acta/
func BenchmarkEncodingFiles(b *testing.B) {
	const n = 1 << 20
	ts, shapes := encodingBenchShapes(n)
	modes := []struct {
		name string
		opts WriterOptions
	}{
		{"raw", WriterOptions{}},
		{"raw+zstd", WriterOptions{Codec: CodecZstd}},
		{"adaptive", WriterOptions{Encoding: EncodingAdaptive}},
		{"adaptive+zstd", WriterOptions{Encoding: EncodingAdaptive, Codec: CodecZstd}},
	}
	s := tsSchema(b)
	for _, sh := range shapes {
		for _, block := range []int{120, 1024, 8192, 65536} {
			for _, m := range modes {
				b.Run(fmt.Sprintf("%s/%d/%s", sh.name, block, m.name), func(b *testing.B) {
					opts := m.opts
					opts.RowBlockTarget = block
					opts.Statistics = StatsAutomatic
					var size int64
					var enc, dec time.Duration
					for i := 0; i < b.N; i++ {
						path := filepath.Join(b.TempDir(), "shape.acta")
						start := time.Now()
						w, err := Create(path, s, opts)
						if err != nil {
							b.Fatal(err)
						}
						for o := 0; o < n; o += block {
							hi := min(o+block, n)
							if err := w.Append(tsBatch(s, ts[o:hi], sh.vals[o:hi])); err != nil {
								b.Fatal(err)
							}
						}
						sum, err := w.Finish()
						if err != nil {
							b.Fatal(err)
						}
						enc += time.Since(start)
						size = sum.BytesWritten

						start = time.Now()
						rows := readAllRows(b, path, ts, sh.vals)
						dec += time.Since(start)
						if rows != n {
							b.Fatalf("read %d rows, wrote %d", rows, n)
						}
					}
					b.ReportMetric(float64(size)/n, "file_B/sample")
					b.ReportMetric(float64(n*16*b.N)/1e6/enc.Seconds(), "write_MB/s")
					b.ReportMetric(float64(n*16*b.N)/1e6/dec.Seconds(), "read_MB/s")
				})
			}
		}
	}
}

// readAllRows scans path and checks every sample bit for bit.
func readAllRows(tb testing.TB, path string, ts []int64, vs []float64) int {
	r, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	sc, err := r.Scan(ScanOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	rows := 0
	for {
		bt, err := sc.Next()
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			tb.Fatal(err)
		}
		t := bt.Columns[0].(*FixedArray[int64]).Values
		v := bt.Columns[1].(*FixedArray[float64]).Values
		for i := range t {
			if t[i] != ts[rows+i] || math.Float64bits(v[i]) != math.Float64bits(vs[rows+i]) {
				tb.Fatalf("row %d differs", rows+i)
			}
		}
		rows += bt.Rows
	}
}

type encodingBenchShape struct {
	name string
	vals []float64
}

// encodingBenchShapes mirrors the column layer's metric shapes: shared
// jittered timestamps and six value series.
func encodingBenchShapes(n int) ([]int64, []encodingBenchShape) {
	rng := rand.New(rand.NewSource(42))
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = 1767225600000 + int64(i)*15000 + int64(rng.Intn(11)) - 5
	}
	var out []encodingBenchShape
	mk := func(name string, f func(prev float64) float64) {
		v := make([]float64, n)
		prev := 0.0
		for i := range v {
			prev = f(prev)
			v[i] = prev
		}
		out = append(out, encodingBenchShape{name, v})
	}
	mk("counter", func(p float64) float64 { return p + float64(rng.Intn(200)) })
	g := 42.0
	mk("gauge2dec", func(p float64) float64 {
		if rng.Intn(4) == 0 {
			g += float64(rng.Intn(11)-5) / 100
		}
		return math.Round(g*100) / 100
	})
	mk("noise", func(p float64) float64 { return 100 + 10*rng.NormFloat64() })
	mk("constant", func(p float64) float64 { return 1 })
	state := 1.0
	mk("flag01", func(p float64) float64 {
		if rng.Intn(100) == 0 {
			state = 1 - state
		}
		return state
	})
	mk("histbucket", func(p float64) float64 {
		if rng.Intn(5) == 0 {
			return p + float64(1+rng.Intn(3))
		}
		return p
	})
	return ts, out
}
