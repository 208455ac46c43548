package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// VerifyResult is the correctness check of one system: a random sample of
// series read back over the whole range and compared with what was
// generated.
type VerifyResult struct {
	Series        int     `json:"series"`
	Samples       int64   `json:"samples"`
	Mismatches    int     `json:"mismatched_series"`
	FirstMismatch string  `json:"first_mismatch,omitempty"`
	Tolerance     float64 `json:"relative_tolerance"` // 0: bit for bit
	MaxRelErr     float64 `json:"max_relative_error"`
	OK            bool    `json:"ok"`
}

// seriesMatchers selects exactly series i: every one of its labels.
func seriesMatchers(d *Dataset, i int) []matcher {
	var ms []matcher
	d.Labels(i).Range(func(l labels.Label) { ms = append(ms, matcher{Name: l.Name, Value: l.Value}) })
	return ms
}

// verify reads series idx back with rd and compares timestamps exactly and
// values bit for bit (tol 0) or within a relative tolerance.
func verify(d *Dataset, rd reader, idx []int, tol float64) VerifyResult {
	res := VerifyResult{Tolerance: tol}
	fail := func(i int, format string, args ...any) {
		res.Mismatches++
		if res.FirstMismatch == "" {
			res.FirstMismatch = d.Labels(i).String() + ": " + fmt.Sprintf(format, args...)
		}
	}
	for _, i := range idx {
		res.Series++
		want := d.SeriesSamples(i)
		set, _, err := rd(seriesMatchers(d, i), d.cfg.Start, d.End(), false)
		if err != nil {
			fail(i, "%v", err)
			continue
		}
		got := set[d.Labels(i).String()]
		res.Samples += int64(len(got))
		if len(got) != len(want) {
			fail(i, "read %d samples, generated %d", len(got), len(want))
			continue
		}
		for j := range want {
			g, w := got[j], want[j]
			if g.T != w.T {
				fail(i, "sample %d at %d ms, generated at %d ms", j, g.T, w.T)
				break
			}
			if math.Float64bits(g.V) == math.Float64bits(w.V) {
				continue
			}
			rel := math.Abs(g.V-w.V) / max(math.Abs(w.V), math.SmallestNonzeroFloat64)
			res.MaxRelErr = max(res.MaxRelErr, rel)
			if rel > tol {
				fail(i, "sample %d at %d ms: read %v (%#x), generated %v (%#x)", j, w.T, g.V, math.Float64bits(g.V), w.V, math.Float64bits(w.V))
				break
			}
		}
	}
	res.OK = res.Series > 0 && res.Mismatches == 0
	return res
}

// ReadResult is the latency of one kind of query, repeated.
type ReadResult struct {
	Query      string  `json:"query"`
	Reps       int     `json:"reps"`
	Series     int     `json:"series"`  // per query (the last one), as returned
	Samples    int64   `json:"samples"` // per query (the last one), as returned
	WantSeries int     `json:"want_series"`
	P50Ms      float64 `json:"p50_ms"`
	MaxMs      float64 `json:"max_ms"`
	Err        string  `json:"error,omitempty"`
	// Answer is the SHA-256 of a PromQL query's last answer (promql.go).
	Answer       string `json:"answer_sha256,omitempty"`
	rangeMs      int64
	samples      bool // ask for remote read's SAMPLES answer
	matcherSets  [][]matcher
	wantSeriesOf []int
}

// readPlan is the same set of queries for every system.
type readPlan []*ReadResult

