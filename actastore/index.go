package actastore

import (
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// index is the in-memory inverted index: label name → value → postings.
// Postings are series ids (dense, assigned in creation order), so appending
// a new series keeps every list sorted without inserting in the middle.
// The store's mu guards it.
type index struct {
	postings map[string]map[string][]uint32
	series   []*memSeries // by id
}

func newIndex() *index {
	return &index{postings: make(map[string]map[string][]uint32)}
}

// add gives s the next id and indexes its labels.
func (ix *index) add(s *memSeries) {
	s.id = uint32(len(ix.series))
	ix.series = append(ix.series, s)
	s.lset.Range(func(l labels.Label) {
		vals := ix.postings[l.Name]
		if vals == nil {
			vals = make(map[string][]uint32)
			ix.postings[l.Name] = vals
		}
		vals[l.Value] = append(vals[l.Value], s.id)
	})
}

// remove takes s out of the postings. Its id stays taken (ids are
// positions in series) with a nil entry, so every list stays sorted; the
// slot costs a pointer per removed series until the next start-up.
func (ix *index) remove(s *memSeries) {
	ix.series[s.id] = nil
	s.lset.Range(func(l labels.Label) {
		vals := ix.postings[l.Name]
		ids := slices.DeleteFunc(vals[l.Value], func(id uint32) bool { return id == s.id })
		if len(ids) == 0 {
			delete(vals, l.Value)
			if len(vals) == 0 {
				delete(ix.postings, l.Name)
			}
			return
		}
		vals[l.Value] = ids
	})
}

// live returns the series that were not removed.
func (ix *index) live() []*memSeries {
	out := make([]*memSeries, 0, len(ix.series))
	for _, s := range ix.series {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// selectIDs returns the sorted ids of the series matching every matcher,
// with Prometheus semantics: a matcher that matches the empty string also
// matches series without that label. No matchers select every series.
//
// Matchers that cannot match "" narrow the set first (union of the postings
// of the values they accept); each matcher that does match "" then removes
// the series carrying a value it rejects.
func (ix *index) selectIDs(ms []*labels.Matcher) []uint32 {
	var res []uint32
	narrowed := false
	for _, m := range ms {
		if m.Matches("") {
			continue
		}
		ids := ix.union(m, true)
		if !narrowed {
			res, narrowed = ids, true
		} else {
			res = intersect(res, ids)
		}
		if len(res) == 0 {
			return nil
		}
	}
	if !narrowed {
		res = make([]uint32, 0, len(ix.series))
		for i, s := range ix.series {
			if s != nil {
				res = append(res, uint32(i))
			}
		}
	}
	for _, m := range ms {
		if !m.Matches("") {
			continue
		}
		res = subtract(res, ix.union(m, false))
		if len(res) == 0 {
			return nil
		}
	}
	return res
}

// union merges the postings of m.Name's values whose m.Matches equals want.
// The returned slice may alias a postings list: callers must not modify it.
func (ix *index) union(m *labels.Matcher, want bool) []uint32 {
	vals := ix.postings[m.Name]
	if m.Type == labels.MatchEqual && want {
		return vals[m.Value]
	}
	var lists [][]uint32
	total := 0
	for v, ids := range vals {
		if m.Matches(v) == want {
			lists = append(lists, ids)
			total += len(ids)
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	out := make([]uint32, 0, total)
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// intersect returns the ids in both sorted lists, in a new slice.
func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, min(len(a), len(b)))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// subtract returns the ids of sorted a that are not in sorted b, in a new
// slice.
func subtract(a, b []uint32) []uint32 {
	if len(b) == 0 {
		return a
	}
	out := make([]uint32, 0, len(a))
	j := 0
	for _, id := range a {
		for j < len(b) && b[j] < id {
			j++
		}
		if j < len(b) && b[j] == id {
			continue
		}
		out = append(out, id)
	}
	return out
}

// labelNames returns the sorted names used by the given series ids, or by
// any series when ids is nil and all is true.
func (ix *index) labelNames(ids []uint32, all bool) []string {
	var names []string
	if all {
		for n, vals := range ix.postings {
			if len(vals) > 0 {
				names = append(names, n)
			}
		}
	} else {
		seen := make(map[string]struct{})
		for _, id := range ids {
			ix.series[id].lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
		}
		for n := range seen {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// labelValues returns the sorted values of name among the given ids, or
// among all series when all is true.
func (ix *index) labelValues(name string, ids []uint32, all bool) []string {
	var vals []string
	if all {
		for v := range ix.postings[name] {
			vals = append(vals, v)
		}
	} else {
		seen := make(map[string]struct{})
		for _, id := range ids {
			if v := ix.series[id].lset.Get(name); v != "" {
				seen[v] = struct{}{}
			}
		}
		for v := range seen {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	return vals
}
