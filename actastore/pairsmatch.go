package actastore

// The commit's known-series lookup (txn.resolveKnown): every series of a
// batch that the store already knows, found by its label pairs under one
// read lock of the registry and compared with the stored labels' symbols
// (symbols.pairsEqual), without building labels.

// resolveKnown finds, under one read lock, the known series of every
// entry of ss that gives LabelPairs (and no Labels): t.known[i] is ss[i]'s
// series or nil (new, unsorted, or given as Labels: resolve decides).
func (t *txn) resolveKnown(ss []SeriesData) {
	t.known = t.known[:0]
	r := t.s.reg
	r.mu.RLock()
	for i := range ss {
		d := &ss[i]
		var ms *memSeries
		if d.Labels.IsEmpty() && len(d.LabelPairs) > 0 {
			ms = r.lookupPairsLocked(d.LabelPairs)
		}
		t.known = append(t.known, ms)
	}
	r.mu.RUnlock()
}
