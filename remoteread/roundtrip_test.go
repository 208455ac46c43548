package remoteread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
	"github.com/acta-remote/acta-remote/remotewrite"
)

type store interface {
	actastore.Appender
	actastore.Querier
	Append(context.Context, []actastore.SeriesSamples) (actastore.AppendResult, error)
}

var writeLimits = remotewrite.Limits{
	MaxBodyBytes: 1 << 20, MaxDecodedBytes: 8 << 20, MaxSeriesPerRequest: 1000,
	MaxLabelsPerSeries: 32, MaxLabelNameLength: 128, MaxLabelValueLength: 1024, MaxConcurrent: 4,
}

var readLimits = Limits{
	MaxBodyBytes: 64 << 10, MaxDecodedBytes: 256 << 10, MaxSamplesPerQuery: 100_000,
	MaxSeriesPerQuery: 1000, MaxConcurrent: 2, MaxBytesPerFrame: 1 << 20,
}

// server serves both endpoints over loopback HTTP on one store.
func server(t testing.TB, st store, rl Limits) (writeURL, readURL string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", remotewrite.New(st, writeLimits, nil, nil))
	mux.Handle("/api/v1/read", New(st, rl, nil, nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/write", srv.URL + "/api/v1/read"
}

// Float values whose bits must survive: Prometheus's stale marker, another
// NaN payload, infinities, subnormals. Not -0: the gogo-generated prompb
// marshallers (what Prometheus sends with) omit a double that compares equal
// to 0, so -0 written through remote write arrives as +0 before we ever see
// it; TestNegativeZeroSurvivesBothAnswers stores -0 directly.
var specials = []uint64{
	0x7ff0000000000002,      // stale marker
	0x7ff8000000000001,      // quiet NaN with payload
	0x7ff0000000000000,      // +Inf
	0xfff0000000000000,      // -Inf
	0x0000000000000001,      // smallest subnormal
	math.Float64bits(1e300), // large
}

type want map[string][]actastore.Sample // labels.String() → samples

func genSamples(rng *rand.Rand, n int, t0 int64) []actastore.Sample {
	out := make([]actastore.Sample, n)
	v := 100.0
	for i := range out {
		v += rng.Float64() - 0.3
		out[i] = actastore.Sample{T: t0 + int64(i)*15000 + rng.Int63n(3), V: v}
		if i%37 == 5 {
			out[i].V = math.Float64frombits(specials[(i/37)%len(specials)])
		}
	}
	return out
}

func postWrite(t testing.TB, url, ct string, body []byte) {
	t.Helper()
	a := testkit.Post(t, url, map[string]string{"Content-Type": ct, "Content-Encoding": "snappy"}, snappy.Encode(nil, body))
	if a.Code != http.StatusNoContent {
		t.Fatalf("write: %d %s", a.Code, a.Body)
	}
}

// writeBoth sends half the series as Remote-Write 1.0 and half as 2.0.
func writeBoth(t testing.TB, url string, data want, sets []labels.Labels) {
	t.Helper()
	v1 := &prompb.WriteRequest{}
	st := writev2.NewSymbolTable()
	v2 := &writev2.Request{}
	for i, ls := range sets {
		ss := data[ls.String()]
		if i%2 == 0 {
			ts := prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil)}
			for _, s := range ss {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: s.T, Value: s.V})
			}
			v1.Timeseries = append(v1.Timeseries, ts)
		} else {
			ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil)}
			for _, s := range ss {
				ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: s.T, Value: s.V})
			}
			v2.Timeseries = append(v2.Timeseries, ts)
		}
	}
	v2.Symbols = st.Symbols()
	b1, _ := v1.Marshal()
	b2, _ := v2.Marshal()
	postWrite(t, url, "application/x-protobuf;proto=prometheus.WriteRequest", b1)
	postWrite(t, url, "application/x-protobuf;proto=io.prometheus.write.v2.Request", b2)
}

func q(mint, maxt int64, ms ...*prompb.LabelMatcher) *prompb.Query {
	return &prompb.Query{StartTimestampMs: mint, EndTimestampMs: maxt, Matchers: ms,
		Hints: &prompb.ReadHints{StepMs: 15000, Func: "rate", StartMs: mint, EndMs: maxt, Grouping: []string{"job"}}}
}

func m(t prompb.LabelMatcher_Type, name, value string) *prompb.LabelMatcher {
	return &prompb.LabelMatcher{Type: t, Name: name, Value: value}
}

