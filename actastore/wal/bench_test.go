package wal

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkAppendSync is one group commit of a Remote-Write request alone:
// a 40 KiB batch appended and synced, one at a time, on the file system of
// the test's temporary directory (set TMPDIR to measure a disk). It reports
// the mean, p50 and p99 latency of append+sync in µs; with preallocation the
// sync writes data and no file-system metadata (prealloc.go).
func BenchmarkAppendSync(b *testing.B) {
	for _, pre := range []bool{false, true} {
		b.Run(fmt.Sprint("preallocate=", pre), func(b *testing.B) { benchAppendSync(b, pre) })
	}
}

func benchAppendSync(b *testing.B, pre bool) {
	l, err := Open(b.TempDir(), Options{Preallocate: pre})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	p := make([]byte, 40<<10)
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		pos, err := l.Append(p)
		if err == nil {
			err = l.Sync(pos)
		}
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	slices.Sort(lat)
	b.ReportMetric(float64(sum.Microseconds())/float64(len(lat)), "µs/sync")
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs/sync")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs/sync")
	b.ReportMetric(0, "ns/op")
}
