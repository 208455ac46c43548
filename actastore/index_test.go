package actastore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// matchesAll is the reference: Prometheus's Matcher applied to each series'
// value of the label ("" when the series lacks it).
func matchesAll(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

func TestMatchersAgainstPrometheus(t *testing.T) {
	ix := newIndex()
	var all []labels.Labels
	add := func(ss ...string) {
		l := labels.FromStrings(ss...)
		all = append(all, l)
		ix.add(newMemSeries(uint64(len(all)), 0), l)
	}
	add("__name__", "up", "job", "api", "instance", "a:9090")
	add("__name__", "up", "job", "api", "instance", "b:9090", "env", "prod")
	add("__name__", "up", "job", "db", "instance", "c:9090", "env", "dev")
	add("__name__", "http_requests_total", "job", "api", "code", "200")
	add("__name__", "http_requests_total", "job", "api", "code", "500", "env", "prod")
	add("__name__", "http_requests_total", "job", "web", "code", "404")
	add("__name__", "node_cpu", "cpu", "0", "mode", "idle")
	add("__name__", "node_cpu", "cpu", "1", "mode", "user", "env", "Prod")
	add("__name__", "weird", "path", "a.b|c", "emoji", "✓")
	for i := 0; i < 40; i++ {
		add("__name__", "bulk", "i", fmt.Sprint(i), "mod", fmt.Sprint(i%4))
	}

	M := labels.MustNewMatcher
	cases := [][]*labels.Matcher{
		{M(labels.MatchEqual, "__name__", "up")},
		{M(labels.MatchEqual, "__name__", "nope")},
		{M(labels.MatchNotEqual, "__name__", "up")},
		{M(labels.MatchEqual, "env", "")},    // series without env
		{M(labels.MatchNotEqual, "env", "")}, // series with env
		{M(labels.MatchEqual, "env", "prod")},
		{M(labels.MatchNotEqual, "env", "prod")}, // includes series lacking env
		{M(labels.MatchRegexp, "env", "prod")},   // anchored: not "Prod"
		{M(labels.MatchRegexp, "env", "(?i)prod")},
		{M(labels.MatchRegexp, "env", "pro")},   // anchored: matches nothing
		{M(labels.MatchRegexp, "env", ".*")},    // everything
		{M(labels.MatchRegexp, "env", ".+")},    // has env
		{M(labels.MatchRegexp, "env", "prod|")}, // prod or no env
		{M(labels.MatchNotRegexp, "env", "prod|dev")},
		{M(labels.MatchNotRegexp, "env", "")},   // has env
		{M(labels.MatchNotRegexp, "env", ".*")}, // nothing
		{M(labels.MatchRegexp, "__name__", "http_.*"), M(labels.MatchNotEqual, "code", "200")},
		{M(labels.MatchRegexp, "__name__", ".+"), M(labels.MatchRegexp, "instance", "[ab]:.*")},
		{M(labels.MatchEqual, "job", "api"), M(labels.MatchEqual, "env", "")},
		{M(labels.MatchRegexp, "path", "a\\.b\\|c"), M(labels.MatchEqual, "emoji", "✓")},
		{M(labels.MatchRegexp, "path", "a.b|c")}, // "a.b|c" as regex: alternation
		{M(labels.MatchEqual, "__name__", "bulk"), M(labels.MatchRegexp, "i", "1.*"), M(labels.MatchNotEqual, "mod", "1")},
		{M(labels.MatchRegexp, "i", "3[0-9]|7"), M(labels.MatchNotRegexp, "mod", "[23]")},
		{M(labels.MatchEqual, "nolabel", "")},     // everything
		{M(labels.MatchNotEqual, "nolabel", "x")}, // everything
		{M(labels.MatchEqual, "nolabel", "x")},    // nothing
		{},                                        // no matchers: everything
	}
	for i, ms := range cases {
		var want []uint32
		for id, l := range all {
			if matchesAll(l, ms) {
				want = append(want, uint32(id))
			}
		}
		got := ix.selectIDs(ms)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("case %d %v: got %v, want %v", i, ms, got, want)
		}
	}
}

// indexFixture is 10,000 series shaped like make bench's: 70 metric names,
// 146 targets (instance) over 3 jobs, and a label unique to each series.
func indexFixture() (*index, []labels.Labels) {
	ix := newIndex()
	var all []labels.Labels
	for i := range 10_000 {
		target := i % 146
		l := labels.FromStrings("__name__", fmt.Sprintf("metric_%d", i%70), "instance", fmt.Sprintf("10.64.0.%d:8080", target),
			"job", []string{"node", "kubernetes-pods", "api"}[target%3], "series", fmt.Sprint(i))
		all = append(all, l)
		ix.add(newMemSeries(uint64(i+1), 0), l)
	}
	return ix, all
}

