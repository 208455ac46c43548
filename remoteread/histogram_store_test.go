package remoteread

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/otlp"
)

// otlpExpHistograms builds exponential histogram data points covering
// scale reduction (scales 9 and 12 become schema 8), the smallest schema,
// negative and zero buckets, gaps, a point without sum and a stale one.
func otlpExpHistograms() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	sm := rm.ScopeMetrics().AppendEmpty()
	type pt struct {
		scale      int32
		pos, neg   []uint64
		poff, noff int32
		zero       uint64
		sum        float64
		hasSum     bool
		stale      bool
	}
	series := map[string][]pt{
		"otlp_lat": {
			{scale: 0, pos: []uint64{1, 2}, zero: 1, sum: 4.5, hasSum: true},
			{scale: 0, pos: []uint64{2, 3, 0, 0, 0, 1}, zero: 2, sum: 9, hasSum: true},
			{scale: 0, pos: []uint64{1}, stale: true},
		},
		"otlp_fine": {
			{scale: 12, poff: -30, pos: []uint64{1, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}, neg: []uint64{5, 5}, noff: 7, sum: -3, hasSum: true},
			{scale: 9, poff: 1, pos: []uint64{1, 1, 1, 1}, zero: 3},
		},
		"otlp_coarse": {
			{scale: -4, poff: -2, pos: []uint64{7, 0, 1}, neg: []uint64{2}, noff: -1, sum: 1e6, hasSum: true},
		},
	}
	names := []string{"otlp_lat", "otlp_fine", "otlp_coarse"}
	for _, name := range names {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		eh := m.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i, p := range series[name] {
			dp := eh.DataPoints().AppendEmpty()
			dp.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(i)*15_000_000_000))
			dp.SetScale(p.scale)
			dp.Positive().SetOffset(p.poff)
			dp.Positive().BucketCounts().FromRaw(p.pos)
			dp.Negative().SetOffset(p.noff)
			dp.Negative().BucketCounts().FromRaw(p.neg)
			dp.SetZeroCount(p.zero)
			n := p.zero
			for _, c := range append(append([]uint64(nil), p.pos...), p.neg...) {
				n += c
			}
			dp.SetCount(n)
			if p.hasSum {
				dp.SetSum(p.sum)
			}
			if p.stale {
				dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			}
		}
	}
	return md
}

// TestHistogramsEndToEnd writes every histogram case through Remote-Write
// 1.0 and 2.0 and exponential histograms through OTLP into a real store,
// and reads them all back through both remote read response types, bit for
// bit (chunks: as chunkHint says).
func TestHistogramsEndToEnd(t *testing.T) {
	st := openStoreOpts(t, storeOptsSmallBlocks)
	writeURL, readURL := server(t, st, readLimits)
	cases := histtest.Cases(1_700_000_000_000)
	var want []*memHistSeries

	// Remote-Write 1.0.
	var tss []prompb.TimeSeries
	for _, c := range cases {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: c.Name}, {Name: "via", Value: "rw1"}}}
		for _, s := range c.Samples {
			if s.FH != nil {
				ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(s.T, s.FH))
			} else {
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(s.T, s.H))
			}
		}
		tss = append(tss, ts)
		want = append(want, &memHistSeries{lset: labels.FromStrings("__name__", c.Name, "via", "rw1"), hists: c.Samples})
	}
	b, err := (&prompb.WriteRequest{Timeseries: tss}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	postWrite(t, writeURL, "application/x-protobuf;proto=prometheus.WriteRequest", b)

	// Remote-Write 2.0.
	syms := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, c := range cases {
		ts := writev2.TimeSeries{LabelsRefs: []uint32{syms.Symbolize("__name__"), syms.Symbolize(c.Name), syms.Symbolize("via"), syms.Symbolize("rw2")}}
		for _, s := range c.Samples {
			if s.FH != nil {
				ts.Histograms = append(ts.Histograms, writev2.FromFloatHistogram(0, s.T, s.FH))
			} else {
				ts.Histograms = append(ts.Histograms, writev2.FromIntHistogram(0, s.T, s.H))
			}
		}
		req.Timeseries = append(req.Timeseries, ts)
		want = append(want, &memHistSeries{lset: labels.FromStrings("__name__", c.Name, "via", "rw2"), hists: c.Samples})
	}
	req.Symbols = syms.Symbols()
	b, err = req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	postWrite(t, writeURL, "application/x-protobuf;proto=io.prometheus.write.v2.Request", b)

	// OTLP: expected as our translator converts them (compared with
	// Prometheus's own conversion in package otlp).
	md := otlpExpHistograms()
	rcv, err := otlp.New(otlp.DefaultConfig(), st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	osrv := httptest.NewServer(rcv.Handler())
	defer osrv.Close()
	resp, err := http.Post(osrv.URL+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	er := pmetricotlp.NewExportResponse()
	if err := er.UnmarshalProto(rb); err != nil || resp.StatusCode != http.StatusOK || er.PartialSuccess().RejectedDataPoints() != 0 {
		t.Fatalf("OTLP: %d %v %q", resp.StatusCode, err, er.PartialSuccess().ErrorMessage())
	}
	for _, s := range otlp.NewTranslator(otlp.DefaultConfig()).Translate(md).Extras {
		want = append(want, &memHistSeries{lset: s.Labels, hists: append([]histfile.Sample(nil), s.Histograms...)})
	}
	if len(want) != 2*len(cases)+3 {
		t.Fatalf("%d series expected", len(want))
	}
	sort.Slice(want, func(i, j int) bool { return labels.Compare(want[i].lset, want[j].lset) < 0 })

	for _, streamed := range []bool{false, true} {
		got := readHistograms(t, readURL, streamed)
		checkHistRead(t, map[bool]string{false: "SAMPLES", true: "STREAMED_XOR_CHUNKS"}[streamed], got, want, streamed)
	}
}

// storeOptsSmallBlocks makes histograms cross head and flushed blocks.
var storeOptsSmallBlocks = actastore.Options{BlockRows: 4}
