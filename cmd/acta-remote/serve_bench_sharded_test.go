package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// BenchmarkServeRemoteWriteSharded is the ingest shape of make bench
// (cmd/acta-bench) over Remote-Write 1.0: 10,000 node-exporter-like series
// scraped every 15 s, split over 2 senders the way Prometheus's queue
// shards split them (a series always goes to the same sender, so each
// series' samples arrive in order), 2,000 samples a request, one sample a
// series entry; the full HTTP stack over loopback against the real store
// with the default WAL policy (fsync before acknowledging). b.N is the
// number of requests; bodies are encoded before the timer starts. Run it
// with a fixed count, e.g.
// go test -run '^$' -bench ServeRemoteWriteSharded -benchtime 1000x ./cmd/acta-remote
// With ACTA_BENCH_CPUPROFILE=FILE it writes a CPU profile of the timed
// part alone (go test's -cpuprofile also holds the encoding of the bodies).
func BenchmarkServeRemoteWriteSharded(b *testing.B) {
	const (
		series  = 10_000
		senders = 2
		batch   = 2_000
	)
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	srv := startRouter(b, cfg)
	defer srv.stop()

	pbl := make([][]prompb.Label, series)
	for i := range pbl {
		ls := labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%100),
			"cpu", fmt.Sprint(i%8), "instance", fmt.Sprintf("10.0.%d.%d:9100", i/800, (i/100)%8),
			"job", "node", "mode", []string{"idle", "user", "system", "iowait"}[i%4])
		pbl[i] = prompb.FromLabels(ls, nil)
	}
	// Sender s owns the series i with i%senders == s and sends their
	// samples scrape by scrape, batch at a time.
	own := series / senders
	perSender := b.N / senders
	bodies := make([][][]byte, senders)
	var raw int
	for s := range senders {
		bodies[s] = make([][]byte, perSender)
		for r := range perSender {
			tss := make([]prompb.TimeSeries, batch)
			for j := range batch {
				e := r*batch + j
				k, i := e/own, (e%own)*senders+s
				tss[j] = prompb.TimeSeries{Labels: pbl[i], Samples: []prompb.Sample{{
					Timestamp: 1_750_000_000_000 + int64(k)*15_000,
					Value:     float64(i%1000)*1.5 + float64(k)*float64(i%7),
				}}}
			}
			bodies[s][r] = testkit.RW1(tss...)
			raw += len(bodies[s][r])
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}

	b.ReportAllocs()
	b.SetBytes(int64(raw / max(1, senders*perSender)))
	if path := os.Getenv("ACTA_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := processCPU(b)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for _, body := range bodies[s] {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", bytes.NewReader(body))
				req.Header.Set("Content-Type", testkit.ContentTypeRW1)
				req.Header.Set("Content-Encoding", "snappy")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	pprof.StopCPUProfile()
	n := float64(senders * perSender * batch)
	b.ReportMetric(n/elapsed.Seconds(), "samples/s")
	// CPU time of the whole process (server and the in-process senders)
	// per sample: steadier than samples/s on a machine shared with other
	// work.
	b.ReportMetric(float64(processCPU(b)-cpu0)/n, "cpu-ns/sample")
}

// processCPU is the process's user and system CPU time so far, ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
