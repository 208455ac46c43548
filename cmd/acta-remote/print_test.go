package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

type hdataset map[string][]histfile.Sample // labels.String() → histograms

// jsonHist is the "histogram" object of a --json line.
type jsonHist struct {
	Float          bool              `json:"float"`
	ResetHint      string            `json:"reset_hint"`
	Schema         int32             `json:"schema"`
	ZeroThreshold  json.RawMessage   `json:"zero_threshold"`
	ZeroCount      json.RawMessage   `json:"zero_count"`
	Count          json.RawMessage   `json:"count"`
	Sum            json.RawMessage   `json:"sum"`
	PositiveSpans  []histogram.Span  `json:"positive_spans"`
	NegativeSpans  []histogram.Span  `json:"negative_spans"`
	PositiveDeltas []int64           `json:"positive_deltas"`
	NegativeDeltas []int64           `json:"negative_deltas"`
	PositiveCounts []json.RawMessage `json:"positive_counts"`
	NegativeCounts []json.RawMessage `json:"negative_counts"`
	CustomValues   []json.RawMessage `json:"custom_values"`
}

// exactFloat reads exactJSON's form back: a number, or a string of bits.
func exactFloat(t *testing.T, raw json.RawMessage) float64 {
	t.Helper()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		bits, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if err != nil || len(s) != 18 {
			t.Fatalf("bad float bits %s", raw)
		}
		f := math.Float64frombits(bits)
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			t.Fatalf("finite float %s given as bits", raw)
		}
		return f
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		t.Fatalf("bad float %s: %v", raw, err)
	}
	return f
}

func exactFloats(t *testing.T, raws []json.RawMessage) []float64 {
	if raws == nil {
		return nil
	}
	out := make([]float64, len(raws))
	for i, r := range raws {
		out[i] = exactFloat(t, r)
	}
	return out
}

func uintOf(t *testing.T, raw json.RawMessage) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		t.Fatalf("bad count %s: %v", raw, err)
	}
	return v
}

var hintByName = map[string]histogram.CounterResetHint{"unknown": histogram.UnknownCounterReset, "reset": histogram.CounterReset,
	"not_reset": histogram.NotCounterReset, "gauge": histogram.GaugeType}

// sample builds the histogram a line describes. Empty slices come back
// nil, as histfile decodes them.
func (j jsonHist) sample(t *testing.T, ts int64) histfile.Sample {
	t.Helper()
	hint, ok := hintByName[j.ResetHint]
	if !ok {
		t.Fatalf("unknown reset hint %q", j.ResetHint)
	}
	spans := func(s []histogram.Span) []histogram.Span {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	nilIfEmpty := func(f []float64) []float64 {
		if len(f) == 0 {
			return nil
		}
		return f
	}
	if j.Float {
		return histfile.Sample{T: ts, FH: &histogram.FloatHistogram{CounterResetHint: hint, Schema: j.Schema,
			ZeroThreshold: exactFloat(t, j.ZeroThreshold), ZeroCount: exactFloat(t, j.ZeroCount), Count: exactFloat(t, j.Count),
			Sum: exactFloat(t, j.Sum), PositiveSpans: spans(j.PositiveSpans), NegativeSpans: spans(j.NegativeSpans),
			PositiveBuckets: nilIfEmpty(exactFloats(t, j.PositiveCounts)), NegativeBuckets: nilIfEmpty(exactFloats(t, j.NegativeCounts)),
			CustomValues: nilIfEmpty(exactFloats(t, j.CustomValues))}}
	}
	ints := func(v []int64) []int64 {
		if len(v) == 0 {
			return nil
		}
		return v
	}
	return histfile.Sample{T: ts, H: &histogram.Histogram{CounterResetHint: hint, Schema: j.Schema,
		ZeroThreshold: exactFloat(t, j.ZeroThreshold), ZeroCount: uintOf(t, j.ZeroCount), Count: uintOf(t, j.Count),
		Sum: exactFloat(t, j.Sum), PositiveSpans: spans(j.PositiveSpans), NegativeSpans: spans(j.NegativeSpans),
		PositiveBuckets: ints(j.PositiveDeltas), NegativeBuckets: ints(j.NegativeDeltas),
		CustomValues: nilIfEmpty(exactFloats(t, j.CustomValues))}}
}

// parseJSONAll reads --json output of both kinds: float sample lines (v
// checked against bits) and histogram lines.
func parseJSONAll(t *testing.T, out string) (dataset, hdataset) {
	t.Helper()
	d, hd := dataset{}, hdataset{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var probe struct {
			Labels    map[string]string `json:"labels"`
			T         int64             `json:"t"`
			Histogram *jsonHist         `json:"histogram"`
		}
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if probe.Histogram == nil {
			k, s := parseJSONSample(t, line)
			d[k] = append(d[k], s)
			continue
		}
		k := labels.FromMap(probe.Labels).String()
		hd[k] = append(hd[k], probe.Histogram.sample(t, probe.T))
	}
	return d, hd
}

// sameHists compares histogram datasets through histfile's record
// encoding, which holds every field with its float bits.
func sameHists(t *testing.T, what string, got, want hdataset) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d histogram series, want %d", what, len(got), len(want))
	}
	for k, ws := range want {
		gs := got[k]
		if len(gs) != len(ws) {
			t.Errorf("%s: %s: %d histograms, want %d", what, k, len(gs), len(ws))
			continue
		}
		for i := range ws {
			if gs[i].T != ws[i].T || string(histfile.AppendRecord(nil, gs[i])) != string(histfile.AppendRecord(nil, ws[i])) {
				t.Errorf("%s: %s histogram %d at %d = %v%v, want at %d %v%v", what, k, i, gs[i].T, gs[i].H, gs[i].FH, ws[i].T, ws[i].H, ws[i].FH)
				break
			}
		}
	}
}

