package queryapi

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/acta-remote/acta-remote/actastore"
)

// readCorpus returns the expressions of testdata/corpus.promql.
func readCorpus(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/corpus.promql")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func testEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		NoStepSubqueryIntervalFn: func(int64) int64 { return DefaultSubqueryStep.Milliseconds() },
		EnableAtModifier:         true, EnableNegativeOffset: true,
	})
}

// TestEngineMatchesPrometheusTSDB evaluates the corpus with Prometheus's
// engine over the store and over Prometheus's TSDB holding the same
// samples: instant queries at several times (before the data, inside,
// around series' ends, after), range queries over the whole hour at two
// steps. The answers must be equal: the same series and, per point, the
// same timestamp, float bits and histogram (bit for bit), and the same
// warnings. The TSDB's series are created in label order, so the engine
// adds series up in the same order on both sides and even sums are exact.
// It runs twice: with every sample in the store's head, and after a flush
// with every sample read from the series' Acta files.
func TestEngineMatchesPrometheusTSDB(t *testing.T) {
	f := newFixture()
	st, db := openStores(t, f, actastore.Options{})
	t.Run("head", func(t *testing.T) { compareCorpus(t, newQueryable(st), db) })
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if s := st.Stats(); s.HeadSamples != 0 || s.FlushedSamples == 0 {
		t.Fatalf("after FlushAll: %+v", s)
	}
	t.Run("files", func(t *testing.T) { compareCorpus(t, newQueryable(st), db) })
}

func compareCorpus(t *testing.T, ours, theirs storage.Queryable) {
	ng := testEngine()
	ctx := context.Background()
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	instants := []int64{fixT0 - 60_000, fixT0, fixT0 + 7*fixStep + 3, fixT0 + 1_200_000, fixT0 + 1_800_000 + 500,
		fixT0 + 3_000_000, fixT0 + fixDuration, fixT0 + fixDuration + 400_000}
	ranges := []struct{ start, end, step int64 }{
		{fixT0, fixT0 + fixDuration, 30_000},
		{fixT0 - 120_000, fixT0 + fixDuration + 120_000, 60_000},
	}
	p := parser.NewParser(parser.Options{}) // Prometheus's defaults: no experimental functions
	asked, nonEmpty, failed := 0, 0, 0
	for _, q := range readCorpus(t) {
		expr, err := p.ParseExpr(q)
		isMatrix := err == nil && expr.Type() == parser.ValueTypeMatrix
		type run struct {
			name string
			mk   func(storage.Queryable) (promql.Query, error)
		}
		var runs []run
		for _, ts := range instants {
			runs = append(runs, run{fmt.Sprintf("instant@%d", ts), func(qb storage.Queryable) (promql.Query, error) {
				return ng.NewInstantQuery(ctx, qb, nil, q, at(ts))
			}})
		}
		if !isMatrix {
			for _, r := range ranges {
				runs = append(runs, run{fmt.Sprintf("range[%d,%d,%d]", r.start, r.end, r.step), func(qb storage.Queryable) (promql.Query, error) {
					return ng.NewRangeQuery(ctx, qb, nil, q, at(r.start), at(r.end), time.Duration(r.step)*time.Millisecond)
				}})
			}
		}
		for _, r := range runs {
			asked++
			want, wantWarn, wantErr := exec(r.mk, theirs)
			got, gotWarn, gotErr := exec(r.mk, ours)
			if wantErr != nil || gotErr != nil {
				// A failing query must fail alike.
				if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
					t.Errorf("%s %s: error %v, want %v", q, r.name, gotErr, wantErr)
				}
				failed++
				continue
			}
			if !ordered(q) {
				sortVector(want)
				sortVector(got)
			}
			if d := diffValues(want, got); d != "" {
				t.Errorf("%s %s: %s", q, r.name, d)
			}
			if wantWarn != gotWarn {
				t.Errorf("%s %s: warnings %q, want %q", q, r.name, gotWarn, wantWarn)
			}
			if !isEmpty(want) {
				nonEmpty++
			}
		}
	}
	t.Logf("%d queries, %d with a non-empty answer, %d failing alike", asked, nonEmpty, failed)
	if nonEmpty < asked/2 {
		t.Errorf("only %d of %d answers are non-empty: the comparison proves little", nonEmpty, asked)
	}
}

func exec(mk func(storage.Queryable) (promql.Query, error), qb storage.Queryable) (parser.Value, string, error) {
	qry, err := mk(qb)
	if err != nil {
		return nil, "", err
	}
	defer qry.Close()
	res := qry.Exec(context.Background())
	if res.Err != nil {
		return nil, "", res.Err
	}
	warns, infos := res.Warnings.AsStrings("", 0, 0)
	// Close hands the result's point slices back to the engine's pools:
	// keep a copy.
	return copyValue(res.Value), strings.Join(warns, "; ") + " | " + strings.Join(infos, "; "), nil
}

