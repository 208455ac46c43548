package actastore

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

// writeSealedT writes sorted samples as a sealed float file the way
// compaction does, and returns its schema.
func writeSealedT(t testing.TB, path string, ss []Sample) *acta.Schema {
	t.Helper()
	return writeSealedRowsT(t, path, ss, 65536)
}

// writeSealedRowsT is writeSealedT with blocks of at most rows rows.
func writeSealedRowsT(t testing.TB, path string, ss []Sample, rows int) *acta.Schema {
	t.Helper()
	bs, err := sealedFloatBatches(ss, rows)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	res, err := rotation.WriteTemp(nil, path+".tmp", floatSchema, bs, rotation.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rotation.Install(path+".tmp", path, &res); err != nil {
		t.Fatal(err)
	}
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Schema()
}

// readBackT reads every sample of a series file through the store's codec.
func readBackT(t testing.TB, path string) []Sample {
	t.Helper()
	var got []Sample
	if _, _, _, err := readFile(floats, nil, path, math.MinInt64, math.MaxInt64, func(run []Sample) error {
		got = append(got, run...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func samplesOf(vs ...float64) []Sample {
	ss := make([]Sample, len(vs))
	for i, v := range vs {
		ss[i] = Sample{T: int64(1000 + 15000*i), V: v}
	}
	return ss
}

func nanBits(b uint64) float64 { return math.Float64frombits(b) }

// Every shape the issue names, with the type the file must get and every
// value back bit for bit.
func TestSealedValueTypes(t *testing.T) {
	negZero := math.Copysign(0, -1)
	big := math.Ldexp(1, 62)
	cases := []struct {
		name string
		vs   []float64
		typ  string
		exc  bool
	}{
		{"integer counter", []float64{0, 1, 5, 9, 1e6, 1e12}, "int64", false},
		{"integers near ±2^63", []float64{-math.Ldexp(1, 63), math.Nextafter(math.Ldexp(1, 63), 0), big, -big, 2, 3}, "int64", false},
		{"2^53+1 neighbours", []float64{math.Ldexp(1, 53), math.Ldexp(1, 53) + 2, 9007199254740993 /* rounds to 2^53 */}, "int64", false},
		{"2-decimal gauge", []float64{0.01, 0.5, 1.25, 99.99, -3.07, 12345.67}, "decimal64(18,2)", false},
		{"prices", []float64{19.99, 5, 0.1, 1234.5}, "decimal64(18,2)", false},
		{"scale 18", []float64{1e-18, 3e-18, 0.000000000000000007}, "decimal64(18,18)", false},
		{"stale marker in a counter", []float64{1, 2, 3, staleNaN, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, "int64", true},
		{"NaN payloads, infinities, -0", append([]float64{nanBits(0x7ff8000000000001), nanBits(0xfff0000000000123), math.Inf(1), math.Inf(-1), negZero},
			0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79), "int64", true},
		{"too many exceptions", []float64{staleNaN, 1, staleNaN, 2, staleNaN}, "float64", false},
		{"only stale markers", []float64{staleNaN, staleNaN}, "float64", false},
		{"subnormals", []float64{math.SmallestNonzeroFloat64, 5e-324 * 3, math.Float64frombits(0x000fffffffffffff)}, "float64", false},
		{"float noise", []float64{0.1234567890123456, math.Pi, math.E, 1.0 / 3}, "float64", false},
		{"beyond int64", []float64{1e19, 1, 2}, "float64", false},
		{"decimal beyond 2^53", []float64{9007199254740994, 0.5}, "float64", false}, // 0.5 needs scale 1, and 9007199254740994×10 > 2^53
		{"clock seconds", []float64{1.7500000001234567e9, 1.7500000151234567e9}, "float64", false},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := samplesOf(c.vs...)
			p := filepath.Join(dir, "f.acta")
			schema := writeSealedT(t, p, ss)
			vc := schema.Columns[schema.Index(colValue)]
			if got := vc.Type.String(); got != c.typ {
				t.Errorf("value type %s, want %s", got, c.typ)
			}
			if got := schema.Index(colValueExc) >= 0; got != c.exc {
				t.Errorf("exceptions column %v, want %v", got, c.exc)
			}
			if vc.Nullable != c.exc {
				t.Errorf("value column nullable %v, want %v", vc.Nullable, c.exc)
			}
			if schema.ID != sealedSchemaID {
				t.Errorf("schema ID %d, want %d", schema.ID, sealedSchemaID)
			}
			if err := validateFile(p); err != nil {
				t.Fatal(err)
			}
			got := readBackT(t, p)
			if !equalBits(got, ss) {
				t.Fatalf("got %v, want %v", got, ss)
			}
		})
	}
}

// randomShape draws the values of one sealed file: a shape (integers of
// every magnitude, decimals of every scale 0..18, floats of every class)
// sprinkled with the values no integer type holds.
func randomShape(r *rand.Rand, n int) []float64 {
	vs := make([]float64, n)
	shape := r.IntN(6)
	scale := r.IntN(19)
	p := math.Pow10(scale)
	for i := range vs {
		switch shape {
		case 0: // integers up to ±2^63
			vs[i] = float64(r.Int64N(1<<62) * int64(1-2*r.IntN(2)))
		case 1: // decimals at the scale: u / 10^s, |u| <= 2^53
			vs[i] = float64(r.Int64N(maxExactInt+1)*int64(1-2*r.IntN(2))) / p
		case 2: // small decimals (prices, percentages)
			vs[i] = float64(r.IntN(100000)) / p
		case 3: // any float bits
			vs[i] = math.Float64frombits(r.Uint64())
		case 4: // subnormals
			vs[i] = math.Float64frombits(r.Uint64() & 0x800fffffffffffff)
		default: // full-precision noise
			vs[i] = r.NormFloat64() * math.Pow10(r.IntN(20)-10)
		}
		if r.IntN(50) == 0 {
			vs[i] = []float64{staleNaN, nanBits(0x7ff8000000000000 | r.Uint64()>>13), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}[r.IntN(5)]
		}
	}
	return vs
}

func TestSealedValueTypesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	dir := t.TempDir()
	types := map[string]int{}
	for i := range 300 {
		ss := samplesOf(randomShape(r, 1+r.IntN(300))...)
		p := filepath.Join(dir, strconv.Itoa(i)+".acta")
		schema := writeSealedRowsT(t, p, ss, 1+r.IntN(400)) // one block or several
		types[schema.Columns[1].Type.String()]++
		if got := readBackT(t, p); !equalBits(got, ss) {
			t.Fatalf("file %d (%s): values differ", i, schema.Columns[1].Type)
		}
	}
	if types["int64"] == 0 || types["float64"] == 0 || len(types) < 6 {
		t.Fatalf("the shapes did not reach every type: %v", types)
	}
	t.Logf("types chosen: %v", types)
}

// The decimal rule is the spec's value: u × 10^-scale, correctly rounded
// to float64 (strconv parses decimal strings exactly so), for every value
// the chooser puts in a decimal column.
func TestDecimalIsTheSpecValue(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		s := 1 + r.IntN(18)
		u := r.Int64N(maxExactInt + 1)
		v := float64(u) / math.Pow10(s)
		got, ok := asDecimal(v, math.Pow10(s))
		if !ok {
			continue // exact at a smaller scale is fine; this one must then hold too
		}
		spec, err := strconv.ParseFloat(strconv.FormatInt(got, 10)+"e-"+strconv.Itoa(s), 64)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(spec) != math.Float64bits(v) {
			t.Fatalf("%v at scale %d: unscaled %d is %v by the spec", v, s, got, spec)
		}
	}
}

// FuzzSealedValues: any float64 bits come back from a sealed file exactly.
func FuzzSealedValues(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 2, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x80\x9a\x99\x99\x99\x99\x99\xb9\x3f"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		var vs []float64
		for len(b) >= 8 && len(vs) < 512 {
			u := uint64(0)
			for i := range 8 {
				u |= uint64(b[i]) << (8 * i)
			}
			vs = append(vs, math.Float64frombits(u))
			b = b[8:]
		}
		if len(vs) == 0 {
			return
		}
		ss := samplesOf(vs...)
		p := filepath.Join(dir, "f.acta")
		writeSealedT(t, p, ss)
		if got := readBackT(t, p); !equalBits(got, ss) {
			t.Fatalf("values differ: %v vs %v", got, ss)
		}
	})
}

