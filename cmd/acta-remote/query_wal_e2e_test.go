package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// headConfig keeps every sample in the head (and the WAL) for the default
// five minutes: nothing reaches a series file while a test runs, unless
// the server is stopped.
const headConfig = `
storage:
  max_head_age: 5m
otlp:
  grpc:
    enabled: false
`

// newUserSamples are n samples per series ending at now, 15 s apart, with
// the values only bits tell apart: a stale marker, -0, another NaN, +Inf.
func newUserSamples(now int64, n, series int) []sample {
	specials := []uint64{0x7ff0000000000002, 0x8000000000000000, 0x7ff8000000000001, 0x7ff0000000000000}
	out := make([]sample, n)
	for j := range out {
		out[j] = sample{T: now - int64(n-1-j)*15000, V: float64(series)*1000 + float64(j)/8}
		if j%5 == 2 {
			out[j].V = math.Float64frombits(specials[(series+j)%len(specials)])
		}
	}
	return out
}

func seriesFiles(t *testing.T, data, kind string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(data, kind, "*", "*.acta"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".exemplars.acta") {
			out = append(out, p)
		}
	}
	return out
}

// TestNewUserSeesEverything is issue 15's new user: five series written
// with remote write, `query '{run="3"}'` at once, and tail: every sample
// is there bit for bit although none is in a series file yet (the head
// flushes after five minutes), tail prints new samples within its poll
// interval, and the flush at the server's stop prints nothing twice.
// After a restart tail goes on with the new WAL.
func TestNewUserSeesEverything(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, headConfig)
	var sets []labels.Labels
	for i := range 5 {
		sets = append(sets, labels.FromStrings("__name__", "nu_metric", "i", strconv.Itoa(i), "run", "3"))
	}
	other := labels.FromStrings("__name__", "nu_metric", "i", "0", "run", "4")
	now := time.Now().UnixMilli()
	want := dataset{}
	for i, ls := range sets {
		want[ls.String()] = newUserSamples(now, 20, i)
	}
	send(t, p.url, want, sets, 20)
	send(t, p.url, dataset{other.String(): newUserSamples(now, 20, 9)}, []labels.Labels{other}, 20)

	out, stderr := runTool(t, bin, "query", "--data-dir", data, "--json", `{run="3"}`)
	sameData(t, "query at once", parseJSONOutput(t, out), want)
	if files, walOnly := summaryCounts(t, stderr, 100, 0); files != 0 || walOnly != 100 {
		t.Errorf("summary says %d in files, %d only in the WAL; want 0 and 100:\n%s", files, walOnly, stderr)
	}
	if strings.Contains(stderr, "not visible") {
		t.Errorf("query still says samples are not visible:\n%s", stderr)
	}
	if fs := seriesFiles(t, data, "series"); len(fs) != 0 {
		t.Fatalf("series files exist already (%v): the test would not show the WAL is read", fs)
	}
	// Text: -0 and the stale marker by their bits.
	out, _ = runTool(t, bin, "query", "--data-dir", data, `{run="3",i="1"}`)
	ws := want[sets[1].String()]
	for _, j := range []int{2, 7} {
		line := "  " + strconv.FormatInt(ws[j].T, 10) + "\t" + fmtMs(ws[j].T) + "\t" + strconv.FormatFloat(ws[j].V, 'g', -1, 64) + "\t" +
			"0x" + strconv.FormatUint(math.Float64bits(ws[j].V), 16)
		if !strings.Contains(out, line+"\n") {
			t.Errorf("text output lacks %q:\n%s", line, out)
		}
	}

	tp := startTail(t, bin, "--data-dir", data, "--since", "1h", "--poll", "200ms", "--json", `{run="3"}`)
	sameData(t, "tail history", tp.waitSamples(t, 100), want)

	// New samples print within the poll interval, long before max_head_age.
	round := func(at int64) {
		t.Helper()
		r := dataset{}
		for i, ls := range sets {
			s := []sample{{at, float64(i) + 0.25}, {at + 1000, math.Float64frombits(0x7ff0000000000002)}}
			r[ls.String()] = s
			want[ls.String()] = append(want[ls.String()], s...)
		}
		send(t, p.url, r, sets, 2)
	}
	round(now + 1000)
	acked := time.Now()
	tp.waitCount(t, countSamples(want))
	lag := time.Since(acked)
	t.Logf("tail printed the new samples %s after their acknowledgement (--poll 200ms, max_head_age 5m)", lag.Round(time.Millisecond))
	if lag > 5*time.Second {
		t.Errorf("tail took %s to print acknowledged samples", lag)
	}
	time.Sleep(settle)
	sameData(t, "tail live", tp.result(t, countSamples(want)), want)

	// The stop flushes every head into the files and truncates the WAL:
	// tail prints none of them again.
	p.stop(t, syscall.SIGTERM)
	if fs := seriesFiles(t, data, "series"); len(fs) < 6 { // more if the samples cross midnight UTC
		t.Fatalf("%d series files after the stop, want 6", len(fs))
	}
	time.Sleep(settle)
	sameData(t, "tail after the flush", tp.result(t, countSamples(want)), want)
	out, stderr = runTool(t, bin, "query", "--data-dir", data, "--json", `{run="3"}`)
	sameData(t, "query after the flush", parseJSONOutput(t, out), want)
	if files, walOnly := summaryCounts(t, stderr, 110, 0); files != 110 || walOnly != 0 {
		t.Errorf("after the flush, summary says %d in files, %d only in the WAL; want 110 and 0", files, walOnly)
	}

	// A restarted server writes a new WAL segment; tail follows it.
	p = start(t, bin, "--config", filepath.Join(filepath.Dir(data), "acta.yaml"), "--listen", "127.0.0.1:0", "--data-dir", data)
	round(now + 3000)
	sameData(t, "tail after a restart", tp.waitSamples(t, countSamples(want)), want)
	tp.stop(t)
	p.stop(t, syscall.SIGTERM)
}

