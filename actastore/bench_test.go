package actastore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Benchmarks report what the store sells: samples/s appended, select
// latency, head bytes per series and allocated disk bytes per sample. Sizes
// are kept so each runs in seconds on a shared 2-core machine; run with
// -benchtime=Nx to bound the iterations.

func benchLabels(n int) []labels.Labels {
	ls := make([]labels.Labels, n)
	for i := range ls {
		ls[i] = labels.FromStrings("__name__", fmt.Sprintf("bench_metric_%d", i%50),
			"instance", fmt.Sprintf("10.0.%d.%d:9100", i/256%256, i%256), "job", "node", "shard", fmt.Sprint(i/65536))
	}
	return ls
}

// realisticValue: a counter-like or gauge-like series, as scraped.
func realisticValue(series, step int) float64 {
	if series%2 == 0 {
		return float64(series*1000 + step*7) // counter
	}
	return math.Round(50+20*math.Sin(float64(step)/40+float64(series))*100) / 100 // gauge, 2 decimals
}

// BenchmarkAppend: one op appends one sample to every series. "batch=all"
// sends them in one Append; "batch=100" sends Appends of 100 samples from 8
// concurrent appenders (remote-write-sized requests; group commit shares
// the fsyncs). WAL fsync per Append (SyncAlways), no flushes during the run.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		ls := benchLabels(n)
		for _, per := range []int{0, 100} {
			name := fmt.Sprintf("series=%dk/batch=all", n/1000)
			if per > 0 {
				name = fmt.Sprintf("series=%dk/batch=%d", n/1000, per)
			}
			b.Run(name, func(b *testing.B) {
				s := openT(b, b.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour})
				defer s.abandon()
				batch := make([]SeriesSamples, n)
				smps := make([]Sample, n)
				step := 0
				next := func() {
					for i := range batch {
						smps[i] = Sample{T: int64(step) * 15000, V: realisticValue(i, step)}
						batch[i] = SeriesSamples{Labels: ls[i], Samples: smps[i : i+1]}
					}
					step++
				}
				next()
				mustAppend(b, s, batch) // create the series outside the timing
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				for it := 0; it < b.N; it++ {
					next()
					if per == 0 {
						mustAppend(b, s, batch)
						continue
					}
					var wg sync.WaitGroup
					var pos atomic.Int64
					for g := 0; g < 8; g++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for {
								lo := int(pos.Add(int64(per))) - per
								if lo >= n {
									return
								}
								mustAppend(b, s, batch[lo:min(lo+per, n)])
							}
						}()
					}
					wg.Wait()
				}
				b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "samples/s")
			})
		}
	}
}