// BenchmarkSealedValueBytes measures what a sealed day file of a 15 s
// series costs (bytes a sample, apparent) with the chosen value type and
// with float64, for the shapes the exceptions rule is about: measured, not
// assumed (docs/format/series.md "Value types").
func BenchmarkSealedValueBytes(b *testing.B) {
	const n = 5760
	r := rand.New(rand.NewPCG(5, 5))
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = day0 + int64(i)*15000 + r.Int64N(51) - 25
	}
	counter := make([]float64, n)
	gauge := make([]float64, n)
	for i := range counter {
		if i > 0 {
			counter[i] = counter[i-1] + float64(r.IntN(40))
		}
		gauge[i] = float64(r.IntN(500)) / 100
	}
	withStale := func(vs []float64, k int) []float64 {
		out := append([]float64(nil), vs...)
		for j := 1; j <= k; j++ {
			out[j*n/(k+1)] = staleNaN
		}
		return out
	}
	shapes := []struct {
		name string
		vs   []float64
	}{
		{"counter", counter}, {"counter+1stale", withStale(counter, 1)}, {"counter+100stale", withStale(counter, 100)},
		{"gauge2dp", gauge}, {"gauge2dp+1stale", withStale(gauge, 1)},
	}
	dir := b.TempDir()
	for _, sh := range shapes {
		ss := make([]Sample, n)
		for i := range ss {
			ss[i] = Sample{T: ts[i], V: sh.vs[i]}
		}
		for _, layout := range []string{"chosen", "float64"} {
			b.Run(sh.name+"/"+layout, func(b *testing.B) {
				p := filepath.Join(dir, "f.acta")
				var size int64
				for b.Loop() {
					var bs []*acta.Batch
					if layout == "chosen" {
						bs, _ = sealedFloatBatches(ss, 65536)
					} else {
						fb, _ := floats.batch(ss, true)
						fb.Schema = floatSchema
						bs = []*acta.Batch{fb}
					}
					os.Remove(p)
					res, err := rotation.WriteTemp(nil, p, floatSchema, bs, rotation.CompactOptions{NoVerify: true})
					if err != nil {
						b.Fatal(err)
					}
					_ = res
					fi, _ := os.Stat(p)
					size = fi.Size()
				}
				b.ReportMetric(float64(size)/n, "bytes/sample")
			})
		}
	}
}