// histSeries is one series of the histogram test: its labels, its
// histograms, and float samples (a metric that changed type).
type histSeries struct {
	ls labels.Labels
	hs []histfile.Sample
	fs []sample
}

// sendHistograms writes the series with Remote-Write 2.0 (with an
// exemplar and metadata each) when v2, else 1.0.
func sendHistograms(t *testing.T, url string, ss []histSeries, v2 bool) {
	t.Helper()
	if !v2 {
		req := &prompb.WriteRequest{}
		for _, s := range ss {
			ts := prompb.TimeSeries{Labels: prompb.FromLabels(s.ls, nil)}
			for _, h := range s.hs {
				if h.FH != nil {
					ts.Histograms = append(ts.Histograms, prompb.FromFloatHistogram(h.T, h.FH))
				} else {
					ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(h.T, h.H))
				}
			}
			for _, f := range s.fs {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: f.T, Value: f.V})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		b, _ := req.Marshal()
		post(t, url, testkit.ContentTypeRW1, b, "")
		return
	}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	floats := 0
	for _, s := range ss {
		ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(s.ls, nil),
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM, HelpRef: st.Symbolize("help"), UnitRef: st.Symbolize("seconds")}}
		for _, h := range s.hs {
			if h.FH != nil {
				ts.Histograms = append(ts.Histograms, writev2.FromFloatHistogram(0, h.T, h.FH))
			} else {
				ts.Histograms = append(ts.Histograms, writev2.FromIntHistogram(0, h.T, h.H))
			}
		}
		for _, f := range s.fs {
			ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: f.T, Value: f.V})
			floats++
		}
		ts.Exemplars = []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "t1"), nil), Value: 1, Timestamp: s.hs[0].T}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	b, _ := req.Marshal()
	post(t, url, testkit.ContentTypeRW2, b, strconv.Itoa(floats))
}

