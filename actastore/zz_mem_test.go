package actastore

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"
)

func TestZZMemProfile(t *testing.T) {
	out := os.Getenv("ACTA_MEMPROF")
	if out == "" {
		t.Skip()
	}
	const n = 200_000
	ls := benchLabels(n)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	s := openT(t, t.TempDir(), Options{MaxHeadAge: time.Hour, BlockRows: 4096})
	for step := 0; step < 10; step++ {
		for lo := 0; lo < n; lo += 2000 {
			batch := make([]SeriesSamples, 0, 2000)
			for i := lo; i < lo+2000; i++ {
				batch = append(batch, SeriesSamples{Labels: ls[i], Samples: []Sample{{T: 1_700_000_000_000 + int64(step)*15000, V: realisticValue(i, step)}}})
			}
			mustAppend(t, s, batch)
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	t.Logf("heap per series: %.0f B", float64(m1.HeapAlloc-m0.HeapAlloc)/n)
	f, _ := os.Create(out)
	pprof.WriteHeapProfile(f)
	f.Close()
	runtime.KeepAlive(ls)
	s.abandon()
}
