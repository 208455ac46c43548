package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPrometheusHistogramQuantileThroughRemoteRead: Prometheus #1 scrapes
// its own native histograms (prometheus_http_request_duration_seconds with
// scrape_native_histograms) and remote-writes them with both protocols
// (send_native_histograms); Prometheus #2 reads them back through
// remote_read. Every native histogram series must come back complete and
// equal to #1's own, and histogram_quantile over them must give #1's answer,
// float bits equal, for each protocol's copy.
func TestPrometheusHistogramQuantileThroughRemoteRead(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus end-to-end test; not run with -short")
	}
	r := startRig(t, "prometheus-writer-native-histograms.yml")
	r.hold(t, r.start.Add(25*time.Second))
	end := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	waitSent(t, r.prom1.base, end, 90*time.Second)

	ctx := context.Background()
	raw, err := r.prom1.query(ctx, selector()(`__name__="prometheus_http_request_duration_seconds"`)+r.rawRange(end), end)
	if err != nil {
		t.Fatal(err)
	}
	_, hists := splitHistogramSeries(raw)
	if len(hists) == 0 {
		t.Fatal("prometheus#1 has no native prometheus_http_request_duration_seconds: the test would prove nothing")
	}
	quantile := func(sel func(...string) string) string {
		return `histogram_quantile(0.9, sum by (handler) (rate(` + sel(`__name__="prometheus_http_request_duration_seconds"`) + `[10s])))`
	}
	want, err := r.prom1.queryRange(ctx, quantile(selector()), r.start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if countSamples(want) == 0 {
		t.Fatal("prometheus#1's histogram_quantile is empty")
	}
	t.Logf("prometheus#1: %d native histogram series, histogram_quantile gives %d series, %d points", len(hists), len(want), countSamples(want))

	compareEventually(t, 60*time.Second, r.start, end, func() []string {
		var problems []string
		for _, q := range rwQueues {
			sel := selector(`rw="` + q.rw + `"`)
			got, err := r.prom2.query(ctx, sel(`__name__="prometheus_http_request_duration_seconds"`)+r.rawRange(end), end)
			if err != nil {
				problems = append(problems, fmt.Sprintf("rw=%s: %v", q.rw, err))
				continue
			}
			_, gotHists := splitHistogramSeries(got)
			for _, d := range diffSeries(hists, gotHists, "rw", q.rw, 5) {
				problems = append(problems, fmt.Sprintf("rw=%s histogram series: %s", q.rw, d))
			}
			gotQ, err := r.prom2.queryRange(ctx, quantile(sel), r.start, end, time.Second)
			if err != nil {
				problems = append(problems, fmt.Sprintf("rw=%s quantile: %v", q.rw, err))
				continue
			}
			for _, d := range diffSeries(want, gotQ, "", "", 5) {
				problems = append(problems, fmt.Sprintf("rw=%s histogram_quantile: %s", q.rw, d))
			}
		}
		return problems
	})
	checkNoFailedSends(t, r.prom1.base)
	for _, q := range rwQueues {
		failed, _ := scrapeMetric(ctx, r.prom1.base, "prometheus_remote_storage_histograms_failed_total", `remote_name="`+q.name+`"`)
		sent, _ := scrapeMetric(ctx, r.prom1.base, "prometheus_remote_storage_histograms_total", `remote_name="`+q.name+`"`)
		t.Logf("%s: histograms sent %v, failed %v", q.name, sent, failed)
		for _, f := range failed {
			if f != 0 {
				t.Errorf("%s: %v histograms failed to send", q.name, f)
			}
		}
	}
	logBackendCounters(t, "http://"+r.be.addr)
	r.stopWriterAndBackend(t)
	checkLog(t, r.be.logPath)
	if r.be.validate != nil {
		r.be.validate(t)
	}
}