// readAll posts a read request and decodes either answer into one map per query.
func readAll(t testing.TB, url string, body []byte, wantStreamed bool) []want {
	t.Helper()
	a := post(t, url, body)
	ct := a.Header.Get("Content-Type")
	if wantStreamed != strings.HasPrefix(ct, "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse") {
		t.Fatalf("Content-Type %q, streamed=%v", ct, wantStreamed)
	}
	var out []want
	at := func(i int) want {
		for len(out) <= i {
			out = append(out, want{})
		}
		return out[i]
	}
	if !wantStreamed {
		if a.Header.Get("Content-Encoding") != "snappy" {
			t.Fatalf("SAMPLES answer without snappy encoding")
		}
		rr, err := testkit.ReadResponse(a.Body)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range rr.Results {
			w := at(i)
			for _, ts := range res.Timeseries {
				k := ts.ToLabels(&labels.ScratchBuilder{}, nil).String()
				for _, s := range ts.Samples {
					w[k] = append(w[k], actastore.Sample{T: s.Timestamp, V: s.Value})
				}
			}
		}
		return out
	}
	// Prometheus's own reader proves the framing and the CRC.
	err := testkit.Frames(bytes.NewReader(a.Body), 1<<24, func(cresp *prompb.ChunkedReadResponse) error {
		w := at(int(cresp.QueryIndex))
		for _, cs := range cresp.ChunkedSeries {
			k := cs.ToLabels(&labels.ScratchBuilder{}, nil).String()
			for _, c := range cs.Chunks {
				if c.Type != prompb.Chunk_XOR {
					t.Fatalf("chunk type %v", c.Type)
				}
				chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
				if err != nil {
					t.Fatal(err)
				}
				if n := chk.NumSamples(); n < 1 || n > samplesPerChunk {
					t.Errorf("chunk holds %d samples, want 1..%d", n, samplesPerChunk)
				}
				it := chk.Iterator(nil)
				first := true
				var last int64
				for it.Next() != chunkenc.ValNone {
					ts, v := it.At()
					if first && ts != c.MinTimeMs {
						t.Errorf("chunk MinTimeMs %d, first sample %d", c.MinTimeMs, ts)
					}
					first, last = false, ts
					w[k] = append(w[k], actastore.Sample{T: ts, V: v})
				}
				if last != c.MaxTimeMs {
					t.Errorf("chunk MaxTimeMs %d, last sample %d", c.MaxTimeMs, last)
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

// sameBits compares sample sets bit for bit (NaN payloads included).
func sameBits(t testing.TB, what string, got, exp want) {
	t.Helper()
	if len(got) != len(exp) {
		t.Errorf("%s: %d series, want %d (%v)", what, len(got), len(exp), keys(got))
	}
	for k, es := range exp {
		gs := got[k]
		if len(gs) != len(es) {
			t.Errorf("%s: %s has %d samples, want %d", what, k, len(gs), len(es))
			continue
		}
		for i := range es {
			if gs[i].T != es[i].T || math.Float64bits(gs[i].V) != math.Float64bits(es[i].V) {
				t.Errorf("%s: %s sample %d = (%d, %#x), want (%d, %#x)", what, k, i,
					gs[i].T, math.Float64bits(gs[i].V), es[i].T, math.Float64bits(es[i].V))
				break
			}
		}
	}
}

func keys(w want) []string {
	var out []string
	for k := range w {
		out = append(out, k)
	}
	return out
}

// filter returns the expected answer of one query.
func filter(data want, sets []labels.Labels, mint, maxt int64, ms ...*labels.Matcher) want {
	out := want{}
	for _, ls := range sets {
		ok := true
		for _, m := range ms {
			ok = ok && m.Matches(ls.Get(m.Name))
		}
		if !ok {
			continue
		}
		for _, s := range data[ls.String()] {
			if s.T >= mint && s.T <= maxt {
				out[ls.String()] = append(out[ls.String()], s)
			}
		}
	}
	return out
}

func TestRoundTripBitExact(t *testing.T) {
	st := openStore(t)
	wurl, rurl := server(t, st, readLimits)
	rng := rand.New(rand.NewSource(1))
	sets := []labels.Labels{
		labels.FromStrings("__name__", "rt_up", "job", "a"),
		labels.FromStrings("__name__", "rt_up", "job", "b"),
		labels.FromStrings("__name__", "rt_latency", "job", "a", "le", "0.5"),
		labels.FromStrings("__name__", "rt_latency", "job", "c", "le", "+Inf"),
		labels.FromStrings("__name__", "other", "job", "a"),
	}
	data := want{}
	for i, ls := range sets {
		data[ls.String()] = genSamples(rng, []int{300, 1, 121, 240, 7}[i], 1_700_000_000_000)
	}
	writeBoth(t, wurl, data, sets)

	const t0 = 1_700_000_000_000
	mid := data[sets[0].String()][100].T // inclusive bounds land on real samples
	end := data[sets[0].String()][200].T
	queries := []struct {
		mint, maxt int64
		pb         []*prompb.LabelMatcher
		ms         []*labels.Matcher
	}{
		{t0, t0 + 1e9, []*prompb.LabelMatcher{m(prompb.LabelMatcher_RE, "__name__", "rt_.*")},
			[]*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "rt_.*")}},
		{mid, end, []*prompb.LabelMatcher{m(prompb.LabelMatcher_EQ, "__name__", "rt_up"), m(prompb.LabelMatcher_EQ, "job", "a")},
			[]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "rt_up"), labels.MustNewMatcher(labels.MatchEqual, "job", "a")}},
		{t0, t0 + 1e9, []*prompb.LabelMatcher{m(prompb.LabelMatcher_NEQ, "job", "a"), m(prompb.LabelMatcher_NRE, "__name__", "other|nothing")},
			[]*labels.Matcher{labels.MustNewMatcher(labels.MatchNotEqual, "job", "a"), labels.MustNewMatcher(labels.MatchNotRegexp, "__name__", "other|nothing")}},
		{t0 + 2e9, t0 + 3e9, []*prompb.LabelMatcher{m(prompb.LabelMatcher_RE, "__name__", ".+")}, nil}, // nothing there
	}
	var pbq []*prompb.Query
	var exp []want
	for _, qq := range queries {
		pbq = append(pbq, q(qq.mint, qq.maxt, qq.pb...))
		exp = append(exp, filter(data, sets, qq.mint, qq.maxt, qq.ms...))
	}
	if n := len(exp[1][sets[0].String()]); n != 101 {
		t.Fatalf("inclusive range should select 101 samples, expectation has %d", n)
	}
	check := func(phase string) {
		for _, c := range []struct {
			name     string
			types    []prompb.ReadRequest_ResponseType
			streamed bool
		}{
			{"prometheus order", []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}, true},
			{"samples first", []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS}, false},
			{"none listed", nil, false},
		} {
			got := readAll(t, rurl, testkit.ReadRequest(c.types, pbq...), c.streamed)
			for i := range exp {
				var g want
				if i < len(got) {
					g = got[i]
				}
				if g == nil {
					g = want{}
				}
				sameBits(t, fmt.Sprintf("%s: %s query %d", phase, c.name, i), g, exp[i])
			}
		}
	}
	check("head")
	// Again once everything sits in the series' Acta files.
	if f, ok := st.(interface{ FlushAll() error }); ok {
		if err := f.FlushAll(); err != nil {
			t.Fatal(err)
		}
		check("flushed")
	}
}