// indexQueries are make bench's shapes: one series named by all its
// labels, a job's targets by an alternation of instances, every series,
// and mixes with negative matchers.
func indexQueries(all []labels.Labels) map[string][]*labels.Matcher {
	M := labels.MustNewMatcher
	var ms []*labels.Matcher
	all[4321].Range(func(l labels.Label) { ms = append(ms, M(labels.MatchEqual, l.Name, l.Value)) })
	var insts []string
	for t := 1; t < 146; t += 3 {
		insts = append(insts, fmt.Sprintf(`10\.64\.0\.%d:8080`, t))
	}
	alt := strings.Join(insts, "|")
	return map[string][]*labels.Matcher{
		"one-series":   ms,
		"pods-by-inst": {M(labels.MatchEqual, "job", "kubernetes-pods"), M(labels.MatchRegexp, "instance", alt)},
		"name-and-inst": {M(labels.MatchEqual, "__name__", "metric_7"), M(labels.MatchRegexp, "instance", alt),
			M(labels.MatchNotEqual, "series", "7")},
		"all":          {M(labels.MatchRegexp, "__name__", ".+")},
		"name-not-job": {M(labels.MatchEqual, "__name__", "metric_3"), M(labels.MatchNotRegexp, "job", "api|node")},
		"series-empty": {M(labels.MatchEqual, "series", "17"), M(labels.MatchEqual, "absent", "")},
	}
}

// Every query shape selects what Prometheus's matchers select, series by
// series.
func TestSelectIDsQueryShapes(t *testing.T) {
	ix, all := indexFixture()
	for name, ms := range indexQueries(all) {
		var want []uint32
		for id, l := range all {
			if matchesAll(l, ms) {
				want = append(want, uint32(id))
			}
		}
		if got := ix.selectIDs(ms); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s: %d series, want %d (%v...)", name, len(got), len(want), want[:min(3, len(want))])
		}
	}
}

func BenchmarkSelectIDs(b *testing.B) {
	ix, all := indexFixture()
	qs := indexQueries(all)
	for _, name := range []string{"one-series", "pods-by-inst", "name-and-inst", "all", "name-not-job"} {
		ms := qs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = len(ix.selectIDs(ms))
			}
			b.ReportMetric(float64(n), "series")
		})
	}
}

// Random matcher sets over random series, some removed, select what
// Prometheus's matchers select: every path (intersections of lists of
// any length ratio, unions sorted or through the bitmap, filters of the
// set's own labels) against the reference.
func TestSelectIDsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 28))
	ix := newIndex()
	var all []labels.Labels
	var live []bool
	names := []string{"a", "b", "c", "d"}
	for i := range 3000 {
		var ss []string
		for k, n := range names {
			if rng.IntN(5) == 0 {
				continue // absent
			}
			card := []int{2, 10, 100, 3000}[k]
			ss = append(ss, n, fmt.Sprint(rng.IntN(card)))
		}
		ss = append(ss, "__name__", fmt.Sprint("m", i%7))
		l := labels.FromStrings(ss...)
		all = append(all, l)
		live = append(live, true)
		ms := newMemSeries(uint64(i+1), 0)
		ix.add(ms, l)
		if rng.IntN(10) == 0 {
			ix.remove(ms)
			live[i] = false
		}
	}
	types := []labels.MatchType{labels.MatchEqual, labels.MatchNotEqual, labels.MatchRegexp, labels.MatchNotRegexp}
	value := func(n string) string {
		switch rng.IntN(6) {
		case 0:
			return ""
		case 1:
			return fmt.Sprintf("%d|%d|%d", rng.IntN(10), rng.IntN(100), rng.IntN(3000))
		case 2:
			return fmt.Sprintf("%d.*", rng.IntN(10))
		case 3:
			return ".+"
		}
		if n == "__name__" {
			return fmt.Sprint("m", rng.IntN(8))
		}
		return fmt.Sprint(rng.IntN(12))
	}
	for q := range 2000 {
		var ms []*labels.Matcher
		for range 1 + rng.IntN(4) {
			n := append(names, "__name__", "absent")[rng.IntN(6)]
			ms = append(ms, labels.MustNewMatcher(types[rng.IntN(4)], n, value(n)))
		}
		var want []uint32
		for id, l := range all {
			if live[id] && matchesAll(l, ms) {
				want = append(want, uint32(id))
			}
		}
		if got := ix.selectIDs(ms); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("query %d %v: %d series, want %d", q, ms, len(got), len(want))
		}
	}
}
