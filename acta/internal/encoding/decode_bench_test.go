package encoding

import (
	"encoding/binary"
	"math"
	"testing"
)

// BenchmarkDecodeBlock decodes one 8192-sample block of jittered
// timestamps and a 2-decimal gauge per policy.
func BenchmarkDecodeBlock(b *testing.B) {
	sh := metricShapes()[1]
	const n = 8192
	ts := make([]byte, 8*n)
	vs := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(ts[8*i:], uint64(sh.ts[i]))
		binary.LittleEndian.PutUint64(vs[8*i:], math.Float64bits(sh.vals[i]))
	}
	for _, mode := range benchModes {
		b.Run(mode.name, func(b *testing.B) {
			e, _ := NewEncoder(mode.opts)
			tc, _ := e.Encode(ClassSigned, 8, false, n, nil, Values{N: n, Width: 8, Fixed: ts})
			tc = cloneColumn(tc)
			vc, _ := e.Encode(ClassFloat, 8, false, n, nil, Values{N: n, Width: 8, Fixed: vs})
			vc = cloneColumn(vc)
			b.SetBytes(16 * n)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, _, err := Decode(ClassSigned, 8, false, n, tc.Layout, 0, false, tc.Streams, nil); err != nil {
					b.Fatal(err)
				}
				if _, _, err := Decode(ClassFloat, 8, false, n, vc.Layout, 0, false, vc.Streams, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
