package actastore

import (
	mbits "math/bits"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// index is the in-memory inverted index: label name → value → postings.
// Postings are series ids (dense, assigned in creation order), so appending
// a new series keeps every list sorted without inserting in the middle
// (postings.go: compressed). Its owner guards it: registry.mu,
// BucketView.mu, or a ReadOnly's one caller.
type index struct {
	postings map[string]map[string]*postings
	series   []*memSeries // by id
	syms     *symbols     // the series' labels
}

func newIndex() *index {
	return &index{postings: make(map[string]map[string]*postings), syms: newSymbols()}
}

// add gives s the next id and lset as its labels, and indexes them. It
// keeps no part of lset's memory (copies what it keeps).
func (ix *index) add(s *memSeries, lset labels.Labels) {
	s.id = uint32(len(ix.series))
	s.syms = ix.syms.intern(lset)
	ix.series = append(ix.series, s)
	lset.Range(func(l labels.Label) {
		vals := ix.postings[l.Name]
		if vals == nil {
			vals = make(map[string]*postings)
			ix.postings[strings.Clone(l.Name)] = vals
		}
		p := vals[l.Value]
		if p == nil {
			p = new(postings)
			vals[strings.Clone(l.Value)] = p
		}
		p.add(s.id)
	})
}

// remove takes s out of the postings. Its id stays taken (ids are
// positions in series) with a nil entry, so every list stays sorted; the
// slot costs a pointer per removed series until the next start-up.
func (ix *index) remove(s *memSeries) {
	ix.series[s.id] = nil
	for rest := s.syms; rest != ""; {
		var name, value string
		name, value, rest = ix.syms.next(rest)
		vals := ix.postings[name]
		if p := vals[value]; p == nil || !p.remove(s.id) {
			delete(vals, value)
			if len(vals) == 0 {
				delete(ix.postings, name)
			}
		}
	}
	ix.syms.release(s)
}

// labels is the label set of s, built with b (nil: a new builder), with
// the owner's lock held (read at least: symbols).
func (ix *index) labels(b *labels.ScratchBuilder, s *memSeries) labels.Labels {
	return ix.syms.labels(b, s.syms)
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
// Matchers that cannot match "" narrow the set first: equality matchers'
// postings (free to get) smallest first, so each intersection is as short
// as the answer so far (one series named by all its labels: one id looked
// up in the others); then the other matchers, each the union of the
// postings of the values it accepts. Each matcher that does match "" then
// removes the series carrying a value it rejects. Once the set is smaller
// than a matcher's label has values, the matcher is applied to the set's
// series' own labels instead of to every value (filterCheaper).
func (ix *index) selectIDs(ms []*labels.Matcher) []uint32 {
	var eq []*postings
	var rest []*labels.Matcher
	for _, m := range ms {
		switch {
		case m.Matches(""):
		case m.Type == labels.MatchEqual:
			p := ix.postings[m.Name][m.Value]
			if p == nil {
				return nil
			}
			eq = append(eq, p)
		default:
			rest = append(rest, m)
		}
	}
	slices.SortFunc(eq, func(a, b *postings) int { return cmpInt64(int64(a.n), int64(b.n)) })
	var res []uint32
	narrowed := false
	for _, p := range eq {
		if !narrowed {
			res, narrowed = p.appendTo(nil), true
		} else if res = p.intersectInto(nil, res); len(res) == 0 {
			return nil
		}
	}
	for _, m := range rest {
		switch {
		case !narrowed:
			res, narrowed = ix.union(m, true), true
		case ix.filterCheaper(len(res), m.Name):
			res = ix.filter(res, m)
		default:
			res = intersect(res, ix.union(m, true))
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
		if ix.filterCheaper(len(res), m.Name) {
			res = ix.filter(res, m)
		} else {
			res = subtract(res, ix.union(m, false))
		}
		if len(res) == 0 {
			return nil
		}
	}
	return res
}

// filterCheaper reports whether matching n series' own values of label
// name costs less than a union over its values: fewer series than it has
// values (each of which a union would match), or far fewer than carry it
// (whose postings a union would merge).
func (ix *index) filterCheaper(n int, name string) bool {
	vals := ix.postings[name]
	if n < len(vals) {
		return true
	}
	carry := 0
	for _, p := range vals {
		if carry += int(p.n); n*8 < carry {
			return true
		}
	}
	return false
}

// filter returns the ids of sorted ids whose series' value of m.Name (""
// when it lacks the label) m matches, in a new slice.
func (ix *index) filter(ids []uint32, m *labels.Matcher) []uint32 {
	out := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if m.Matches(ix.syms.get(ix.series[id].syms, m.Name)) {
			out = append(out, id)
		}
	}
	return out
}

// union merges the postings of m.Name's values whose m.Matches equals
// want, into a new slice.
func (ix *index) union(m *labels.Matcher, want bool) []uint32 {
	vals := ix.postings[m.Name]
	if m.Type == labels.MatchEqual && want {
		return vals[m.Value].appendTo(nil)
	}
	var lists []*postings
	total := 0
	for v, p := range vals {
		if m.Matches(v) == want {
			lists = append(lists, p)
			total += int(p.n)
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0].appendTo(nil)
	}
	if total < len(ix.series)/64 {
		out := make([]uint32, 0, total)
		for _, p := range lists {
			out = p.appendTo(out)
		}
		slices.Sort(out)
		return out // a label's values' postings are disjoint
	}
	// Many ids: set them in a bitmap of every id and read it in order,
	// instead of sorting them (every series by __name__=~".+": 10,000 ids
	// from 70 lists).
	bm := make([]uint64, (len(ix.series)+63)/64)
	for _, p := range lists {
		p.each(func(id uint32) { bm[id/64] |= 1 << (id % 64) })
	}
	out := make([]uint32, 0, total)
	for w, bits := range bm {
		for bits != 0 {
			out = append(out, uint32(w*64+mbits.TrailingZeros64(bits)))
			bits &= bits - 1
		}
	}
	return out
}

// intersect returns the ids in both sorted lists, in a new slice. When
// one is much shorter, each of its ids is looked for in the other by a
// binary search from the last one found (a series named by all its
// labels: one id against a job's thousands).
func intersect(a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	out := make([]uint32, 0, len(a))
	if len(a)*16 < len(b) {
		for _, id := range a {
			j, found := slices.BinarySearch(b, id)
			if found {
				out = append(out, id)
			}
			if b = b[j:]; len(b) == 0 {
				break
			}
		}
		return out
	}
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
			ix.syms.names(ix.series[id].syms, func(n string) { seen[n] = struct{}{} })
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
			if v := ix.syms.get(ix.series[id].syms, name); v != "" {
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
