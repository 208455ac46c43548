package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// The issue 3 benchmark: realistic metric shapes, 1M samples each at 15 s
// nominal spacing with millisecond jitter, encoded as two-column TS_SORTED
// blocks (timestamp64 primary + float64 value) at several block sizes, under
// Raw, Raw+zstd, Adaptive and Adaptive+zstd, against Prometheus XOR chunks of
// 120 samples on the same samples.
//
// Framing is counted exactly as a v0.2 data frame costs it, per block: the
// 48-byte prefix, 32-byte trailer and 64-byte block header (split evenly
// between the two columns), and per column its 32-byte descriptor, a 48-byte
// descriptor per stream, each stream padded to 8 bytes, and its statistics
// (Automatic policy; none on the primary column) in the padded statistics
// area.
//
//	go test -run '^$' -bench BenchmarkMetricShapes -benchtime 1x ./acta/internal/encoding/
//	ACTA_BENCH_TABLE=1 go test -run TestBenchTable -v ./acta/internal/encoding/   # markdown table

const benchSamples = 1 << 20

var benchBlockSizes = []int{120, 1024, 8192, 65536}

type benchShape struct {
	name string
	ts   []int64
	vals []float64
}

var (
	shapesOnce sync.Once
	shapes     []benchShape
)

func metricShapes() []benchShape {
	shapesOnce.Do(func() {
		rng := rand.New(rand.NewSource(42))
		ts := make([]int64, benchSamples)
		t0 := int64(1767225600000)
		for i := range ts {
			// Scrapes land within a few milliseconds of the nominal tick.
			ts[i] = t0 + int64(i)*15000 + int64(rng.Intn(11)) - 5
		}
		mk := func(name string, f func(i int, prev float64) float64) {
			v := make([]float64, benchSamples)
			prev := 0.0
			for i := range v {
				prev = f(i, prev)
				v[i] = prev
			}
			shapes = append(shapes, benchShape{name, ts, v})
		}
		mk("counter", func(i int, p float64) float64 { return p + float64(rng.Intn(200)) })
		g := 42.0
		mk("gauge2dec", func(i int, p float64) float64 {
			if rng.Intn(4) == 0 {
				g += float64(rng.Intn(11)-5) / 100
			}
			return math.Round(g*100) / 100
		})
		mk("noise", func(i int, p float64) float64 { return 100 + 10*rng.NormFloat64() })
		mk("constant", func(i int, p float64) float64 { return 1 })
		state := 1.0
		mk("flag01", func(i int, p float64) float64 {
			if rng.Intn(100) == 0 {
				state = 1 - state
			}
			return state
		})
		mk("histbucket", func(i int, p float64) float64 {
			if rng.Intn(5) == 0 {
				return p + float64(1+rng.Intn(3))
			}
			return p
		})
	})
	return shapes
}

type benchMode struct {
	name string
	opts Options
}

var benchModes = []benchMode{
	{"raw", Options{Policy: PolicyRaw}},
	{"raw+zstd", Options{Policy: PolicyRaw, Codec: CodecZstd}},
	{"adaptive", Options{Policy: PolicyAdaptive}},
	{"adaptive+zstd", Options{Policy: PolicyAdaptive, Codec: CodecZstd}},
}

// Frame constants of spec §6 and §8 used to price framing.
const (
	framePrefix      = 48
	frameTrailer     = 32
	blockHeader      = 64
	columnDescriptor = 32
)

// columnBytes is one column's share of a frame: its descriptor, streams
// (descriptor + padded payload) and statistics.
func columnBytes(c Column) int {
	n := columnDescriptor + len(c.Stats)
	for _, s := range c.Streams {
		n += streamDescriptorSize + pad8(len(s.Data))
	}
	return n
}

type benchResult struct {
	tsBytes, valBytes int // framing included
	encode, decode    time.Duration
	blocks            int
	tsLayout          map[string]int // encoding choice histogram
	valLayout         map[string]int
}

