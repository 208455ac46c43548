package otlp

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/actastore"
)

// readAll selects every sample of the series matching ms.
func readAll(t *testing.T, st *actastore.Store, ms ...*labels.Matcher) []actastore.SeriesSamples {
	t.Helper()
	set := st.Select(context.Background(), math.MinInt64, math.MaxInt64, ms...)
	defer set.Close()
	var out []actastore.SeriesSamples
	for set.Next() {
		s := set.At()
		ss := actastore.SeriesSamples{Labels: s.Labels()}
		it := s.Iterator()
		for it.Next() {
			ts, v := it.At()
			ss.Samples = append(ss.Samples, actastore.Sample{T: ts, V: v})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, ss)
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRealStoreRoundTrip pushes OTLP over HTTP into the real store and
// reads the series back with Select, stale marker bits included.
func TestRealStoreRoundTrip(t *testing.T) {
	st, err := actastore.Open(t.TempDir(), actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	url := startHTTP(t, DefaultConfig(), st)

	md := sampleMetrics()
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	dp := addGauge(sm, "temperature", "Cel", t0ns+1e9, 0, nil)
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	addExpHistogram(sm, "native", pmetric.AggregationTemporalityCumulative, t0ns)

	a := post(t, url+"/v1/metrics", contentTypeProtobuf, "gzip", bytes.NewReader(gzipped(t, protoBody(t, md))))
	if a.status != http.StatusOK {
		t.Fatalf("status %d body %q", a.status, a.body)
	}
	if ps := decodeResponse(t, a).PartialSuccess(); ps.RejectedDataPoints() != 0 {
		t.Fatalf("rejected %d (%q), want 0", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	// The exponential histogram is a native histogram sample.
	set := st.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "native_seconds"))
	if !set.Next() {
		t.Fatalf("native histogram series not stored (%v)", set.Err())
	}
	hit := set.At().(actastore.HistogramSeries).HistogramIterator()
	if !hit.Next() || hit.At().T != t0ms || hit.At().H == nil || hit.At().H.Count != 3 || hit.At().H.Sum != 4.5 || hit.Next() {
		t.Fatalf("native histogram read back wrong")
	}
	set.Close()

	// Select returns series sorted by labels.
	got := readAll(t, st, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	diffLines(t, "read back", formatSeries(got), []string{
		`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="+Inf"} 1700000000123 6`,
		`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="1"} 1700000000123 1`,
		`{__name__="job_duration_seconds_bucket", instance="pod-1", job="shop/checkout", le="10"} 1700000000123 3`,
		`{__name__="job_duration_seconds_count", instance="pod-1", job="shop/checkout"} 1700000000123 6`,
		`{__name__="job_duration_seconds_sum", instance="pod-1", job="shop/checkout"} 1700000000123 40`,
		`{__name__="jobs_done_total", instance="pod-1", job="shop/checkout"} 1700000000123 12`,
		`{__name__="queue_depth", instance="pod-1", job="shop/checkout", queue="q1"} 1700000000123 3`,
		`{__name__="target_info", host_name="node-a", instance="pod-1", job="shop/checkout"} 1700000000123 1`,
		`{__name__="target_info", host_name="node-a", instance="pod-1", job="shop/checkout"} 1700000001123 1`,
		`{__name__="temperature_celsius", instance="pod-1", job="shop/checkout"} 1700000001123 stale`,
	})

	// A malformed request afterwards disturbs nothing stored.
	if a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader([]byte("\x0a\xff\xff"))); a.status != http.StatusBadRequest {
		t.Fatalf("malformed: status %d", a.status)
	}
	if n := len(readAll(t, st, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))); n != 10 {
		t.Fatalf("%d series after a malformed request, want 10 (9 float, 1 native histogram)", n)
	}
}

// TestRealStoreConcurrentHTTPAndGRPC sends from several goroutines over
// both transports at once (run with -race: pools and slots are shared) and
// checks every sample arrived.
func TestRealStoreConcurrentHTTPAndGRPC(t *testing.T) {
	st, err := actastore.Open(t.TempDir(), actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.MaxConcurrent = 3 // fewer slots than senders: some wait
	url := startHTTP(t, cfg, st)
	client := startGRPC(t, cfg, st)

	const senders, perSender = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				md := pmetric.NewMetrics()
				addGauge(newResource(md, map[string]any{"service.name": fmt.Sprint("s", s)}), "g", "", t0ns+uint64(i)*1e9, float64(i),
					map[string]any{"via": []string{"http", "grpc"}[s%2]})
				if s%2 == 0 {
					if a := post(t, url+"/v1/metrics", contentTypeProtobuf, "gzip", bytes.NewReader(gzipped(t, protoBody(t, md)))); a.status != 200 {
						errs <- fmt.Errorf("http status %d: %s", a.status, a.body)
					}
				} else if _, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := readAll(t, st, labels.MustNewMatcher(labels.MatchEqual, "__name__", "g"))
	if len(got) != senders {
		t.Fatalf("%d series, want %d", len(got), senders)
	}
	for _, s := range got {
		if len(s.Samples) != perSender {
			t.Errorf("%s: %d samples, want %d", s.Labels, len(s.Samples), perSender)
		}
		for i, smp := range s.Samples {
			if smp.T != t0ms+int64(i)*1000 || smp.V != float64(i) {
				t.Errorf("%s sample %d = %d %v", s.Labels, i, smp.T, smp.V)
			}
		}
	}
}