// A small frame budget splits one series over several frames, each close to
// the budget.
func TestStreamFrameSize(t *testing.T) {
	st := openStore(t)
	rl := readLimits
	rl.MaxBytesPerFrame = 1024
	wurl, rurl := server(t, st, rl)
	ls := labels.FromStrings("__name__", "big", "job", "x")
	data := want{ls.String(): genSamples(rand.New(rand.NewSource(2)), 5000, 1_700_000_000_000)}
	writeBoth(t, wurl, data, []labels.Labels{ls})

	resp, err := http.Post(rurl, "application/x-protobuf", bytes.NewReader(testkit.ReadRequest(
		[]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "big")))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cr := remote.NewChunkedReader(resp.Body, 1<<20, nil)
	frames, total := 0, 0
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		frames++
		// The budget is exceeded by at most one chunk (<= 120 samples
		// of at most ~16 bytes each) plus framing.
		if len(b) > 1024+120*16+64 {
			t.Errorf("frame %d is %d bytes, budget 1024", frames, len(b))
		}
		var cresp prompb.ChunkedReadResponse
		if err := cresp.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		for _, c := range cresp.ChunkedSeries[0].Chunks {
			chk, _ := chunkenc.FromData(chunkenc.EncXOR, c.Data)
			total += chk.NumSamples()
		}
	}
	if total != 5000 || frames < 10 {
		t.Errorf("%d samples in %d frames; want 5000 samples over many frames", total, frames)
	}
}