// TestQueryTailHistograms writes every histtest case (every schema, float
// and integer, custom buckets, reset hints, stale markers) with Remote-
// Write 1.0 and 2.0, one series also holding float samples, and checks
// that tail (started first) and query print them bit for bit while they
// are in the WAL only, and that the flush at the stop prints none again.
func TestQueryTailHistograms(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, headConfig)
	tp := startTail(t, bin, "--data-dir", data, "--since", "1h", "--poll", "200ms", "--json", `{job="hist"}`)
	t0 := time.Now().Add(-10*time.Minute).UnixMilli() / 15000 * 15000
	var all []histSeries
	wantH, wantF := hdataset{}, dataset{}
	for _, c := range histtest.Cases(t0) {
		s := histSeries{ls: labels.FromStrings("__name__", c.Name, "job", "hist"), hs: c.Samples}
		if c.Name == "h_custom" {
			s.fs = []sample{{t0 + 5000, 0.5}, {t0 + 20000, math.Float64frombits(0x7ff0000000000002)}}
			wantF[s.ls.String()] = s.fs
		}
		wantH[s.ls.String()] = c.Samples
		all = append(all, s)
	}
	half := len(all) / 2
	sendHistograms(t, p.url, all[:half], true)
	sendHistograms(t, p.url, all[half:], false)
	nh := countHists(wantH)

	out, stderr := runTool(t, bin, "query", "--data-dir", data, "--json", `{job="hist"}`)
	gotF, gotH := parseJSONAll(t, out)
	sameHists(t, "query at once", gotH, wantH)
	sameData(t, "query at once (floats)", gotF, wantF)
	if files, walOnly := summaryCounts(t, stderr, 2, nh); files != 0 || walOnly != nh+2 {
		t.Errorf("summary says %d in files, %d only in the WAL; want 0 and %d", files, walOnly, nh+2)
	}
	if fs := seriesFiles(t, data, "histograms"); len(fs) != 0 {
		t.Fatalf("histogram files exist already: %v", fs)
	}
	out, _ = runTool(t, bin, "query", "--data-dir", data, `{__name__=~"fh_gauge|h_stale"}`)
	for _, frag := range []string{"float_histogram schema=3 reset_hint=gauge sum_bits=0x", "histogram schema=0 reset_hint=unknown sum_bits=0x7ff0000000000002"} {
		if !strings.Contains(out, frag) {
			t.Errorf("text output lacks %q:\n%s", frag, out)
		}
	}

	n := nh + 2
	tp.waitCount(t, n)
	time.Sleep(settle)
	check := func(what string) {
		t.Helper()
		tp.mu.Lock()
		lines := strings.Join(tp.lines, "\n")
		nl := len(tp.lines)
		tp.mu.Unlock()
		if nl != n {
			t.Errorf("%s: tail printed %d lines, want %d", what, nl, n)
		}
		gotF, gotH := parseJSONAll(t, lines)
		sameHists(t, what, gotH, wantH)
		sameData(t, what+" (floats)", gotF, wantF)
	}
	check("tail")
	p.stop(t, syscall.SIGTERM)
	if fs := seriesFiles(t, data, "histograms"); len(fs) < len(all) {
		t.Fatalf("%d histogram files after the stop, want %d", len(fs), len(all))
	}
	time.Sleep(settle)
	check("tail after the flush")
	tp.stop(t)
	out, stderr = runTool(t, bin, "query", "--data-dir", data, "--json", `{job="hist"}`)
	gotF, gotH = parseJSONAll(t, out)
	sameHists(t, "query after the flush", gotH, wantH)
	sameData(t, "query after the flush (floats)", gotF, wantF)
	if files, walOnly := summaryCounts(t, stderr, 2, nh); files != nh+2 || walOnly != 0 {
		t.Errorf("after the flush, summary says %d in files, %d only in the WAL", files, walOnly)
	}
}
