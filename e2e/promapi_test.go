package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// promAPI talks to one Prometheus's HTTP API.
type promAPI struct {
	name string
	base string // http://host:port
}

// series is one result series with its samples as Prometheus's JSON has them.
// Timestamps stay the API's text; the API writes values with the shortest
// representation that parses back to the same float64, so comparing the parsed
// bits compares the stored floats exactly (NaN payloads, such as the stale
// marker, never reach query results).
type series struct {
	labels  map[string]string
	samples []apiSample
}

// histogramPrefix marks a native histogram sample's value: the prefix, then
// the API's JSON for it, compacted, compared as text.
const histogramPrefix = "histogram:"

type apiSample struct {
	t string // seconds with millisecond decimals, e.g. 1764434400.123
	v string
}

// promTime formats a time the way Prometheus's API accepts it, exact to the ms.
func promTime(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// query runs an instant query at ts.
func (a promAPI) query(ctx context.Context, q string, ts time.Time) ([]series, error) {
	return a.get(ctx, "/api/v1/query", url.Values{"query": {q}, "time": {promTime(ts)}})
}

// queryRange runs a range query over [start, end] with the given step.
func (a promAPI) queryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]series, error) {
	return a.get(ctx, "/api/v1/query_range", url.Values{
		"query": {q}, "start": {promTime(start)}, "end": {promTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Data      json.RawMessage `json:"data"`
}

type apiData struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric     map[string]string   `json:"metric"`
		Value      []json.RawMessage   `json:"value"`      // vector: [t, "v"]
		Values     [][]json.RawMessage `json:"values"`     // matrix: [[t, "v"], ...]
		Histogram  []json.RawMessage   `json:"histogram"`  // vector: [t, {count, sum, buckets}]
		Histograms [][]json.RawMessage `json:"histograms"` // matrix: [[t, {...}], ...]
	} `json:"result"`
}

func (a promAPI) get(ctx context.Context, path string, params url.Values) ([]series, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", a.name, params.Get("query"), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", a.name, params.Get("query"), err)
	}
	var r apiResponse
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s %s: HTTP %s, cannot decode %.200q: %v", a.name, params.Get("query"), resp.Status, body, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s %s: HTTP %s: %s: %s", a.name, params.Get("query"), resp.Status, r.ErrorType, r.Error)
	}
	// A failing remote read does not fail the query: Prometheus answers from
	// what it has and adds a warning. An empty answer with a warning is a failure.
	if len(r.Warnings) > 0 {
		return nil, fmt.Errorf("%s %s: warnings: %s", a.name, params.Get("query"), strings.Join(r.Warnings, "; "))
	}
	var d apiData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, fmt.Errorf("%s %s: cannot decode data: %v", a.name, params.Get("query"), err)
	}
	if d.ResultType != "matrix" && d.ResultType != "vector" {
		return nil, fmt.Errorf("%s %s: result type %q, want matrix or vector", a.name, params.Get("query"), d.ResultType)
	}
	out := make([]series, 0, len(d.Result))
	for _, res := range d.Result {
		s := series{labels: res.Metric}
		if s.labels == nil {
			s.labels = map[string]string{}
		}
		pairs, hpairs := res.Values, res.Histograms
		if d.ResultType == "vector" {
			pairs, hpairs = nil, nil
			if res.Value != nil {
				pairs = [][]json.RawMessage{res.Value}
			}
			if res.Histogram != nil {
				hpairs = [][]json.RawMessage{res.Histogram}
			}
		}
		for _, p := range pairs {
			var v string // values are JSON strings: "1.5", "NaN", "+Inf"
			if len(p) != 2 || json.Unmarshal(p[1], &v) != nil {
				return nil, fmt.Errorf("%s %s: malformed sample %s", a.name, params.Get("query"), p)
			}
			s.samples = append(s.samples, apiSample{t: string(p[0]), v: v})
		}
		for _, p := range hpairs {
			var h bytes.Buffer
			if len(p) != 2 || json.Compact(&h, p[1]) != nil {
				return nil, fmt.Errorf("%s %s: malformed histogram sample %s", a.name, params.Get("query"), p)
			}
			s.samples = append(s.samples, apiSample{t: string(p[0]), v: histogramPrefix + h.String()})
		}
		if len(pairs) > 0 && len(hpairs) > 0 {
			// A series that changed between float and histogram samples: the
			// API lists the two kinds apart; put them back in time order.
			sort.SliceStable(s.samples, func(i, j int) bool {
				ti, _ := strconv.ParseFloat(s.samples[i].t, 64)
				tj, _ := strconv.ParseFloat(s.samples[j].t, 64)
				return ti < tj
			})
		}
		out = append(out, s)
	}
	return out, nil
}

