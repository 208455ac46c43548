package actastore

import (
	"fmt"
	"slices"
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
		ix.add(newMemSeries(uint64(len(all)), l, 0))
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