func countHists(d hdataset) int {
	n := 0
	for _, s := range d {
		n += len(s)
	}
	return n
}

// TestPrinterHistogramFormats pins the text and JSON forms of native
// histograms, and reads every histtest case back from its JSON line bit
// for bit (stale markers, -0 and NaN bits included).
func TestPrinterHistogramFormats(t *testing.T) {
	ls := labels.FromStrings("__name__", "lat", "job", "a")
	h := &histogram.Histogram{CounterResetHint: histogram.NotCounterReset, Schema: 0, ZeroThreshold: 0.001, ZeroCount: 1,
		Count: 4, Sum: math.Copysign(0, -1), PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []int64{2, -1}}
	fh := &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: -53, Count: 2.5,
		Sum: math.Float64frombits(0x7ff0000000000002), PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}},
		PositiveBuckets: []float64{2.5}, CustomValues: []float64{0.5, 1}}
	smps := []actastore.HistogramSample{{T: 1700000000123, H: h}, {T: 1700000000124, FH: fh}}
	f := func(p printer, want string) {
		t.Helper()
		var b bytes.Buffer
		p.w = &b
		p.series(ls)
		p.merged(ls, []actastore.Sample{{T: 1700000000124, V: 1}}, smps)
		if b.String() != want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
		}
	}
	f(printer{}, `{__name__="lat", job="a"}
  1700000000123	2023-11-14T22:13:20.123Z	{count:4, sum:-0, [-0.001,0.001]:1, (1,2]:2, (2,4]:1}	histogram schema=0 reset_hint=not_reset sum_bits=0x8000000000000000
  1700000000124	2023-11-14T22:13:20.124Z	1	0x3ff0000000000000
  1700000000124	2023-11-14T22:13:20.124Z	{count:2.5, sum:NaN, [-Inf,0.5]:2.5}	float_histogram schema=-53 reset_hint=gauge sum_bits=0x7ff0000000000002
`)
	f(printer{json: true, inline: true}, `{"labels":{"__name__":"lat","job":"a"},"t":1700000000123,"histogram":{"float":false,"reset_hint":"not_reset","schema":0,"zero_threshold":0.001,"zero_count":1,"count":4,"sum":-0,"positive_spans":[{"offset":1,"length":2}],"positive_deltas":[2,-1],"negative_spans":[],"negative_deltas":[],"custom_values":[]}}
{"labels":{"__name__":"lat","job":"a"},"t":1700000000124,"v":1,"bits":"0x3ff0000000000000"}
{"labels":{"__name__":"lat","job":"a"},"t":1700000000124,"histogram":{"float":true,"reset_hint":"gauge","schema":-53,"zero_threshold":0,"zero_count":0,"count":2.5,"sum":"0x7ff0000000000002","positive_spans":[{"offset":0,"length":1}],"positive_counts":[2.5],"negative_spans":[],"negative_counts":[],"custom_values":[0.5,1]}}
`)

	// Every case, through JSON and back.
	var b bytes.Buffer
	p := printer{w: &b, json: true}
	want := hdataset{}
	for _, c := range histtest.Cases(1_700_000_000_000) {
		cls := labels.FromStrings("__name__", c.Name)
		p.merged(cls, nil, c.Samples)
		want[cls.String()] = c.Samples
	}
	_, got := parseJSONAll(t, b.String())
	sameHists(t, "histtest cases through JSON", got, want)
}