// planReads picks the queries: reps random single series over the last
// hour and over the last 24 h (the whole simulated span when shorter), reps
// sets of whole pod targets adding up to at least 1,000 series over the
// last hour, and every series over the whole span (at most 3 times: it is
// the largest answer); the single series and every series over the whole
// span are asked once more as remote read's SAMPLES answer (the others ask
// for STREAMED_XOR_CHUNKS, as Prometheus does).
func planReads(d *Dataset, seed uint64, reps int) readPlan {
	rng := rand.New(rand.NewPCG(seed, 0x4ead))
	day := min(24*time.Hour, time.Duration(d.Scrapes())*d.cfg.Interval)
	span := time.Duration(d.Scrapes()) * d.cfg.Interval
	one := &ReadResult{Query: "1 series × 1 h", rangeMs: time.Hour.Milliseconds()}
	long := &ReadResult{Query: fmt.Sprintf("1 series × %s", fmtDur(day)), rangeMs: day.Milliseconds()}
	if day < 24*time.Hour {
		long.Query += " (whole span; 24 h asked)"
	}
	many := &ReadResult{Query: "1,000 series × 1 h", rangeMs: time.Hour.Milliseconds()}
	all := &ReadResult{Query: fmt.Sprintf("all %s series × %s (whole span)", fmtCount(d.NumSeries()), fmtDur(span)), rangeMs: span.Milliseconds()}
	for rep := range reps {
		i := rng.IntN(d.NumSeries())
		one.matcherSets = append(one.matcherSets, seriesMatchers(d, i))
		one.wantSeriesOf = append(one.wantSeriesOf, 1)
		i = rng.IntN(d.NumSeries())
		long.matcherSets = append(long.matcherSets, seriesMatchers(d, i))
		long.wantSeriesOf = append(long.wantSeriesOf, 1)
		var pods []int
		for _, ti := range rng.Perm(len(d.targets)) {
			if d.Labels(d.targets[ti].first).Get("job") == "kubernetes-pods" {
				pods = append(pods, ti)
			}
		}
		var insts []string
		n := 0
		for _, ti := range pods {
			if n >= 1000 {
				break
			}
			insts = append(insts, regexp.QuoteMeta(d.Labels(d.targets[ti].first).Get("instance")))
			n += d.targets[ti].count
		}
		many.matcherSets = append(many.matcherSets, []matcher{{Name: "job", Value: "kubernetes-pods"}, {Name: "instance", Value: strings.Join(insts, "|"), Re: true}})
		many.wantSeriesOf = append(many.wantSeriesOf, n)
		if rep < 3 {
			all.matcherSets = append(all.matcherSets, []matcher{{Name: "__name__", Value: ".+", Re: true}})
			all.wantSeriesOf = append(all.wantSeriesOf, d.NumSeries())
		}
	}
	samplesOf := func(q *ReadResult) *ReadResult {
		c := *q
		c.Query += ", SAMPLES"
		c.samples = true
		return &c
	}
	return readPlan{one, long, many, all, samplesOf(long), samplesOf(all)}
}

// run times every query of the plan against rd, after one untimed query so
// the first timing is not of opening files cold. It returns fresh results.
func (p readPlan) run(d *Dataset, rd reader) []ReadResult {
	var out []ReadResult
	for _, q := range p {
		r := ReadResult{Query: q.Query, Reps: len(q.matcherSets)}
		maxt := d.End() - 1
		mint := maxt - q.rangeMs + 1
		var lat []time.Duration
		for rep, ms := range q.matcherSets {
			if rep == 0 {
				rd(ms, mint, maxt, q.samples)
			}
			set, took, err := rd(ms, mint, maxt, q.samples)
			if errors.Is(err, errNoSuchRead) {
				r.Reps = 0 // left out of the table
				break
			}
			if err != nil {
				r.Err = err.Error()
				break
			}
			lat = append(lat, took)
			r.Series, r.Samples, r.WantSeries = len(set), 0, q.wantSeriesOf[rep]
			for _, s := range set {
				r.Samples += int64(len(s))
			}
			if r.Series != r.WantSeries && r.Err == "" {
				r.Err = fmt.Sprintf("query %d returned %d series, want %d", rep, r.Series, r.WantSeries)
			}
		}
		r.P50Ms = quantileMs(lat, 0.5)
		r.MaxMs = quantileMs(lat, 1)
		out = append(out, r)
	}
	return out
}

func fmtDur(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return fmt.Sprintf("%d min", d/time.Minute)
}
