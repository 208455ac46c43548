package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// queryConfig flushes heads within a second, so every sample reaches the
// files soon after it is written.
const queryConfig = `
storage:
  block_rows: 50
  max_head_age: 1s
otlp:
  grpc:
    enabled: false
`

// startWith starts the server on a fresh data directory with config yaml.
func startWith(t *testing.T, bin, yaml string) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "acta.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	return start(t, bin, "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", data), data
}

// runTool runs a file-reading subcommand to completion.
func runTool(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, e.String())
	}
	return o.String(), e.String()
}

// jsonSample is one line of --json output.
type jsonSample struct {
	Labels map[string]string `json:"labels"`
	T      int64             `json:"t"`
	Bits   string            `json:"bits"`
}

// parseJSONSample reads one --json line; the value is taken from its bits
// (the "v" field is checked against them).
func parseJSONSample(t *testing.T, line string) (string, sample) {
	t.Helper()
	var js jsonSample
	var raw struct {
		V json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal([]byte(line), &js); err != nil {
		t.Fatalf("bad JSON line %q: %v", line, err)
	}
	json.Unmarshal([]byte(line), &raw)
	bits, err := strconv.ParseUint(strings.TrimPrefix(js.Bits, "0x"), 16, 64)
	if err != nil || len(js.Bits) != 18 {
		t.Fatalf("bad bits in %q", line)
	}
	v := math.Float64frombits(bits)
	if want := floatJSON(v, 64); string(raw.V) != want {
		t.Fatalf("line %q: v is %s, want %s for its bits", line, raw.V, want)
	}
	return labels.FromMap(js.Labels).String(), sample{js.T, v}
}

func parseJSONOutput(t *testing.T, out string) dataset {
	t.Helper()
	d := dataset{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		k, s := parseJSONSample(t, line)
		d[k] = append(d[k], s)
	}
	return d
}

// readMatching is remote read (SAMPLES) of ms over [mint, maxt].
func readMatching(t *testing.T, url string, ms []*labels.Matcher, mint, maxt int64) dataset {
	t.Helper()
	q, err := toQuery(mint, maxt, ms)
	if err != nil {
		t.Fatal(err)
	}
	out := dataset{}
	var sb labels.ScratchBuilder
	for _, ts := range readSeries(t, url, q) {
		k := ts.ToLabels(&sb, nil).String()
		for _, s := range ts.Samples {
			out[k] = append(out[k], sample{s.Timestamp, s.Value})
		}
	}
	return out
}

func toQuery(mint, maxt int64, ms []*labels.Matcher) (*prompb.Query, error) {
	q := &prompb.Query{StartTimestampMs: mint, EndTimestampMs: maxt}
	for _, m := range ms {
		typ := map[labels.MatchType]prompb.LabelMatcher_Type{labels.MatchEqual: prompb.LabelMatcher_EQ,
			labels.MatchNotEqual: prompb.LabelMatcher_NEQ, labels.MatchRegexp: prompb.LabelMatcher_RE,
			labels.MatchNotRegexp: prompb.LabelMatcher_NRE}[m.Type]
		q.Matchers = append(q.Matchers, &prompb.LabelMatcher{Type: typ, Name: m.Name, Value: m.Value})
	}
	return q, nil
}

// sameData compares two datasets sample by sample, bits included.
func sameData(t *testing.T, what string, got, want dataset) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d series, want %d", what, len(got), len(want))
	}
	for k, ws := range want {
		gs := got[k]
		if len(gs) != len(ws) {
			t.Errorf("%s: %s: %d samples, want %d", what, k, len(gs), len(ws))
			continue
		}
		for i := range ws {
			if gs[i].T != ws[i].T || math.Float64bits(gs[i].V) != math.Float64bits(ws[i].V) {
				t.Errorf("%s: %s sample %d = (%d, %#x), want (%d, %#x)", what, k, i,
					gs[i].T, math.Float64bits(gs[i].V), ws[i].T, math.Float64bits(ws[i].V))
				break
			}
		}
	}
}

func countSamples(d dataset) int {
	n := 0
	for _, s := range d {
		n += len(s)
	}
	return n
}

