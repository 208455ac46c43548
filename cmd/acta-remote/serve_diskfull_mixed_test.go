package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

const (
	dmFloatSeries = 20
	dmMaxExemplar = 32 // what the store keeps per series: every acknowledged one stays checkable
)

// dmHistCases are the histogram series of a mixed request: integer and
// float, exponential and custom buckets, a stale marker among them.
var dmHistCases = func() []histtest.Series {
	var out []histtest.Series
	for _, c := range histtest.Cases(0) {
		switch c.Name {
		case "h_schema_m4", "h_schema_3", "h_schema_8", "fh_gauge", "h_custom", "fh_custom", "h_stale":
			out = append(out, c)
		}
	}
	return out
}()

// dmWriter sends mixed Remote-Write 2.0 requests (float samples, native
// histograms, exemplars and metadata in one request) and remembers every
// acknowledged item of each kind.
type dmWriter struct {
	client *http.Client
	url    string
	codes  map[string]map[int]int
	k      int64
	floats dataset  // by series labels
	hists  hdataset // by series labels
	exs    map[string][]actastore.Exemplar
	help   int64 // the k of the last acknowledged request: its metadata is the latest
}

func dmHistLabels(j int) labels.Labels {
	return labels.FromStrings("__name__", "dfm_"+dmHistCases[j].Name, "j", strconv.Itoa(j))
}

func dmFloatLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "dfm", "i", strconv.Itoa(i))
}

// write sends request k: n float samples per float series from ts = k
// seconds, one histogram and (while fewer than dmMaxExemplar are
// acknowledged) one exemplar per histogram series, and every series'
// metadata naming k.
func (w *dmWriter) write(phase string, n int64) int {
	w.k++
	k, ts := w.k, w.k*1000
	withEx := len(w.exs[dmHistLabels(0).String()]) < dmMaxExemplar
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	fl := map[string][]sample{}
	hs := map[string]histfile.Sample{}
	ex := map[string]actastore.Exemplar{}
	for i := range dmFloatSeries {
		ls := dmFloatLabels(i)
		s := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil),
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize(fmt.Sprintf("floats %d", k)), UnitRef: st.Symbolize("bytes")}}
		for x := range n {
			v := dfValue(i, ts+x)
			s.Samples = append(s.Samples, writev2.Sample{Timestamp: ts + x, Value: v})
			fl[ls.String()] = append(fl[ls.String()], sample{ts + x, v})
		}
		req.Timeseries = append(req.Timeseries, s)
	}
	for j, c := range dmHistCases {
		ls := dmHistLabels(j)
		src := c.Samples[int(k)%len(c.Samples)]
		h := histfile.Sample{T: ts}
		s := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil),
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM, HelpRef: st.Symbolize(fmt.Sprintf("histograms %d", k)), UnitRef: st.Symbolize("seconds")}}
		if src.FH != nil {
			h.FH = src.FH.Copy()
			s.Histograms = []writev2.Histogram{writev2.FromFloatHistogram(0, ts, h.FH)}
		} else {
			h.H = src.H.Copy()
			s.Histograms = []writev2.Histogram{writev2.FromIntHistogram(0, ts, h.H)}
		}
		hs[ls.String()] = h
		if withEx {
			e := actastore.Exemplar{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%d-%d", k, j)), Value: dfValue(100+j, ts), T: ts}
			if j == 0 {
				e.Value = math.Float64frombits(0x7ff8000000000000 | uint64(k)) // a NaN payload
			}
			s.Exemplars = []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(e.Labels, nil), Value: e.Value, Timestamp: e.T}}
			ex[ls.String()] = e
		}
		req.Timeseries = append(req.Timeseries, s)
	}
	req.Symbols = st.Symbols()
	code := 0
	hreq, _ := http.NewRequest(http.MethodPost, w.url+"/api/v1/write", bytes.NewReader(testkit.RW2(req)))
	hreq.Header.Set("Content-Type", testkit.ContentTypeRW2)
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	if resp, err := w.client.Do(hreq); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		code = resp.StatusCode
		if code == http.StatusNoContent && (resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written") != strconv.Itoa(dmFloatSeries*int(n)) ||
			resp.Header.Get("X-Prometheus-Remote-Write-Histograms-Written") != strconv.Itoa(len(dmHistCases))) {
			code = -1 // acknowledged, but not all of it stored
		}
	}
	if w.codes[phase] == nil {
		w.codes[phase] = map[int]int{}
	}
	w.codes[phase][code]++
	if code == http.StatusNoContent {
		for key, s := range fl {
			w.floats[key] = append(w.floats[key], s...)
		}
		for key, h := range hs {
			w.hists[key] = append(w.hists[key], h)
		}
		for key, e := range ex {
			w.exs[key] = append(w.exs[key], e)
		}
		w.help = k
	}
	return code
}

