package actastore

import "slices"

// mergeExemplars merges a series' exemplar file (old, oldest first) with
// what it keeps in memory (kept, newest last, of which the last unflushed
// are not flushed by this process), each exemplar once, the newest max. It
// returns them and how many of their newest the file does not hold: those
// from memory missing in old. A WAL replay after a kill between the
// exemplar flush and the WAL truncation, and a sender resending after a
// restart (an OTLP exporter's cumulative reservoir, a remote-write retry),
// bring back exemplars the file already holds; counting those as
// unflushed wrote them into the file again, and every later read listed
// them twice.
func mergeExemplars(old, kept []Exemplar, unflushed, max int) ([]Exemplar, int) {
	merged := make([]Exemplar, 0, len(old)+len(kept))
	has := func(x Exemplar) bool {
		return slices.ContainsFunc(merged, func(o Exemplar) bool { return sameExemplar(o, x) })
	}
	for _, x := range old {
		if !has(x) { // a file written before this check may hold repeats
			merged = append(merged, x)
		}
	}
	fresh := 0
	for i, x := range kept {
		if has(x) {
			continue
		}
		merged = append(merged, x)
		if i >= len(kept)-unflushed {
			fresh++ // kept's order is kept: the fresh ones end merged
		}
	}
	if n := len(merged); n > max {
		merged = slices.Delete(merged, 0, n-max)
	}
	return merged, min(fresh, len(merged))
}
