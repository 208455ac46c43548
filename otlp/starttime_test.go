package otlp

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// startsOf returns, by series, the start timestamps stored with the floats
// and histograms of every series.
func startsOf(t *testing.T, st *actastore.Store) map[string][]actastore.StartTime {
	t.Helper()
	out := map[string][]actastore.StartTime{}
	set := st.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	defer set.Close()
	for set.Next() {
		fs, hs := set.At().(actastore.StartTimeSeries).StartTimes()
		if all := append(slices.Clone(fs), hs...); len(all) > 0 {
			out[set.At().Labels().String()] = all
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// OTLP start_time_unix_nano (ns, truncated to ms as Prometheus's translator
// converts it) is stored with every sample of its data point — a sum, each
// series of a histogram, a native histogram — surviving a flush and a
// restart; one at or after its point's time is dropped and the sample kept.
func TestStartTimesOTLP(t *testing.T) {
	dir := t.TempDir()
	st, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url := startHTTP(t, DefaultConfig(), st)
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	addSum(sm, "requests", "", true, pmetric.AggregationTemporalityCumulative, t0ns, 7, nil) // start 60 s before
	hdp := addHistogram(sm, "latency", "s", t0ns, []float64{1}, []uint64{2, 1}, nil, nil)
	hdp.SetStartTimestamp(pcommon.Timestamp(t0ns - 30_000_999_999))
	addExpHistogram(sm, "native", pmetric.AggregationTemporalityCumulative, t0ns)
	e := sm.Metrics().At(sm.Metrics().Len() - 1).ExponentialHistogram().DataPoints().At(0)
	e.SetStartTimestamp(pcommon.Timestamp(t0ns - 5e9))
	addGauge(sm, "temperature", "", t0ns, 21, nil) // no start time
	bad := addGauge(sm, "late", "", t0ns, 1, nil)
	bad.SetStartTimestamp(pcommon.Timestamp(t0ns + 1e9)) // after its point
	a := post(t, url+"/v1/metrics", contentTypeProtobuf, "", bytes.NewReader(protoBody(t, md)))
	if a.status != http.StatusOK || decodeResponse(t, a).PartialSuccess().RejectedDataPoints() != 0 {
		t.Fatalf("status %d body %q", a.status, a.body)
	}
	sumSt := actastore.StartTime{T: t0ms, ST: (t0ns - 60_000_000_000) / 1_000_000}
	histSt := actastore.StartTime{T: t0ms, ST: (t0ns - 30_000_999_999) / 1_000_000}
	want := map[string][]actastore.StartTime{
		`{__name__="requests_total"}`:                    {sumSt},
		`{__name__="latency_seconds_count"}`:             {histSt},
		`{__name__="latency_seconds_bucket", le="1"}`:    {histSt},
		`{__name__="latency_seconds_bucket", le="+Inf"}`: {histSt},
		`{__name__="native_seconds"}`:                    {{T: t0ms, ST: (t0ns - 5_000_000_000) / 1_000_000}},
	}
	check := func(what string) {
		t.Helper()
		got := startsOf(t, st)
		if len(got) != len(want) {
			t.Fatalf("%s: start timestamps of %d series %v, want %d %v", what, len(got), got, len(want), want)
		}
		for k, w := range want {
			if !slices.Equal(got[k], w) {
				t.Fatalf("%s: %s: %v, want %v", what, k, got[k], w)
			}
		}
		if n := len(readAll(t, st, labels.MustNewMatcher(labels.MatchEqual, "__name__", "late"))); n != 1 {
			t.Fatalf("%s: the point with a late start time was not kept (%d series)", what, n)
		}
	}
	check("head")
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = actastore.Open(dir, actastore.Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("reopened")
}