// readKinds reads the series named by nameRE with remote read (SAMPLES):
// float samples and native histograms, every field as stored.
func readKinds(t *testing.T, url, nameRE string) (dataset, hdataset) {
	t.Helper()
	fd, hd := dataset{}, hdataset{}
	var sb labels.ScratchBuilder
	for _, ts := range readSeries(t, url, allOf(nameRE)) {
		k := ts.ToLabels(&sb, nil).String()
		for _, s := range ts.Samples {
			fd[k] = append(fd[k], sample{s.Timestamp, s.Value})
		}
		for _, h := range ts.Histograms {
			hs := histfile.Sample{T: h.Timestamp}
			if h.IsFloatHistogram() {
				hs.FH = h.ToFloatHistogram()
			} else {
				hs.H = h.ToIntHistogram()
			}
			hd[k] = append(hd[k], hs)
		}
	}
	return fd, hd
}

// dmCheckRead requires every acknowledged float sample and histogram, bit
// for bit, through remote read.
func (w *dmWriter) checkRead(t *testing.T, phase, url string) {
	t.Helper()
	fd, hd := readKinds(t, url, "dfm.*")
	sameData(t, phase+": floats", fd, w.floats)
	sameHists(t, phase+": histograms", hd, w.hists)
	t.Logf("%s: %d float samples and %d histograms acknowledged, all read back", phase, countSamples(w.floats), countHists(w.hists))
}

