package remotewrite

import (
	"log/slog"
	"testing"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// FuzzDecode feeds arbitrary protobuf bytes to both decoders. Whatever they
// accept must be a batch the store can take: every series valid, non-empty,
// and every sample accounted for as stored or rejected.
func FuzzDecode(f *testing.F) {
	add := func(b []byte, _ error) { f.Add(b, false); f.Add(b, true) }
	add((&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		series("__name__", "m", "job", "a"),
		{Labels: pbLabels("__name__", "h"), Histograms: []prompb.Histogram{{Timestamp: 1}}},
		series("b", "x", "a", "y"),
	}}).Marshal())
	req := v2Req([]string{"__name__", "m", "job", "a"}, []string{"job", "b"})
	req.Timeseries[0].Metadata = writev2.Metadata{HelpRef: 1, UnitRef: 2}
	req.Timeseries[1].Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{1, 2}, Value: 1}}
	add(req.Marshal())
	add([]byte{0x0a, 0x00}, nil)
	add([]byte{0x2a, 0x02, 0x0a, 0x01}, nil)

	h := New(&memAppender{}, testLimits, slog.New(slog.DiscardHandler), nil)
	f.Fuzz(func(t *testing.T, data []byte, v2 bool) {
		s := getScratch()
		defer putScratch(s)
		var err error
		if v2 {
			err = h.decodeV2(s, data)
		} else {
			err = h.decodeV1(s, data)
		}
		if err != nil {
			if apistatus.HTTP(apistatus.RemoteWrite, err)/100 != 4 {
				t.Fatalf("decode error %v maps to %d, want 4xx", err, apistatus.HTTP(apistatus.RemoteWrite, err))
			}
			return
		}
		s.finish()
		stored := 0
		for _, ss := range s.batch.Series {
			if len(ss.Samples) == 0 && len(ss.Histograms) == 0 && len(ss.Exemplars) == 0 {
				t.Fatalf("empty series %s in batch", ss.Labels)
			}
			if !ss.Labels.Has(labels.MetricName) || ss.Labels.Len() > testLimits.MaxLabelsPerSeries {
				t.Fatalf("invalid series %s in batch", ss.Labels)
			}
			if _, dup := ss.Labels.HasDuplicateLabelNames(); dup {
				t.Fatalf("duplicate label names in %s", ss.Labels)
			}
			prev := ""
			ss.Labels.Range(func(l labels.Label) {
				if l.Name <= prev || l.Value == "" {
					t.Fatalf("unsorted or empty label in %s", ss.Labels)
				}
				prev = l.Name
			})
			stored += len(ss.Samples)
		}
		if stored+s.stats.rejectedSamples != s.stats.samples {
			t.Fatalf("%d stored + %d rejected != %d decoded samples", stored, s.stats.rejectedSamples, s.stats.samples)
		}
	})
}
