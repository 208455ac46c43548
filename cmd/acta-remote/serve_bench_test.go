package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// BenchmarkServeRemoteWrite replays Prometheus-shaped remote-write requests
// (2000 series, one sample each, as a default queue shard sends them) at the
// full HTTP stack over loopback, from 4 concurrent senders, against the real
// store with the default WAL policy (fsync before acknowledging). It reports
// samples/s and the p50/p99 request latency. Run it with a fixed count, e.g.
// go test -run '^$' -bench ServeRemoteWrite -benchtime 200x ./cmd/acta-remote
func BenchmarkServeRemoteWrite(b *testing.B) {
	for _, v := range []string{"1.0", "2.0"} {
		b.Run("rw"+v, func(b *testing.B) { benchWrite(b, v == "2.0") })
	}
}

const (
	benchSeries  = 2000
	benchSenders = 4
)

func benchWrite(b *testing.B, v2 bool) {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	srv := startRouter(b, cfg)
	defer srv.stop()

	sets := make([]labels.Labels, benchSeries)
	for i := range sets {
		sets[i] = labels.FromStrings("__name__", fmt.Sprintf("bench_metric_%d", i%50), "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250), "job", "node")
	}
	// Each request is one scrape interval later, so every sample is new.
	bodies := make([][]byte, b.N)
	var raw int
	for n := range bodies {
		bodies[n] = benchBody(sets, int64(1_750_000_000_000+n*15000), float64(n), v2)
		raw += len(bodies[n])
	}
	ct := testkit.ContentTypeRW1
	if v2 {
		ct = testkit.ContentTypeRW2
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchSenders}}
	lat := make([]time.Duration, b.N)
	next := make(chan int, b.N)
	for n := range b.N {
		next <- n
	}
	close(next)

	b.ReportAllocs()
	b.SetBytes(int64(raw / max(1, b.N)))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range benchSenders {
		wg.Go(func() {
			for n := range next {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", bytes.NewReader(bodies[n]))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("Content-Encoding", "snappy")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[n] = time.Since(t0)
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

	slices.Sort(lat)
	b.ReportMetric(float64(b.N*benchSeries)/elapsed.Seconds(), "samples/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

func benchBody(sets []labels.Labels, ts int64, v float64, v2 bool) []byte {
	if v2 {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{Timeseries: make([]writev2.TimeSeries, len(sets))}
		for i, ls := range sets {
			req.Timeseries[i] = writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil),
				Samples: []writev2.Sample{{Timestamp: ts, Value: v + float64(i)}}}
		}
		req.Symbols = st.Symbols()
		return testkit.RW2(req)
	}
	tss := make([]prompb.TimeSeries, len(sets))
	for i, ls := range sets {
		tss[i] = prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil), Samples: []prompb.Sample{{Timestamp: ts, Value: v + float64(i)}}}
	}
	return testkit.RW1(tss...)
}