func copyValue(v parser.Value) parser.Value {
	switch v := v.(type) {
	case promql.Matrix:
		out := make(promql.Matrix, len(v))
		for i, s := range v {
			out[i] = promql.Series{Metric: s.Metric, Floats: slices.Clone(s.Floats), Histograms: slices.Clone(s.Histograms)}
		}
		return out
	case promql.Vector:
		return slices.Clone(v)
	}
	return v
}

// ordered: the expression's instant vector comes in a defined order. For
// the others the engine's order follows map iteration (histogram_quantile's
// groups, say), in Prometheus too, so vectors are compared sorted.
func ordered(q string) bool {
	return strings.HasPrefix(q, "sort(") || strings.HasPrefix(q, "sort_desc(")
}

func sortVector(v parser.Value) {
	if vec, ok := v.(promql.Vector); ok {
		slices.SortStableFunc(vec, func(a, b promql.Sample) int { return labels.Compare(a.Metric, b.Metric) })
	}
}

func isEmpty(v parser.Value) bool {
	switch v := v.(type) {
	case promql.Matrix:
		return len(v) == 0
	case promql.Vector:
		return len(v) == 0
	}
	return false
}

// diffValues describes the first difference between two query results,
// comparing floats and histograms bit for bit.
func diffValues(want, got parser.Value) string {
	if want.Type() != got.Type() {
		return fmt.Sprintf("result type %s, want %s", got.Type(), want.Type())
	}
	switch w := want.(type) {
	case promql.Matrix:
		g := got.(promql.Matrix)
		if len(w) != len(g) {
			return fmt.Sprintf("%d series, want %d: got %s, want %s", len(g), len(w), seriesNames(g), seriesNames(w))
		}
		for i := range w {
			if !labels.Equal(w[i].Metric, g[i].Metric) {
				return fmt.Sprintf("series %d is %s, want %s", i, g[i].Metric, w[i].Metric)
			}
			if d := diffPoints(w[i].Floats, g[i].Floats, w[i].Histograms, g[i].Histograms); d != "" {
				return fmt.Sprintf("series %s: %s", w[i].Metric, d)
			}
		}
	case promql.Vector:
		g := got.(promql.Vector)
		if len(w) != len(g) {
			return fmt.Sprintf("%d samples, want %d", len(g), len(w))
		}
		for i := range w {
			if !labels.Equal(w[i].Metric, g[i].Metric) || w[i].T != g[i].T || !sameFloat(w[i].F, g[i].F) || !sameHist(w[i].H, g[i].H) {
				return fmt.Sprintf("sample %d: %s @%d %v %v, want %s @%d %v %v", i, g[i].Metric, g[i].T, g[i].F, g[i].H, w[i].Metric, w[i].T, w[i].F, w[i].H)
			}
		}
	case promql.Scalar:
		g := got.(promql.Scalar)
		if w.T != g.T || !sameFloat(w.V, g.V) {
			return fmt.Sprintf("scalar %d %v, want %d %v", g.T, g.V, w.T, w.V)
		}
	case promql.String:
		if w != got.(promql.String) {
			return fmt.Sprintf("string %v, want %v", got, w)
		}
	}
	return ""
}

func diffPoints(wf, gf []promql.FPoint, wh, gh []promql.HPoint) string {
	if len(wf) != len(gf) || len(wh) != len(gh) {
		return fmt.Sprintf("%d floats and %d histograms, want %d and %d", len(gf), len(gh), len(wf), len(wh))
	}
	for i := range wf {
		if wf[i].T != gf[i].T || !sameFloat(wf[i].F, gf[i].F) {
			return fmt.Sprintf("float %d: @%d %v (%#x), want @%d %v (%#x)", i, gf[i].T, gf[i].F, math.Float64bits(gf[i].F), wf[i].T, wf[i].F, math.Float64bits(wf[i].F))
		}
	}
	for i := range wh {
		if wh[i].T != gh[i].T || !sameHist(wh[i].H, gh[i].H) {
			return fmt.Sprintf("histogram %d: @%d %v, want @%d %v", i, gh[i].T, gh[i].H, wh[i].T, wh[i].H)
		}
	}
	return ""
}

// sameFloat compares bits; the engine's NaNs compare equal whatever their
// payload only if their bits are equal too.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameHist compares histograms bit for bit (FloatHistogram.Equals). Their
// counter reset hints may differ: Prometheus's chunks rebuild them (the
// first sample of a chunk Unknown or CounterReset, the others
// NotCounterReset), the store returns them as remote write sent them; the
// API's JSON has no hint, and what the engine computes from them (resets,
// annotations) is compared.
func sameHist(a, b *histogram.FloatHistogram) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equals(b)
}

func seriesNames(m promql.Matrix) string {
	var s []string
	for _, x := range m {
		s = append(s, x.Metric.String())
	}
	return strings.Join(s, " ")
}