// BenchmarkFlush: one op flushes a head of 10k series × k samples into
// new blocks of their files (files created in a warm-up flush).
func BenchmarkFlush(b *testing.B) {
	const n = 10_000
	ls := benchLabels(n)
	for _, c := range []struct {
		k    int
		kept bool // a streamed read keeps every file's chunks first: flushes extend them
	}{{20, false}, {240, false}, {20, true}} {
		k := c.k
		name := fmt.Sprintf("series=10k/samples=%d", k)
		if c.kept {
			name += "/kept-chunks"
		}
		b.Run(name, func(b *testing.B) {
			s := openT(b, b.TempDir(), Options{BlockRows: 4096, MaxHeadAge: time.Hour, MaxOpenFiles: 256})
			defer s.abandon()
			step := 0
			load := func() {
				batch := make([]SeriesSamples, n)
				for i := range batch {
					smps := make([]Sample, k)
					for j := range smps {
						smps[j] = Sample{T: int64(step+j) * 15000, V: realisticValue(i, step+j)}
					}
					batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
				}
				step += k
				mustAppend(b, s, batch)
			}
			load()
			if err := s.FlushAll(); err != nil {
				b.Fatal(err)
			}
			if c.kept {
				ss := s.Select(WithXORChunks(ctx), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
				for ss.Next() {
				}
				ss.Close()
				if kept, _, _ := s.readers.chunkStats(); kept == 0 {
					b.Fatal("no chunks kept")
				}
			}
			b.ResetTimer()
			var d time.Duration
			for it := 0; it < b.N; it++ {
				b.StopTimer()
				load()
				b.StartTimer()
				t0 := time.Now()
				if err := s.FlushAll(); err != nil {
					b.Fatal(err)
				}
				d += time.Since(t0)
			}
			b.ReportMetric(float64(n*k*b.N)/d.Seconds(), "samples/s")
		})
	}
}

// BenchmarkSelect: one series of 15 s data, all in its file, selected over
// the last 1 h (240 samples) or 24 h (5760 samples).
func BenchmarkSelect(b *testing.B) {
	dir := b.TempDir()
	s := openT(b, dir, Options{BlockRows: 4096, MaxHeadAge: time.Hour})
	defer s.abandon()
	ls := benchLabels(100)
	const steps = 5760
	for i, l := range ls {
		smps := make([]Sample, steps)
		for j := range smps {
			smps[j] = Sample{T: int64(j) * 15000, V: realisticValue(i, j)}
		}
		mustAppend(b, s, []SeriesSamples{{Labels: l, Samples: smps}})
	}
	if err := s.FlushAll(); err != nil {
		b.Fatal(err)
	}
	one := labels.MustNewMatcher(labels.MatchEqual, "instance", ls[7].Get("instance"))
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
	for _, span := range []struct {
		name string
		ms   int64
		m    *labels.Matcher
	}{{"1h", 3600_000, one}, {"24h", 86400_000, one}, {"all-100-series-24h", 86400_000, all},
		// After a streamed read kept every file's XOR chunks (select_kept.go).
		{"kept/1h", 3600_000, one}, {"kept/24h", 86400_000, one}, {"kept/all-100-series-24h", 86400_000, all}} {
		m := span.m
		if span.name == "kept/1h" {
			ss := s.Select(WithXORChunks(ctx), math.MinInt64, math.MaxInt64, all)
			for ss.Next() {
			}
			if ss.Err() != nil {
				b.Fatal(ss.Err())
			}
		}
		b.Run(span.name, func(b *testing.B) {
			maxt := int64(steps-1) * 15000
			b.ReportAllocs()
			total := 0
			for it := 0; it < b.N; it++ {
				ss := s.Select(ctx, maxt-span.ms+1, maxt, m)
				for ss.Next() {
					itr := ss.At().Iterator()
					for itr.Next() {
						total++
					}
				}
				if ss.Err() != nil {
					b.Fatal(ss.Err())
				}
			}
			b.ReportMetric(float64(total)/float64(b.N), "samples/op")
		})
	}
}

// BenchmarkHeadMemory reports heap bytes per series: with one sample in the
// head, and idle after a flush (labels, index postings, series struct).
func BenchmarkHeadMemory(b *testing.B) {
	const n = 100_000
	for it := 0; it < b.N; it++ {
		ls := benchLabels(n)
		dir := b.TempDir()
		runtime.GC()
		var m0, m1, m2 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rss0 := rssBytes()
		s := openT(b, dir, Options{MaxHeadAge: time.Hour, MaxOpenFiles: 64})
		batch := make([]SeriesSamples, n)
		for i := range batch {
			batch[i] = SeriesSamples{Labels: ls[i], Samples: []Sample{{T: 1000, V: float64(i)}}}
		}
		mustAppend(b, s, batch)
		batch = nil
		runtime.GC()
		runtime.ReadMemStats(&m1)
		rss1 := rssBytes()
		if err := s.FlushAll(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m2)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heapB/series-1sample")
		if rss0 > 0 {
			// RSS includes the garbage the GC has not returned yet; heap is the
			// figure that scales, RSS the one the OS sees.
			b.ReportMetric(float64(rss1-rss0)/n, "rssB/series-1sample")
		}
		b.ReportMetric(float64(int64(m2.HeapAlloc)-int64(m0.HeapAlloc))/n, "heapB/series-idle")
		runtime.KeepAlive(ls)
		s.Close()
	}
}

// BenchmarkDiskBytesPerSample writes 24 h of 15 s data for 200 series and
// reports allocated bytes (du: st_blocks × 512) and apparent bytes per
// sample, for big blocks (4096 rows) and for the blocks a 5-minute head
// flush makes (20 rows), plus the WAL's bytes per sample.
func BenchmarkDiskBytesPerSample(b *testing.B) {
	const n, steps = 200, 5760
	ls := benchLabels(n)
	for _, rows := range []int{4096, 240, 80, 20} {
		b.Run(fmt.Sprintf("blockrows=%d", rows), func(b *testing.B) {
			for it := 0; it < b.N; it++ {
				dir := b.TempDir()
				s := openT(b, dir, Options{BlockRows: rows, MaxHeadAge: time.Hour, WALSegmentSize: 1 << 30})
				r := rand.New(rand.NewPCG(1, 1))
				_ = r
				for j0 := 0; j0 < steps; j0 += rows {
					batch := make([]SeriesSamples, n)
					for i := range batch {
						k := min(rows, steps-j0)
						smps := make([]Sample, k)
						for j := range smps {
							smps[j] = Sample{T: int64(j0+j) * 15000, V: realisticValue(i, j0+j)}
						}
						batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
					}
					mustAppend(b, s, batch)
					if j0 == 0 {
						walBytes := s.Stats().WALBytes
						b.ReportMetric(float64(walBytes)/float64(n*min(rows, steps)), "WAL-B/sample")
					}
					for _, ms := range s.reg.live() {
						if err := s.flushSeries(ms); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				alloc, apparent := duBytes(b, filepath.Join(dir, seriesDirName))
				b.ReportMetric(float64(alloc)/float64(n*steps), "du-B/sample")
				b.ReportMetric(float64(apparent)/float64(n*steps), "apparent-B/sample")
			}
		})
	}
}

// duBytes sums allocated (st_blocks × 512) and apparent sizes under dir.
func duBytes(b *testing.B, dir string) (alloc, apparent int64) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			alloc += st.Blocks * 512
		}
		return nil
	})
	return alloc, apparent
}

