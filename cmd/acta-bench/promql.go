package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// PromQL over Prometheus's HTTP query API (/api/v1/query_range), timed on
// every system that serves it: rate(x[5m]) over about 1,000 counter series
// and over one, across the last 12 h of the data (the whole span when
// shorter) at a 60 s step, as a Grafana panel over that range asks. The
// answers of acta-remote and Prometheus must be identical (the same JSON
// bytes); VictoriaMetrics's MetricsQL computes rate differently, so its
// answer is only timed (with nocache=1: its rollup cache would answer
// the repetitions from memory).

// promqlQuery is one timed query.
type promqlQuery struct {
	name       string
	expr       string
	start, end int64 // ms
	step       time.Duration
	series     int // series the selector matches
}

const promqlSpan = 12 * time.Hour

// planPromQL picks the selectors: the counter name with the most series,
// narrowed by instance to just over 1,000 series, and one random counter
// series.
func planPromQL(d *Dataset, seed uint64) []promqlQuery {
	byName := map[string][]int{}
	for i := range d.NumSeries() {
		if n := d.Labels(i).Get(labels.MetricName); strings.HasSuffix(n, "_total") {
			byName[n] = append(byName[n], i)
		}
	}
	var best string
	for n, idx := range byName {
		if len(idx) > len(byName[best]) || len(idx) == len(byName[best]) && n < best {
			best = n
		}
	}
	if best == "" {
		return nil
	}
	// Whole instances, in order, until 1,000 series.
	perInst := map[string]int{}
	var insts []string
	for _, i := range byName[best] {
		in := d.Labels(i).Get("instance")
		if perInst[in] == 0 {
			insts = append(insts, in)
		}
		perInst[in]++
	}
	sort.Strings(insts)
	var pick []string
	n := 0
	for _, in := range insts {
		if n >= 1000 {
			break
		}
		pick = append(pick, regexp.QuoteMeta(in))
		n += perInst[in]
	}
	span := min(promqlSpan, time.Duration(d.Scrapes())*d.cfg.Interval)
	end := d.End() - 1
	start := end - span.Milliseconds()
	many := fmt.Sprintf(`rate(%s{instance=~%q}[5m])`, best, strings.Join(pick, "|"))
	rng := rand.New(rand.NewPCG(seed, 0x9e0))
	one := byName[best][rng.IntN(len(byName[best]))]
	var sel []string
	d.Labels(one).Range(func(l labels.Label) {
		if l.Name != labels.MetricName {
			sel = append(sel, fmt.Sprintf("%s=%q", l.Name, l.Value))
		}
	})
	single := fmt.Sprintf("rate(%s{%s}[5m])", best, strings.Join(sel, ","))
	return []promqlQuery{
		{name: fmt.Sprintf("PromQL rate(x[5m]) %s series × %s, step 60 s", fmtCount(n), fmtDur(span)), expr: many, start: start, end: end, step: time.Minute, series: n},
		{name: fmt.Sprintf("PromQL rate(x[5m]) 1 series × %s, step 60 s", fmtDur(span)), expr: single, start: start, end: end, step: time.Minute, series: 1},
	}
}

func fmtCount(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%s,%03d", fmtCount(n/1000), n%1000)
	}
	return fmt.Sprint(n)
}

// runPromQL times each query reps times (after one untimed run) against
// base's /api/v1/query_range, to the last byte of the answer, and keeps the
// last answer's SHA-256.
func runPromQL(client *http.Client, base string, qs []promqlQuery, reps int, noCache bool) []ReadResult {
	var out []ReadResult
	var ab answerBuf
	for _, q := range qs {
		r := ReadResult{Query: q.name, Reps: reps, WantSeries: q.series}
		v := url.Values{"query": {q.expr}, "start": {msToSeconds(q.start)}, "end": {msToSeconds(q.end)},
			"step": {fmt.Sprint(q.step.Seconds())}}
		if noCache {
			v.Set("nocache", "1")
		}
		var lat []time.Duration
		for rep := -1; rep < reps; rep++ {
			t0 := time.Now()
			resp, err := client.Get(base + "/api/v1/query_range?" + v.Encode())
			if err != nil {
				r.Err = err.Error()
				break
			}
			body, err := ab.read(resp.Body)
			resp.Body.Close()
			took := time.Since(t0)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, body)
			}
			if err != nil {
				r.Err = err.Error()
				break
			}
			if rep < 0 {
				continue // warm-up
			}
			lat = append(lat, took)
			var a struct {
				Data struct {
					Result []struct {
						Values [][2]any `json:"values"`
					} `json:"result"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &a); err != nil {
				r.Err = err.Error()
				break
			}
			r.Series, r.Samples = len(a.Data.Result), 0
			for _, s := range a.Data.Result {
				r.Samples += int64(len(s.Values))
			}
			sum := sha256.Sum256(body)
			r.Answer = hex.EncodeToString(sum[:])
		}
		if r.Err == "" && r.Series != r.WantSeries {
			r.Err = fmt.Sprintf("%d series in the answer, want %d", r.Series, r.WantSeries)
		}
		r.P50Ms = quantileMs(lat, 0.5)
		r.MaxMs = quantileMs(lat, 1)
		out = append(out, r)
	}
	return out
}

// promqlAgreement compares every system's PromQL answers with
// Prometheus's (VictoriaMetrics left out: MetricsQL's rate differs) and
// returns what differs, or nil.
func promqlAgreement(runs [][]*SystemResult) (checked int, diffs []string) {
	for _, run := range runs {
		var prom *SystemResult
		for _, r := range run {
			if r.Name == sysProm {
				prom = r
			}
		}
		if prom == nil {
			continue
		}
		for _, r := range run {
			if r == prom || r.Name == sysVM {
				continue
			}
			for _, q := range r.Reads {
				if q.Answer == "" {
					continue
				}
				for _, p := range prom.Reads {
					if p.Query == q.Query && p.Answer != "" {
						checked++
						if p.Answer != q.Answer {
							diffs = append(diffs, fmt.Sprintf("%s: %s answers differently from prometheus", q.Query, r.Name))
						}
					}
				}
			}
		}
	}
	return checked, diffs
}
