package encoding

import (
	"encoding/binary"
	"math"
	"testing"
)

// BenchmarkEncodeBlock measures one flush-sized block (8192 samples) per
// policy, with allocations: a reused Encoder should allocate nothing per
// call beyond what zstd needs.
func BenchmarkEncodeBlock(b *testing.B) {
	sh := metricShapes()[1] // gauge2dec
	const n = 8192
	ts := make([]byte, 8*n)
	vs := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(ts[8*i:], uint64(sh.ts[i]))
		binary.LittleEndian.PutUint64(vs[8*i:], math.Float64bits(sh.vals[i]))
	}
	for _, mode := range benchModes {
		b.Run(mode.name, func(b *testing.B) {
			te, _ := NewEncoder(mode.opts)
			ve, _ := NewEncoder(mode.opts)
			b.SetBytes(16 * n)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := te.Encode(ClassSigned, 8, false, n, nil, Values{N: n, Width: 8, Fixed: ts}); err != nil {
					b.Fatal(err)
				}
				if _, err := ve.Encode(ClassFloat, 8, false, n, nil, Values{N: n, Width: 8, Fixed: vs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestEncoderReuseDoesNotAllocate(t *testing.T) {
	xs := make([]int64, 4096)
	for i := range xs {
		xs[i] = int64(i) * 15000
	}
	v := int64Vals(xs...)
	e, _ := NewEncoder(Options{Policy: PolicyAdaptive})
	e.Encode(ClassSigned, 8, false, len(xs), nil, v)
	allocs := testing.AllocsPerRun(20, func() {
		e.Encode(ClassSigned, 8, false, len(xs), nil, v)
	})
	if allocs > 0 {
		t.Fatalf("%.0f allocations per Encode on a warm Encoder", allocs)
	}
}