// BenchmarkReopen: 10k series with 240 samples each in their files and 20
// more in the WAL; one op is an Open after a crash (every file's tail is
// inspected, the WAL replayed and deduplicated against the files) or after a
// clean Close.
func BenchmarkReopen(b *testing.B) {
	const n = 10_000
	ls := benchLabels(n)
	for _, clean := range []bool{false, true} {
		b.Run(fmt.Sprintf("clean=%v", clean), func(b *testing.B) {
			dir := b.TempDir()
			s := openT(b, dir, Options{MaxHeadAge: time.Hour})
			put := func(from, k int) {
				batch := make([]SeriesSamples, n)
				for i := range batch {
					smps := make([]Sample, k)
					for j := range smps {
						smps[j] = Sample{T: int64(from+j) * 15000, V: realisticValue(i, from+j)}
					}
					batch[i] = SeriesSamples{Labels: ls[i], Samples: smps}
				}
				mustAppend(b, s, batch)
			}
			put(0, 240)
			if err := s.FlushAll(); err != nil {
				b.Fatal(err)
			}
			put(240, 20)
			if clean {
				s.Close()
			} else {
				s.abandon()
			}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				b.StopTimer()
				if !clean {
					os.Remove(filepath.Join(dir, cleanMarkerName))
				}
				b.StartTimer()
				s2, err := Open(dir, Options{MaxHeadAge: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if st := s2.Stats(); st.Series != n || (!clean && st.HeadSamples != n*20) {
					b.Fatalf("stats %+v", st)
				}
				if clean {
					s2.Close()
				} else {
					s2.abandon()
				}
				b.StartTimer()
			}
		})
	}
}

// rssBytes is the process's resident set size from /proc/self/statm, or 0.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(data), &size, &rss); err != nil {
		return 0
	}
	return rss * int64(os.Getpagesize())
}
