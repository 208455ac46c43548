package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// TestObjectStoreFigures measures the object-storage tier
// (docs/object-storage.md, "Figures"): upload throughput, remote-read
// latency of one series × 1 h and 1,000 series × 1 h from local files and
// from the bucket (the writer with its local copies gone; a query
// instance, cold and warm), and the bytes fetched per query against the
// size of the files holding the hour. Run it on purpose:
//
//	ACTA_E2E_FIGURES=1 go test -count=1 -run TestObjectStoreFigures -v ./e2e
func TestObjectStoreFigures(t *testing.T) {
	if os.Getenv("ACTA_E2E_FIGURES") == "" {
		t.Skip("figures: set ACTA_E2E_FIGURES=1")
	}
	tmp := t.TempDir()
	bin := buildActaRemote(t, tmp, false)
	w := startWeed(t, objBucket)
	hour := int64(time.Hour / time.Millisecond)
	h := time.Now().Truncate(time.Hour).UnixMilli() - hour
	// Tier merges off: the test counts hourly files (merges, which join
	// them before upload, are tested in actastore against SeaweedFS).
	rot := "  period: 1h\n  compaction:\n    tiers: []"
	const nSeries, hours = 1000, 6
	writer := newNode(t, bin, "writer", w, "fig", "    local_retention: 1000d\n    upload_concurrency: 8", rot)
	writer.start(t)
	data := backfill("fig", nSeries, h-hours*hour, h)
	began := time.Now()
	remoteWrite(t, writer.base(), data)
	t.Logf("ingest: %d series x %d h (%d samples) in %s", nSeries, hours, nSeries*hours*240, time.Since(began).Round(time.Millisecond))
	// Upload throughput: from the first upload to the last.
	var first time.Time
	for writer.metric(t, "acta_tier_pending_files") > 0 || writer.metric(t, "acta_tier_uploads_total", `result="ok"`) < nSeries*hours {
		if first.IsZero() && writer.metric(t, "acta_bucket_requests_total", `op="put"`) > 0 {
			first = time.Now()
		}
		if time.Since(began) > 10*time.Minute {
			t.Fatal("uploads did not finish in 10 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	upTook := time.Since(first)
	upBytes := writer.metric(t, "acta_tier_uploaded_bytes_total")
	files := writer.metric(t, "acta_tier_uploads_total", `result="ok"`)
	t.Logf("upload: %.0f files, %.1f MiB in %s: %.0f files/s, %.2f MiB/s (PUT, HEAD, GET read back each; 8 at a time)",
		files, upBytes/(1<<20), upTook.Round(time.Millisecond), files/upTook.Seconds(), upBytes/(1<<20)/upTook.Seconds())

	// The hour measured, h-3h .. h-2h: one file per series.
	from, to := h-3*hour, h-2*hour-1
	hourBytes := int64(0)
	for k, sz := range w.objects(t, objBucket, "e2e/fig/series/") {
		if strings.Contains(k, fmt.Sprintf("-%d-", from)) {
			hourBytes += sz
		}
	}
	one := []prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "fig"}, {Type: prompb.LabelMatcher_EQ, Name: "instance", Value: "host-500"}}
	all := []prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "fig"}}
	type figure struct {
		name                   string
		oneMs, allMs           float64 // medians
		allFirstMs             float64 // the first 1000 x 1h query
		oneFetched, allFetched float64 // block bytes, first query
		discovery              float64 // discovery bytes of the first 1000 x 1h query
	}
	measure := func(name string, n *actaNode) figure {
		t.Helper()
		f := figure{name: name}
		run := func(ms []prompb.LabelMatcher, reps, wantSeries int) (float64, float64, float64, float64) {
			var lat []float64
			var fetched, disc float64
			for i := 0; i < reps; i++ {
				before := n.metric(t, "acta_tier_query_fetched_bytes_sum")
				discBefore := n.metric(t, "acta_bucket_read_bytes_total", `purpose="discovery"`)
				t0 := time.Now()
				got, err := remoteReadSamples(context.Background(), n.base(), from, to, ms...)
				lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
				if err != nil || len(got) != wantSeries {
					t.Fatalf("%s: %d series, %v", name, len(got), err)
				}
				for k, g := range got {
					if d := diffSent(sent{k: samplesBetween(data[k], from, to)}, map[string]*prompb.TimeSeries{k: g}); d != "" {
						t.Fatalf("%s: %s", name, d)
					}
				}
				if i == 0 {
					fetched = n.metric(t, "acta_tier_query_fetched_bytes_sum") - before
					disc = n.metric(t, "acta_bucket_read_bytes_total", `purpose="discovery"`) - discBefore
				}
			}
			firstMs := lat[0]
			slices.Sort(lat)
			return lat[len(lat)/2], firstMs, fetched, disc
		}
		f.allMs, f.allFirstMs, f.allFetched, f.discovery = run(all, 5, nSeries)
		f.oneMs, _, f.oneFetched, _ = run(one, 21, 1)
		return f
	}
	var figs []figure
	figs = append(figs, measure("writer, local files", writer))
	// Local copies go: the same hour from the bucket.
	writer.writeConfig(t, nodeConfig(w, writer.addr, writer.dir, "fig", "    local_retention: 0s", rot))
	if err := writer.p.stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatal(err)
	}
	writer.start(t)
	writer.waitUploaded(t, nSeries*hours, 5*time.Minute)
	figs = append(figs, measure("writer, bucket (block indexes cached at upload)", writer))
	query := newNode(t, bin, "query", w, "", "    query:\n      refresh_interval: 1m", rot)
	query.start(t)
	figs = append(figs, measure("query instance, bucket (block indexes not cached)", query))
	figs = append(figs, measure("query instance, bucket, again", query))
	t.Logf("one series-hour file is %.0f bytes on average; the hour of all %d series is %d bytes in the bucket", float64(hourBytes)/nSeries, nSeries, hourBytes)
	t.Logf("| read from | 1 x 1h p50 | 1000 x 1h p50 | 1000 x 1h first | blocks fetched 1 x 1h | blocks fetched 1000 x 1h | discovery 1000 x 1h |")
	for _, f := range figs {
		t.Logf("| %s | %.2f ms | %.0f ms | %.0f ms | %.0f B | %.0f B (%.2fx the files) | %.0f B |", f.name, f.oneMs, f.allMs, f.allFirstMs,
			f.oneFetched, f.allFetched, f.allFetched/math.Max(1, float64(hourBytes)), f.discovery)
	}
	for _, n := range []*actaNode{writer, query} {
		if err := n.p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s: %v", n.name, err)
		}
	}
}

func samplesBetween(ts *prompb.TimeSeries, from, to int64) *prompb.TimeSeries {
	out := &prompb.TimeSeries{Labels: ts.Labels}
	for _, s := range ts.Samples {
		if s.Timestamp >= from && s.Timestamp <= to {
			out.Samples = append(out.Samples, s)
		}
	}
	return out
}