func describe(c Column) string {
	var parts []string
	for _, s := range c.Streams {
		p := fmt.Sprintf("k%d/t%d", s.Kind, s.Transform)
		if s.Codec == CodecZstd {
			p += "z"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("L%d[%s]", c.Layout, strings.Join(parts, " "))
}

// asScaledInts returns the values as int64 multiples of 10^-scale when every
// one converts exactly (the store's planned int64/decimal64 rewrite of sealed
// files), or nil.
func asScaledInts(vals []float64) ([]int64, int) {
	for scale, mul := range []float64{1, 10, 100, 1000} {
		out := make([]int64, len(vals))
		ok := true
		for i, v := range vals {
			x := math.Round(v * mul)
			if x/mul != v || math.Abs(x) > 1<<53 {
				ok = false
				break
			}
			out[i] = int64(x)
		}
		if ok {
			return out, scale
		}
	}
	return nil, 0
}

// runShape encodes and decodes one shape at one block size and mode.
func runShape(tb testing.TB, sh benchShape, block int, mode benchMode) benchResult {
	return runShapeAs(tb, sh, nil, block, mode)
}

// runShapeAs is runShape with the value column stored as int64 (ints non-nil).
func runShapeAs(tb testing.TB, sh benchShape, ints []int64, block int, mode benchMode) benchResult {
	tsEnc, _ := NewEncoder(Options{Policy: mode.opts.Policy, Codec: mode.opts.Codec, Stats: StatsAutomatic, Primary: true})
	valEnc, _ := NewEncoder(Options{Policy: mode.opts.Policy, Codec: mode.opts.Codec, Stats: StatsAutomatic})
	res := benchResult{tsLayout: map[string]int{}, valLayout: map[string]int{}}
	tsBuf := make([]byte, 8*block)
	valBuf := make([]byte, 8*block)
	type enc struct{ ts, val Column }
	var saved []enc
	start := time.Now()
	for off := 0; off < len(sh.ts); off += block {
		n := min(block, len(sh.ts)-off)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint64(tsBuf[8*i:], uint64(sh.ts[off+i]))
			if ints != nil {
				binary.LittleEndian.PutUint64(valBuf[8*i:], uint64(ints[off+i]))
			} else {
				binary.LittleEndian.PutUint64(valBuf[8*i:], math.Float64bits(sh.vals[off+i]))
			}
		}
		tc, err := tsEnc.Encode(ClassSigned, 8, false, n, nil, Values{N: n, Width: 8, Fixed: tsBuf[:8*n]})
		if err != nil {
			tb.Fatal(err)
		}
		valClass := ClassFloat
		if ints != nil {
			valClass = ClassSigned
		}
		vc, err := valEnc.Encode(valClass, 8, false, n, nil, Values{N: n, Width: 8, Fixed: valBuf[:8*n]})
		if err != nil {
			tb.Fatal(err)
		}
		shared := framePrefix + frameTrailer + blockHeader
		statsPad := pad8(len(tc.Stats)+len(vc.Stats)) - len(tc.Stats) - len(vc.Stats)
		res.tsBytes += shared/2 + columnBytes(tc)
		res.valBytes += shared/2 + columnBytes(vc) + statsPad
		res.blocks++
		res.tsLayout[describe(tc)]++
		res.valLayout[describe(vc)]++
		saved = append(saved, enc{cloneColumn(tc), cloneColumn(vc)})
	}
	res.encode = time.Since(start)
	start = time.Now()
	for i, e := range saved {
		n := min(block, len(sh.ts)-i*block)
		_, tv, err := Decode(ClassSigned, 8, false, n, e.ts.Layout, 0, false, e.ts.Streams, nil)
		if err != nil {
			tb.Fatal(err)
		}
		valClass := ClassFloat
		if ints != nil {
			valClass = ClassSigned
		}
		_, vv, err := Decode(valClass, 8, false, n, e.val.Layout, 0, false, e.val.Streams, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 && int64(binary.LittleEndian.Uint64(tv.Fixed)) != sh.ts[0] {
			tb.Fatal("first timestamp does not round-trip")
		}
		if i == 0 && ints == nil && math.Float64frombits(binary.LittleEndian.Uint64(vv.Fixed)) != sh.vals[0] {
			tb.Fatal("first value does not round-trip")
		}
	}
	res.decode = time.Since(start)
	return res
}

func cloneColumn(c Column) Column {
	out := c
	out.Streams = make([]Stream, len(c.Streams))
	for i, s := range c.Streams {
		s.Data = append([]byte(nil), s.Data...)
		out.Streams[i] = s
	}
	out.Stats = append([]byte(nil), c.Stats...)
	return out
}

type xorResult struct {
	bytes          int
	chunks         int
	encode, decode time.Duration
}

// runXOR encodes the same samples into Prometheus XOR chunks of 120.
func runXOR(tb testing.TB, sh benchShape) xorResult {
	var res xorResult
	var chunks []*chunkenc.XORChunk
	start := time.Now()
	for off := 0; off < len(sh.ts); off += 120 {
		c := chunkenc.NewXORChunk()
		app, err := c.Appender()
		if err != nil {
			tb.Fatal(err)
		}
		for i := off; i < min(off+120, len(sh.ts)); i++ {
			app.Append(0, sh.ts[i], sh.vals[i])
		}
		res.bytes += len(c.Bytes())
		res.chunks++
		chunks = append(chunks, c)
	}
	res.encode = time.Since(start)
	start = time.Now()
	var it chunkenc.Iterator
	for _, c := range chunks {
		it = c.Iterator(it)
		for it.Next() != chunkenc.ValNone {
			it.At()
		}
	}
	res.decode = time.Since(start)
	return res
}

func mbps(d time.Duration) float64 {
	return float64(benchSamples*16) / 1e6 / d.Seconds()
}

func BenchmarkMetricShapes(b *testing.B) {
	for _, sh := range metricShapes() {
		b.Run(sh.name+"/xor120", func(b *testing.B) {
			var r xorResult
			for i := 0; i < b.N; i++ {
				r = runXOR(b, sh)
			}
			b.ReportMetric(float64(r.bytes)/benchSamples, "B/sample")
			b.ReportMetric(mbps(r.encode), "enc_MB/s")
			b.ReportMetric(mbps(r.decode), "dec_MB/s")
		})
		for _, block := range benchBlockSizes {
			for _, mode := range benchModes {
				b.Run(fmt.Sprintf("%s/%d/%s", sh.name, block, mode.name), func(b *testing.B) {
					var r benchResult
					for i := 0; i < b.N; i++ {
						r = runShape(b, sh, block, mode)
					}
					b.ReportMetric(float64(r.tsBytes)/benchSamples, "ts_B/sample")
					b.ReportMetric(float64(r.valBytes)/benchSamples, "val_B/sample")
					b.ReportMetric(float64(r.tsBytes+r.valBytes)/benchSamples, "B/sample")
					b.ReportMetric(mbps(r.encode), "enc_MB/s")
					b.ReportMetric(mbps(r.decode), "dec_MB/s")
				})
			}
		}
	}
}

// TestBenchTable prints the benchmark as a markdown table (and the chosen
// encodings) for the closing note.
func TestBenchTable(t *testing.T) {
	if os.Getenv("ACTA_BENCH_TABLE") == "" {
		t.Skip("set ACTA_BENCH_TABLE=1")
	}
	var sb strings.Builder
	sb.WriteString("| shape | block | mode | ts B/sample | value B/sample | total B/sample | enc MB/s | dec MB/s |\n|---|---:|---|---:|---:|---:|---:|---:|\n")
	var notes strings.Builder
	for _, sh := range metricShapes() {
		x := runXOR(t, sh)
		fmt.Fprintf(&sb, "| %s | 120 | prometheus XOR | - | - | %.3f | %.0f | %.0f |\n", sh.name, float64(x.bytes)/benchSamples, mbps(x.encode), mbps(x.decode))
		for _, block := range benchBlockSizes {
			for _, mode := range benchModes {
				r := runShape(t, sh, block, mode)
				fmt.Fprintf(&sb, "| %s | %d | %s | %.3f | %.3f | %.3f | %.0f | %.0f |\n", sh.name, block, mode.name,
					float64(r.tsBytes)/benchSamples, float64(r.valBytes)/benchSamples, float64(r.tsBytes+r.valBytes)/benchSamples, mbps(r.encode), mbps(r.decode))
				if mode.opts.Policy == PolicyAdaptive {
					fmt.Fprintf(&notes, "%s/%d/%s: ts %v val %v\n", sh.name, block, mode.name, top(r.tsLayout), top(r.valLayout))
				}
			}
		}
	}
	// The same samples with the value column rewritten as int64 / decimal64
	// (exact conversions only), as the store plans for sealed files.
	sb.WriteString("\n| shape (value as int64/decimal64) | block | mode | value B/sample | total B/sample |\n|---|---:|---|---:|---:|\n")
	for _, sh := range metricShapes() {
		ints, scale := asScaledInts(sh.vals)
		if ints == nil {
			continue
		}
		for _, block := range []int{1024, 65536} {
			for _, mode := range benchModes[2:] {
				r := runShapeAs(t, sh, ints, block, mode)
				fmt.Fprintf(&sb, "| %s (scale %d) | %d | %s | %.3f | %.3f |\n", sh.name, scale, block, mode.name,
					float64(r.valBytes)/benchSamples, float64(r.tsBytes+r.valBytes)/benchSamples)
				fmt.Fprintf(&notes, "%s as int/%d/%s: val %v\n", sh.name, block, mode.name, top(r.valLayout))
			}
		}
	}
	t.Log("\n" + sb.String() + "\n" + notes.String())
}

func top(m map[string]int) string {
	best, n := "", 0
	for k, v := range m {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return fmt.Sprintf("%s x%d/%d", best, n, sumMap(m))
}

func sumMap(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}
