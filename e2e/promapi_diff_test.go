package e2e

import (
	"strings"
	"testing"
)

// The comparison is what the end-to-end test's verdict rests on: check that it
// sees each kind of difference, and nothing when there is none.
func TestDiffSeries(t *testing.T) {
	s := func(labels map[string]string, samples ...string) series {
		out := series{labels: labels}
		for i := 0; i+1 < len(samples); i += 2 {
			out.samples = append(out.samples, apiSample{t: samples[i], v: samples[i+1]})
		}
		return out
	}
	up := map[string]string{"__name__": "up", "job": "p"}
	upRW := map[string]string{"__name__": "up", "job": "p", "rw": "1.0"}
	want := []series{s(up, "1.000", "1", "2.000", "0.1", "3.000", "NaN")}

	f := func(got []series, wantDiff string) {
		t.Helper()
		d := diffSeries(want, got, "rw", "1.0", 10)
		switch {
		case wantDiff == "" && len(d) != 0:
			t.Errorf("got differences %q, want none", d)
		case wantDiff != "" && (len(d) == 0 || !strings.Contains(d[0], wantDiff)):
			t.Errorf("got differences %q, want the first to contain %q", d, wantDiff)
		}
	}
	f([]series{s(upRW, "1.000", "1", "2.000", "0.1", "3.000", "NaN")}, "")
	f([]series{s(up, "1.000", "1", "2.000", "0.1", "3.000", "NaN")}, "") // aggregations drop rw
	f([]series{s(map[string]string{"__name__": "up", "job": "p", "rw": "2.0"}, "1.000", "1", "2.000", "0.1", "3.000", "NaN")}, `rw="2.0", want "1.0"`)
	f(nil, `missing series {__name__="up", job="p"}`)
	f([]series{s(upRW, "1.000", "1", "2.000", "0.1", "3.000", "NaN"), s(map[string]string{"__name__": "x", "rw": "1.0"}, "1.000", "1")}, "unexpected series {__name__=\"x\"}")
	f([]series{s(upRW, "1.000", "1", "2.001", "0.1", "3.000", "NaN")}, "sample 1: timestamp 2.001, want 2.000")
	f([]series{s(upRW, "1.000", "1", "2.000", "0.10000000000000002", "3.000", "NaN")}, "sample 1 at 2.000: value 0.10000000000000002")
	f([]series{s(upRW, "1.000", "-0", "2.000", "0.1", "3.000", "NaN")}, "bits 0x8000000000000000")
	f([]series{s(upRW, "1.000", "1", "2.000", "0.1")}, "2 samples, want 3")
	f([]series{s(upRW, "1.000", "1", "2.000", "0.1", "3.000", "NaN", "4.000", "1")}, "4 samples, want 3")
	f([]series{s(upRW, "1.000", "1", "2.000", "0.1", "3.000", "NaN"), s(upRW, "1.000", "1")}, "appears twice")
}