// TestQueryMatchesRemoteRead writes with remote write, waits until the heads
// are flushed, and checks that query prints exactly what remote read returns
// for the same selector and range, while the server runs.
func TestQueryMatchesRemoteRead(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, queryConfig)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	d, sets := genData(rand.New(rand.NewSource(12)), "q_metric", 4, 230, t0)
	send(t, p.url, d, sets, 40)

	// Query sees every sample at once (the WAL holds them); wait until the
	// heads are flushed, so the files are what it reads.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, stderr := runTool(t, bin, "query", "--data-dir", data, "--json", "q_metric")
		n := countSamples(parseJSONOutput(t, out))
		if n != countSamples(d) {
			t.Fatalf("query sees %d samples, want %d", n, countSamples(d))
		}
		if files, walOnly := summaryCounts(t, stderr, n, 0); walOnly == 0 && files == n {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d of %d samples only in the WAL after 30 s", walOnly, n)
		}
		time.Sleep(200 * time.Millisecond)
	}

	start, end := t0+10*15000, t0+200*15000
	cases := []struct{ sel, start, end string }{
		{`q_metric`, "", ""},
		{`q_metric{instance=~"host-[02]:.*"}`, time.UnixMilli(start).UTC().Format(time.RFC3339), strconv.FormatInt(end, 10)},
		{`{__name__="q_metric",instance!="host-1:9100",job="node"}`, strconv.FormatInt(start+1, 10), time.UnixMilli(end - 1).UTC().Format(time.RFC3339Nano)},
		{`q_metric{job="absent"}`, "", ""},
	}
	for _, c := range cases {
		args := []string{"query", "--data-dir", data, "--json"}
		mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
		if c.start != "" {
			args = append(args, "--start", c.start)
			mint, _ = parseTime(c.start)
		}
		if c.end != "" {
			args = append(args, "--end", c.end)
			maxt, _ = parseTime(c.end)
		}
		out, stderr := runTool(t, bin, append(args, c.sel)...)
		ms, err := parseSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		want := readMatching(t, p.url, ms, mint, maxt)
		sameData(t, c.sel, parseJSONOutput(t, out), want)
		summaryCounts(t, stderr, countSamples(want), 0)
	}

	// Text output: a labels line, then ms, time, value and bits per sample.
	out, stderr := runTool(t, bin, "query", "--data-dir", data, "--end", strconv.FormatInt(t0+15000, 10), `q_metric{instance="host-0:9100"}`)
	ws := d[sets[0].String()]
	want := sets[0].String() + "\n" +
		"  " + strconv.FormatInt(ws[0].T, 10) + "\t2026-03-01T12:00:00.000Z\t" + strconv.FormatFloat(ws[0].V, 'g', -1, 64) + "\t0x" + strconv.FormatUint(math.Float64bits(ws[0].V), 16) + "\n" +
		"  " + strconv.FormatInt(ws[1].T, 10) + "\t2026-03-01T12:00:15.000Z\t" + strconv.FormatFloat(ws[1].V, 'g', -1, 64) + "\t0x" + strconv.FormatUint(math.Float64bits(ws[1].V), 16) + "\n"
	if out != want {
		t.Errorf("text output:\n%s\nwant:\n%s", out, want)
	}
	if !regexp.MustCompile(`acta-remote query: newest: 2026-03-01T12:00:15.000Z \(\S+ old\)`).MatchString(stderr) {
		t.Errorf("stderr does not give the newest sample printed:\n%s", stderr)
	}
}

var summaryRE = regexp.MustCompile(`acta-remote query: (\d+) series, (\d+) samples and (\d+) native histograms from \S+: (\d+) in the series files, (\d+) only in the WAL so far`)

// summaryCounts checks query's summary line against the samples and
// histograms printed, and returns how many it says were in the files and
// only in the WAL.
func summaryCounts(t *testing.T, stderr string, samples, hists int) (files, walOnly int) {
	t.Helper()
	m := summaryRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary in query's stderr:\n%s", stderr)
	}
	n := make([]int, 6)
	for i := 1; i < 6; i++ {
		n[i], _ = strconv.Atoi(m[i])
	}
	if n[2] != samples || n[3] != hists || n[4]+n[5] != samples+hists {
		t.Errorf("summary %q, printed %d samples and %d histograms", m[0], samples, hists)
	}
	return n[4], n[5]
}

// TestQueryWritesNothing runs query and a short tail over a stopped store
// and checks that no file or directory changed.
func TestQueryWritesNothing(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, queryConfig)
	d, sets := genData(rand.New(rand.NewSource(3)), "w_metric", 2, 60, time.Now().Add(-time.Hour).UnixMilli())
	send(t, p.url, d, sets, 60)
	p.stop(t, syscall.SIGTERM)
	before := snapshotDir(t, data)
	out, _ := runTool(t, bin, "query", "--data-dir", data, "--json", "w_metric")
	sameData(t, "after stop", parseJSONOutput(t, out), d)
	tl := startTail(t, bin, "--data-dir", data, "--since", "2h", "--json", "w_metric")
	tl.waitSamples(t, countSamples(d))
	tl.stop(t)
	if after := snapshotDir(t, data); after != before {
		t.Errorf("data directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// snapshotDir lists every path under dir with its size and modification time.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var sb strings.Builder
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		sb.WriteString(path + " " + strconv.FormatInt(fi.Size(), 10) + " " + fi.ModTime().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(sb.String(), "\n"); n < 5 {
		t.Fatalf("only %d paths under %s", n, dir)
	}
	return sb.String()
}
