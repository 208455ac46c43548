package remotewrite

import (
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// extrasAppender is memAppender, named for the tests of histograms,
// exemplars and metadata.
type extrasAppender struct{ memAppender }

// sameHist compares two samples through their record encoding, which holds
// every field with float bits.
func sameHist(t *testing.T, what string, want, got histfile.Sample) {
	t.Helper()
	if string(histfile.AppendRecord(nil, want)) != string(histfile.AppendRecord(nil, got)) {
		t.Fatalf("%s: got %v %v, want %v %v", what, got.H, got.FH, want.H, want.FH)
	}
}

func pbHist(s histfile.Sample) prompb.Histogram {
	if s.FH != nil {
		return prompb.FromFloatHistogram(s.T, s.FH)
	}
	return prompb.FromIntHistogram(s.T, s.H)
}

func v2Hist(s histfile.Sample) writev2.Histogram {
	if s.FH != nil {
		return writev2.FromFloatHistogram(0, s.T, s.FH)
	}
	return writev2.FromIntHistogram(0, s.T, s.H)
}

// TestHistogramsRoundTrip sends every histogram case with an exemplar over
// 1.0 and 2.0 and checks the store got them bit-exact, plus the metadata.
func TestHistogramsRoundTrip(t *testing.T) {
	cases := histtest.Cases(1_700_000_000_000)
	exValue := math.Float64frombits(0x7ff0000000000a01) // a NaN payload must survive
	for _, v2 := range []bool{false, true} {
		app := &extrasAppender{}
		srv := newServer(t, app)
		var body []byte
		if v2 {
			st := writev2.NewSymbolTable()
			req := &writev2.Request{}
			for _, c := range cases {
				ts := writev2.TimeSeries{LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize(c.Name), st.Symbolize("job"), st.Symbolize("j")}}
				for _, s := range c.Samples {
					ts.Histograms = append(ts.Histograms, v2Hist(s))
				}
				ts.Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{st.Symbolize("trace_id"), st.Symbolize("abc")}, Value: exValue, Timestamp: c.Samples[0].T}}
				ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM, HelpRef: st.Symbolize("help " + c.Name), UnitRef: st.Symbolize("seconds")}
				req.Timeseries = append(req.Timeseries, ts)
			}
			req.Symbols = st.Symbols()
			body = testkit.RW2(req)
		} else {
			var tss []prompb.TimeSeries
			var md []prompb.MetricMetadata
			for _, c := range cases {
				ts := prompb.TimeSeries{Labels: testkit.Labels("__name__", c.Name, "job", "j")}
				for _, s := range c.Samples {
					ts.Histograms = append(ts.Histograms, pbHist(s))
				}
				ts.Exemplars = []prompb.Exemplar{{Labels: testkit.Labels("trace_id", "abc"), Value: exValue, Timestamp: c.Samples[0].T}}
				tss = append(tss, ts)
				md = append(md, prompb.MetricMetadata{Type: prompb.MetricMetadata_HISTOGRAM, MetricFamilyName: c.Name, Help: "help " + c.Name, Unit: "seconds"})
			}
			body = testkit.Encode(&prompb.WriteRequest{Timeseries: tss, Metadata: md})
		}
		ct := ctV1
		if v2 {
			ct = ctV2
		}
		a := post(t, srv.URL, ct, "snappy", body)
		if a.code != http.StatusNoContent {
			t.Fatalf("v2=%v: %d %s", v2, a.code, a.body)
		}
		total := 0
		for _, c := range cases {
			total += len(c.Samples)
		}
		if v2 {
			if h, e := a.header.Get(headerHistogramsWritten), a.header.Get(headerExemplarsWritten); h != strconv.Itoa(total) || e != strconv.Itoa(len(cases)) {
				t.Errorf("headers: histograms %q exemplars %q, want %d and %d", h, e, total, len(cases))
			}
		}
		if len(app.extras) != len(cases) || len(app.series) != 0 {
			t.Fatalf("v2=%v: %d extras series, %d float series", v2, len(app.extras), len(app.series))
		}
		for i, c := range cases {
			got := app.extras[i]
			if got.Labels.Get("__name__") != c.Name || len(got.Histograms) != len(c.Samples) {
				t.Fatalf("v2=%v %s: %v with %d histograms", v2, c.Name, got.Labels, len(got.Histograms))
			}
			for j := range c.Samples {
				sameHist(t, c.Name, c.Samples[j], got.Histograms[j])
			}
			if len(got.Exemplars) != 1 || math.Float64bits(got.Exemplars[0].Value) != math.Float64bits(exValue) ||
				got.Exemplars[0].T != c.Samples[0].T || got.Exemplars[0].Labels.Get("trace_id") != "abc" {
				t.Fatalf("%s: exemplars %+v", c.Name, got.Exemplars)
			}
			md := app.meta[i]
			if md.Name != c.Name || md.Type != model.MetricTypeHistogram || md.Help != "help "+c.Name || md.Unit != "seconds" {
				t.Fatalf("metadata %+v", md)
			}
		}
	}
}