// labelsString renders a label set canonically: sorted, {a="1", b="2"}.
func labelsString(ls map[string]string) string {
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", n, ls[n])
	}
	b.WriteByte('}')
	return b.String()
}

// diffSeries compares want and got series sets: the same label sets (after
// removing dropLabel=dropValue from got, and checking every got series had it)
// and, per series, the same samples in the same order, float bits equal. It
// returns at most max human-readable differences; none means equal.
func diffSeries(want, got []series, dropLabel, dropValue string, max int) []string {
	var diffs []string
	add := func(format string, args ...any) bool {
		if len(diffs) < max {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
		return len(diffs) < max
	}
	index := func(ss []series, drop bool) map[string]series {
		m := make(map[string]series, len(ss))
		for _, s := range ss {
			if drop && dropLabel != "" {
				ls := make(map[string]string, len(s.labels))
				for k, v := range s.labels {
					ls[k] = v
				}
				if v, ok := ls[dropLabel]; ok {
					if v != dropValue {
						add("series %s has %s=%q, want %q", labelsString(s.labels), dropLabel, v, dropValue)
					}
					delete(ls, dropLabel)
				}
				s = series{labels: ls, samples: s.samples}
			}
			k := labelsString(s.labels)
			if _, dup := m[k]; dup {
				add("series %s appears twice", k)
			}
			m[k] = s
		}
		return m
	}
	w, g := index(want, false), index(got, true)
	keys := make([]string, 0, len(w)+len(g))
	for k := range w {
		keys = append(keys, k)
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ws, inW := w[k]
		gs, inG := g[k]
		switch {
		case !inG:
			if !add("missing series %s (%d samples)", k, len(ws.samples)) {
				return diffs
			}
			continue
		case !inW:
			if !add("unexpected series %s (%d samples)", k, len(gs.samples)) {
				return diffs
			}
			continue
		}
		if d := diffSamples(ws.samples, gs.samples); d != "" {
			if !add("series %s: %s", k, d) {
				return diffs
			}
		}
	}
	return diffs
}

// diffSamples describes the first difference between two sample lists.
func diffSamples(want, got []apiSample) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		w, g := want[i], got[i]
		if w.t != g.t {
			return fmt.Sprintf("sample %d: timestamp %s, want %s (%d samples, want %d)", i, g.t, w.t, len(got), len(want))
		}
		wb, werr := strconv.ParseFloat(w.v, 64)
		gb, gerr := strconv.ParseFloat(g.v, 64)
		if werr != nil || gerr != nil {
			if w.v != g.v {
				return fmt.Sprintf("sample %d at %s: value %q, want %q", i, w.t, g.v, w.v)
			}
			continue
		}
		if math.Float64bits(wb) != math.Float64bits(gb) {
			return fmt.Sprintf("sample %d at %s: value %s (bits %#016x), want %s (bits %#016x)",
				i, w.t, g.v, math.Float64bits(gb), w.v, math.Float64bits(wb))
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d samples, want %d (first extra or missing at index %d)", len(got), len(want), min(len(want), len(got)))
	}
	return ""
}

func countSamples(ss []series) int {
	n := 0
	for _, s := range ss {
		n += len(s.samples)
	}
	return n
}

// scrapeMetric reads a Prometheus's own /metrics and returns the value of every
// sample of metric whose label text contains all of the given substrings,
// e.g. `remote_name="acta-rw1"`. Reading /metrics directly (not through a
// query) gives the value of this instant, not of the last scrape.
func scrapeMetric(ctx context.Context, base, metric string, contains ...string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var vals []float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		for _, c := range contains {
			if !strings.Contains(line, c) {
				continue lines
			}
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q: %v", line, err)
		}
		vals = append(vals, v)
	}
	return vals, sc.Err()
}
