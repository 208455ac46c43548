package remoteread

import (
	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// memSeries is a selected series with floats and histograms.
type memHistSeries struct {
	lset   labels.Labels
	floats []actastore.Sample
	hists  []histfile.Sample
}

func (s *memHistSeries) Labels() labels.Labels { return s.lset }
func (s *memHistSeries) Iterator() actastore.SampleIterator {
	return &floatIt{s: s.floats, i: -1}
}
func (s *memHistSeries) HistogramIterator() actastore.HistogramIterator {
	return &histIt{s: s.hists, i: -1}
}

type floatIt struct {
	s []actastore.Sample
	i int
}

func (it *floatIt) Next() bool           { it.i++; return it.i < len(it.s) }
func (it *floatIt) At() (int64, float64) { return it.s[it.i].T, it.s[it.i].V }
func (it *floatIt) Err() error           { return nil }

type histIt struct {
	s []histfile.Sample
	i int
}

func (it *histIt) Next() bool          { it.i++; return it.i < len(it.s) }
func (it *histIt) At() histfile.Sample { return it.s[it.i] }
func (it *histIt) Err() error          { return nil }

// histQuerier serves fixed series (sorted by labels) whatever the matchers.
type histQuerier struct{ series []*memHistSeries }

func (q *histQuerier) Select(_ context.Context, _, _ int64, _ ...*labels.Matcher) actastore.SeriesSet {
	return &listSet{l: q.series, i: -1}
}

type listSet struct {
	l []*memHistSeries
	i int
}

func (s *listSet) Next() bool           { s.i++; return s.i < len(s.l) }
func (s *listSet) At() actastore.Series { return s.l[s.i] }
func (s *listSet) Err() error           { return nil }
func (s *listSet) Close() error         { return nil }

// histCaseSeries turns the shared cases into series; "mixed" holds floats
// before and after its histograms, as a metric changing type does.
func histCaseSeries() []*memHistSeries {
	var out []*memHistSeries
	for _, c := range histtest.Cases(1_700_000_000_000) {
		out = append(out, &memHistSeries{lset: labels.FromStrings("__name__", c.Name), hists: c.Samples})
	}
	mixed := &memHistSeries{lset: labels.FromStrings("__name__", "mixed")}
	mixed.floats = []actastore.Sample{{T: 1000, V: 1}, {T: 2000, V: math.Float64frombits(0x7ff0000000000002)}, {T: 50000, V: 3}}
	mixed.hists = histtest.Cases(3000)[5].Samples[:3] // 3000, 18000, 33000
	out = append(out, mixed)
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].lset, out[j].lset) < 0 })
	return out
}

// readBack is one series as read: floats and histograms.
type readBack struct {
	floats []actastore.Sample
	hists  []histfile.Sample
}