// checkStore opens the stopped server's store and requires every
// acknowledged item of every kind: floats, histograms, exemplars (all of
// them, since no series got more than the store keeps) and the metadata
// of the last acknowledged request.
func (w *dmWriter) checkStore(t *testing.T, dataDir string) {
	t.Helper()
	st, err := actastore.Open(dataDir, actastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", "dfm.*")
	ss := st.Select(ctx, math.MinInt64, math.MaxInt64, all)
	fd, hd := dataset{}, hdataset{}
	for ss.Next() {
		s := ss.At()
		k := s.Labels().String()
		for it := s.Iterator(); it.Next(); {
			ts, v := it.At()
			fd[k] = append(fd[k], sample{ts, v})
		}
		if hs, ok := s.(actastore.HistogramSeries); ok {
			for it := hs.HistogramIterator(); it.Next(); {
				h := it.At()
				if h.H != nil {
					h.H = h.H.Copy()
				} else {
					h.FH = h.FH.Copy()
				}
				hd[k] = append(hd[k], h)
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	ss.Close()
	sameData(t, "store: floats", fd, w.floats)
	sameHists(t, "store: histograms", hd, w.hists)

	sex, err := st.SelectExemplars(ctx, math.MinInt64, math.MaxInt64, all)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]actastore.Exemplar{}
	for _, se := range sex {
		got[se.Labels.String()] = se.Exemplars
	}
	nex := 0
	for key, want := range w.exs {
		g := got[key]
		nex += len(want)
		if len(g) != len(want) {
			t.Errorf("store: %s: %d exemplars, want %d", key, len(g), len(want))
			continue
		}
		for i := range want {
			if g[i].T != want[i].T || math.Float64bits(g[i].Value) != math.Float64bits(want[i].Value) || !labels.Equal(g[i].Labels, want[i].Labels) {
				t.Errorf("store: %s exemplar %d = %v, want %v", key, i, g[i], want[i])
				break
			}
		}
	}
	md, err := st.Metadata(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	gotMD := map[string]actastore.Metadata{}
	for _, m := range md {
		gotMD[m.Name] = m.Metadata
	}
	wantMD := map[string]actastore.Metadata{"dfm": {Type: model.MetricTypeGauge, Unit: "bytes", Help: fmt.Sprintf("floats %d", w.help)}}
	for j := range dmHistCases {
		wantMD[dmHistLabels(j).Get("__name__")] = actastore.Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: fmt.Sprintf("histograms %d", w.help)}
	}
	for name, want := range wantMD {
		if gotMD[name] != want {
			t.Errorf("store: metadata of %s = %+v, want %+v (of request %d, the last acknowledged)", name, gotMD[name], want, w.help)
		}
	}
	t.Logf("store after a restart: %d floats, %d histograms, %d exemplars and the metadata of %d families, all acknowledged ones there",
		countSamples(fd), countHists(hd), nex, len(wantMD))
}

// TestServeDiskFullMixed is TestServeDiskFull with Remote-Write 2.0
// requests holding every kind at once: float samples, native histograms,
// exemplars and metadata. While the disk is full they get 5xx (or 204
// while the WAL still has room); every item of every kind a 204
// acknowledged is read back after space returns and after a restart, and
// writes resume.
func TestServeDiskFullMixed(t *testing.T) {
	root, cfg := diskFullConfig(t)
	srv := serveInProcess(t, cfg)
	url := "http://" + cfg.Listen
	w := &dmWriter{client: &http.Client{Timeout: 30 * time.Second}, url: url, codes: map[string]map[int]int{},
		floats: dataset{}, hists: hdataset{}, exs: map[string][]actastore.Exemplar{}}

	for range 8 {
		if c := w.write("before", 5); c != http.StatusNoContent {
			t.Fatalf("mixed write before the disk fills: %d", c)
		}
	}
	time.Sleep(4500 * time.Millisecond) // histogram heads flush after 4 × max_head_age
	if c := w.write("before", 600); c != http.StatusNoContent {
		t.Fatalf("mixed write before the disk fills: %d", c)
	}

	filler := filepath.Join(root, "filler")
	testkit.FillDisk(t, filler)
	flushErrs0 := metricValue(t, url, "acta_store_flush_errors_total")
	// Five seconds: the histogram heads' age flush (4 s) comes due too.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if c := w.write("full", 5); c != http.StatusNoContent && c < 500 {
			t.Errorf("mixed write on a full disk: %d, want 5xx (or 204)", c)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fd, hd := readKinds(t, url, "dfm.*"); len(fd) == 0 || len(hd) == 0 {
		t.Errorf("read on a full disk: %d float and %d histogram series", len(fd), len(hd))
	}
	flushErrs := metricValue(t, url, "acta_store_flush_errors_total") - flushErrs0
	if flushErrs <= 0 {
		t.Errorf("no flush failed while the disk was full: the flush path went untested")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	for w.write("freed", 5) != http.StatusNoContent {
		if time.Since(resumed) > 30*time.Second {
			t.Fatalf("mixed writes did not resume within 30 s of freeing space: %v", w.codes["freed"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 8 {
		if c := w.write("after", 5); c != http.StatusNoContent {
			t.Fatalf("mixed write after space returned: %d", c)
		}
	}
	t.Logf("codes by phase: %v; %.0f flushes failed while full; writes resumed %s after freeing space",
		w.codes, flushErrs, time.Since(resumed).Round(time.Millisecond))
	full5xx := 0
	for c, n := range w.codes["full"] {
		if c >= 500 {
			full5xx += n
		}
	}
	if full5xx == 0 {
		t.Errorf("no 5xx while the disk was full: %v", w.codes["full"])
	}
	if n := len(w.exs[dmHistLabels(0).String()]); n < 10 || n > dmMaxExemplar {
		t.Errorf("%d exemplars acknowledged per series, want 10..%d (all of them checkable)", n, dmMaxExemplar)
	}

	w.checkRead(t, "live", url)
	srv.stop(t)
	validateKinds(t, cfg.DataDir)
	w.checkStore(t, cfg.DataDir)
	srv = serveInProcess(t, cfg)
	w.checkRead(t, "after restart", url)
	if c := w.write("restarted", 5); c != http.StatusNoContent {
		t.Fatalf("mixed write after the restart: %d", c)
	}
	srv.stop(t)
}

// validateKinds runs full Acta validation on every file of every kind
// (series, histograms, exemplars, metadata).
func validateKinds(t *testing.T, dataDir string) {
	t.Helper()
	files := 0
	for _, sub := range []string{"series", "histograms"} {
		filepath.WalkDir(filepath.Join(dataDir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".acta" {
				return err
			}
			files++
			if err := acta.Validate(p, acta.ValidateFull); err != nil {
				t.Errorf("file fails validation after the disk-full episode: %v", err)
			}
			return nil
		})
	}
	if files < dmFloatSeries+len(dmHistCases) {
		t.Fatalf("only %d files to validate", files)
	}
}
