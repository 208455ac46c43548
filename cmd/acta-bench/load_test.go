package main

import (
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// decoded is one sample as a receiver would see it.
type decoded struct {
	key string
	t   int64
	v   float64
}

func decodeBody(t *testing.T, proto string, b Body) []decoded {
	t.Helper()
	raw, err := snappy.Decode(nil, b.Data)
	if err != nil {
		t.Fatal(err)
	}
	var out []decoded
	switch proto {
	case protoRW1:
		var req prompb.WriteRequest
		if err := req.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		for _, ts := range req.Timeseries {
			for _, s := range ts.Samples {
				out = append(out, decoded{pbLabels(ts.Labels).String(), s.Timestamp, s.Value})
			}
		}
	case protoRW2:
		var req writev2.Request
		if err := req.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		for _, ts := range req.Timeseries {
			var ls []string
			for _, r := range ts.LabelsRefs {
				ls = append(ls, req.Symbols[r])
			}
			if ts.Metadata.Type == writev2.Metadata_METRIC_TYPE_UNSPECIFIED {
				t.Fatalf("series %v sent without a metric type", ls)
			}
			for _, s := range ts.Samples {
				out = append(out, decoded{labels.FromStrings(ls...).String(), s.Timestamp, s.Value})
			}
		}
	}
	if len(out) != b.Samples {
		t.Fatalf("body says %d samples, holds %d", b.Samples, len(out))
	}
	return out
}

// Every generated sample is sent exactly once, in timestamp order per
// series, in both protocols, and no shard drifts more than a round.
func TestLoadCarriesEverySampleInOrder(t *testing.T) {
	cfg := testConfig(700)
	d := mustDataset(t, cfg)
	for _, proto := range []string{protoRW1, protoRW2} {
		ld, err := BuildLoad(d, proto, LoadConfig{BatchSize: 500, Shards: 3, RoundScrapes: 40})
		if err != nil {
			t.Fatal(err)
		}
		if ld.Samples != d.Samples() {
			t.Fatalf("%s: %d samples encoded, %d generated", proto, ld.Samples, d.Samples())
		}
		if want := 480 / 40; len(ld.Rounds) != want {
			t.Fatalf("%s: %d rounds, want %d", proto, len(ld.Rounds), want)
		}
		got := map[string][]Sample{}
		for r, round := range ld.Rounds {
			roundEnd := cfg.Start + int64(r+1)*40*cfg.Interval.Milliseconds()
			for _, bodies := range round {
				for _, b := range bodies {
					if b.Samples > 500 {
						t.Fatalf("%s: a body of %d samples, batch is 500", proto, b.Samples)
					}
					for _, s := range decodeBody(t, proto, b) {
						if s.t >= roundEnd {
							t.Fatalf("%s: round %d carries a sample at %d, past its end %d", proto, r, s.t, roundEnd)
						}
						got[s.key] = append(got[s.key], Sample{s.t, s.v})
					}
				}
			}
		}
		for _, i := range []int{0, 350, 699} {
			want := d.SeriesSamples(i)
			g := got[d.Labels(i).String()]
			if len(g) != len(want) {
				t.Fatalf("%s series %d: %d samples sent, %d generated", proto, i, len(g), len(want))
			}
			for j := range want {
				if g[j] != want[j] {
					t.Fatalf("%s series %d sample %d: sent %v, generated %v", proto, i, j, g[j], want[j])
				}
			}
		}
	}
}