// readHistograms reads every series through the handler with one response
// type.
func readHistograms(t *testing.T, url string, streamed bool) map[string]*readBack {
	t.Helper()
	typ := prompb.ReadRequest_SAMPLES
	if streamed {
		typ = prompb.ReadRequest_STREAMED_XOR_CHUNKS
	}
	body := testkit.ReadRequest([]prompb.ReadRequest_ResponseType{typ}, q(0, math.MaxInt64, m(prompb.LabelMatcher_RE, "__name__", ".+")))
	a := post(t, url, body)
	out := map[string]*readBack{}
	get := func(k string) *readBack {
		if out[k] == nil {
			out[k] = &readBack{}
		}
		return out[k]
	}
	if !streamed {
		rr, err := testkit.ReadResponse(a.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range rr.Results[0].Timeseries {
			rb := get(ts.ToLabels(&labels.ScratchBuilder{}, nil).String())
			for _, s := range ts.Samples {
				rb.floats = append(rb.floats, actastore.Sample{T: s.Timestamp, V: s.Value})
			}
			for _, h := range ts.Histograms {
				if h.IsFloatHistogram() {
					rb.hists = append(rb.hists, histfile.Sample{T: h.Timestamp, FH: h.ToFloatHistogram()})
				} else {
					rb.hists = append(rb.hists, histfile.Sample{T: h.Timestamp, H: h.ToIntHistogram()})
				}
			}
		}
		return out
	}
	err := testkit.Frames(bytes.NewReader(a.Body), 1<<24, func(cresp *prompb.ChunkedReadResponse) error {
		for _, cs := range cresp.ChunkedSeries {
			rb := get(cs.ToLabels(&labels.ScratchBuilder{}, nil).String())
			for _, c := range cs.Chunks {
				enc := map[prompb.Chunk_Encoding]chunkenc.Encoding{prompb.Chunk_XOR: chunkenc.EncXOR,
					prompb.Chunk_HISTOGRAM: chunkenc.EncHistogram, prompb.Chunk_FLOAT_HISTOGRAM: chunkenc.EncFloatHistogram}[c.Type]
				chk, err := chunkenc.FromData(enc, c.Data)
				if err != nil {
					t.Fatal(err)
				}
				it := chk.Iterator(nil)
				for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
					switch vt {
					case chunkenc.ValFloat:
						ts, v := it.At()
						rb.floats = append(rb.floats, actastore.Sample{T: ts, V: v})
					case chunkenc.ValHistogram:
						ts, h := it.AtHistogram(nil)
						rb.hists = append(rb.hists, histfile.Sample{T: ts, H: h})
					case chunkenc.ValFloatHistogram:
						ts, fh := it.AtFloatHistogram(nil)
						rb.hists = append(rb.hists, histfile.Sample{T: ts, FH: fh})
					}
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hintOK says whether a reset hint read back from a chunk is what
// Prometheus's chunks can give for a stored one (see histograms.go): a
// gauge stays a gauge; otherwise a sample that starts a chunk reads Unknown
// (Prometheus's encoder leaves the header for the reader to detect a
// reset, and cuts a chunk at a reset, a stale marker, a layout it cannot
// recode, or every 120 samples) and the others NotCounterReset, so a
// stored reset can only read Unknown (or CounterReset), and the series'
// first sample Unknown.
func hintOK(first bool, stored, got histogram.CounterResetHint) bool {
	switch {
	case stored == histogram.GaugeType:
		return got == histogram.GaugeType
	case first:
		return got == histogram.UnknownCounterReset
	case stored == histogram.CounterReset:
		return got == histogram.UnknownCounterReset || got == histogram.CounterReset
	}
	return got == histogram.UnknownCounterReset || got == histogram.NotCounterReset
}

// checkHistRead compares read-back series with what was stored, bit for
// bit; chunks keep every field but the per-sample reset hint, which they
// reduce as hintOK says, and the bucket layout, which they widen with
// empty buckets.
func checkHistRead(t *testing.T, what string, got map[string]*readBack, want []*memHistSeries, streamed bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d series back, want %d", what, len(got), len(want))
	}
	for _, w := range want {
		name := w.lset.String()
		g := got[name]
		if g == nil || len(g.hists) != len(w.hists) || len(g.floats) != len(w.floats) {
			t.Fatalf("%s %s: got %+v", what, name, g)
		}
		for i := range w.floats {
			if g.floats[i].T != w.floats[i].T || math.Float64bits(g.floats[i].V) != math.Float64bits(w.floats[i].V) {
				t.Fatalf("%s %s float %d: %v, want %v", what, name, i, g.floats[i], w.floats[i])
			}
		}
		for i, ws := range w.hists {
			gs := g.hists[i]
			if streamed && value.IsStaleNaN(ws.Sum()) {
				// A chunk keeps a stale marker as just that: the stale sum
				// (exact bits) at its timestamp, counts and buckets dropped.
				if gs.T != ws.T || gs.IsFloat() != ws.IsFloat() || math.Float64bits(gs.Sum()) != math.Float64bits(ws.Sum()) {
					t.Fatalf("%s %s histogram %d: stale marker read back as %v %v", what, name, i, gs.H, gs.FH)
				}
				continue
			}
			if streamed {
				if !hintOK(i == 0, hintOf(ws), hintOf(gs)) {
					t.Fatalf("%s %s histogram %d: reset hint %d read back as %d", what, name, i, hintOf(ws), hintOf(gs))
				}
				// All samples of a chunk share one bucket layout: the encoder
				// adds empty buckets to earlier samples. Compare the buckets
				// without empty ones.
				ws, gs = compacted(withHint(ws, hintOf(gs))), compacted(gs)
			}
			if string(histfile.AppendRecord(nil, ws)) != string(histfile.AppendRecord(nil, gs)) {
				t.Fatalf("%s %s histogram %d:\n got %x\nwant %x", what, name, i, histfile.AppendRecord(nil, gs), histfile.AppendRecord(nil, ws))
			}
		}
	}
}

func compacted(s histfile.Sample) histfile.Sample {
	if s.FH != nil {
		return histfile.Sample{T: s.T, FH: s.FH.Copy().Compact(0)}
	}
	return histfile.Sample{T: s.T, H: s.H.Copy().Compact(0)}
}

func hintOf(s histfile.Sample) histogram.CounterResetHint {
	if s.FH != nil {
		return s.FH.CounterResetHint
	}
	return s.H.CounterResetHint
}

func withHint(s histfile.Sample, h histogram.CounterResetHint) histfile.Sample {
	if s.FH != nil {
		c := s.FH.Copy()
		c.CounterResetHint = h
		return histfile.Sample{T: s.T, FH: c}
	}
	c := s.H.Copy()
	c.CounterResetHint = h
	return histfile.Sample{T: s.T, H: c}
}

func TestHistogramsBothResponseTypes(t *testing.T) {
	want := histCaseSeries()
	srv := httptest.NewServer(New(&histQuerier{series: want}, readLimits, nil, nil))
	t.Cleanup(srv.Close)
	for _, streamed := range []bool{false, true} {
		got := readHistograms(t, srv.URL, streamed)
		checkHistRead(t, map[bool]string{false: "SAMPLES", true: "STREAMED_XOR_CHUNKS"}[streamed], got, want, streamed)
	}
}
