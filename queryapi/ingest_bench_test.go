package queryapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// BenchmarkAppendUnderQueries measures what heavy PromQL does to
// ingestion: the latency of the store's Append of 1,000-series batches (one
// sample each, as a Prometheus remote-write shard sends, fsynced: the
// default wal_sync always) every 10 ms, first alone, then while `queriers`
// clients run rate(x[5m]) over 1,000 series × 12 h at a 60 s step through
// the HTTP API back to back (query.max_concurrent 2, so two run at once and
// the rest wait). It reports Append p50 and p99 of both phases and the
// queries completed; the difference is the price of sharing 2 cores with
// the queries.
//
//	go test -run '^$' -bench AppendUnderQueries -benchtime 1x ./queryapi
func BenchmarkAppendUnderQueries(b *testing.B) {
	st, _, end := benchData(b, 1000)
	o := testOptions()
	o.MaxConcurrent, o.MaxQueueWait = 2, time.Minute
	srv, _ := serve(b, st, o)
	batch := make([]actastore.SeriesSamples, 1000)
	lsets := make([]actastore.SeriesSamples, 0, 1000)
	ss := st.Select(context.Background(), end-fixStep*2, end, labelsMatcher("__name__", "bench_requests_total"))
	for ss.Next() {
		lsets = append(lsets, actastore.SeriesSamples{Labels: ss.At().Labels()})
	}
	ss.Close()
	if len(lsets) != 1000 {
		b.Fatalf("%d series", len(lsets))
	}
	next := end
	appendFor := func(d time.Duration) []time.Duration {
		var lat []time.Duration
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		stop := time.Now().Add(d)
		for time.Now().Before(stop) {
			<-tick.C
			next += 1000
			for i := range batch {
				batch[i] = actastore.SeriesSamples{Labels: lsets[i].Labels, Samples: []actastore.Sample{{T: next, V: float64(next)}}}
			}
			t0 := time.Now()
			res, err := st.Append(context.Background(), batch)
			lat = append(lat, time.Since(t0))
			if err != nil || res.SamplesWritten != len(batch) {
				b.Fatalf("append: %v, %+v", err, res)
			}
		}
		return lat
	}
	pct := func(lat []time.Duration, q float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	for b.Loop() {
		alone := appendFor(5 * time.Second)

		var done atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		const queriers = 4
		q := url.Values{"query": {`rate(bench_requests_total[5m])`}, "start": {"1767225600"}, "end": {msString(end)}, "step": {"60"}}
		for range queriers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/query_range?"+q.Encode(), nil)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						continue
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						done.Add(1)
					}
				}
			}()
		}
		time.Sleep(time.Second) // the queries under way
		loaded := appendFor(10 * time.Second)
		cancel()
		wg.Wait()
		b.ReportMetric(pct(alone, 0.5), "alone-p50-ms")
		b.ReportMetric(pct(alone, 0.99), "alone-p99-ms")
		b.ReportMetric(pct(loaded, 0.5), "queries-p50-ms")
		b.ReportMetric(pct(loaded, 0.99), "queries-p99-ms")
		b.ReportMetric(float64(done.Load()), "queries-done")
	}
}

func msString(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

func labelsMatcher(name, value string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, name, value)
}
