package remotewrite

import (
	"context"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// readStarts returns the start timestamps stored with the floats and the
// histograms of the series named name.
func readStarts(t *testing.T, st *actastore.Store, name string) (fs, hs []actastore.StartTime) {
	t.Helper()
	ss := st.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	for ss.Next() {
		f, h := ss.At().(actastore.StartTimeSeries).StartTimes()
		fs, hs = append(fs, f...), append(hs, h...)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return fs, hs
}

// Remote-Write 2.0 start timestamps (Sample.start_timestamp = 3,
// Histogram.start_timestamp = 17) are stored with their samples; one
// Prometheus's appender ignores is dropped and its sample kept; a request
// without them stores none.
func TestStartTimestampsRW2(t *testing.T) {
	st := openStore(t, actastore.Options{})
	srv := newServer(t, st)
	req := v2Req([]string{"__name__", "c_total", "job", "a"}, []string{"__name__", "h", "job", "a"}, []string{"__name__", "plain", "job", "a"})
	req.Timeseries[0].Samples = []writev2.Sample{
		{Value: 5, Timestamp: 20_000, StartTimestamp: 10_000},
		{Value: 7, Timestamp: 35_000, StartTimestamp: 10_000},
		{Value: 1, Timestamp: 50_000, StartTimestamp: 45_000}, // a reset
		{Value: 2, Timestamp: 65_000, StartTimestamp: 70_000}, // after its sample: dropped, the sample kept
		{Value: 3, Timestamp: 80_000},                         // none
	}
	req.Timeseries[1].Samples = nil
	req.Timeseries[1].Histograms = []writev2.Histogram{
		{Count: &writev2.Histogram_CountInt{CountInt: 2}, Sum: 1.5, Schema: 0, ZeroThreshold: 0.001, ZeroCount: &writev2.Histogram_ZeroCountInt{ZeroCountInt: 2},
			Timestamp: 20_000, StartTimestamp: 5_000},
		{Count: &writev2.Histogram_CountFloat{CountFloat: 3}, Sum: 2.5, Schema: 0, ZeroThreshold: 0.001, ZeroCount: &writev2.Histogram_ZeroCountFloat{ZeroCountFloat: 3},
			Timestamp: 35_000, StartTimestamp: 6_000},
	}
	a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(req))
	if a.code != http.StatusNoContent || a.written != "6" {
		t.Fatalf("write: %d %q %s", a.code, a.written, a.body)
	}
	got := readBack(t, st, "c_total")[`{__name__="c_total", job="a"}`]
	if want := []actastore.Sample{{T: 20_000, V: 5}, {T: 35_000, V: 7}, {T: 50_000, V: 1}, {T: 65_000, V: 2}, {T: 80_000, V: 3}}; !slices.Equal(got, want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
	fs, hs := readStarts(t, st, "c_total")
	if want := []actastore.StartTime{{T: 20_000, ST: 10_000}, {T: 35_000, ST: 10_000}, {T: 50_000, ST: 45_000}}; !slices.Equal(fs, want) || hs != nil {
		t.Fatalf("counter start timestamps %v %v, want %v", fs, hs, want)
	}
	fs, hs = readStarts(t, st, "h")
	if want := []actastore.StartTime{{T: 20_000, ST: 5_000}, {T: 35_000, ST: 6_000}}; !slices.Equal(hs, want) || fs != nil {
		t.Fatalf("histogram start timestamps %v %v, want %v", fs, hs, want)
	}
	if fs, hs = readStarts(t, st, "plain"); fs != nil || hs != nil {
		t.Fatalf("plain series start timestamps %v %v", fs, hs)
	}
}
