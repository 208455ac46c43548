package actastore

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// The commit's known-series lookup (txn.resolveKnown): every series of a
// batch that the store already knows, found by its label pairs under one
// read lock of the registry, compared with the stored labels as one block
// of bytes instead of label by label.
//
// Why the block compare is exact: Prometheus's default label set
// (stringlabels, model/labels/labels_stringlabels.go) keeps its labels as
// one string of name, value, name, ... each prefixed by its length in one
// byte when below 255; a LabelPairs encoding prefixes each by its uvarint
// length, one byte when below 128. When every length in the pairs is below
// 128 (countPairs' short), the two encodings of the same labels in the same order
// are the same bytes, and equal bytes parse as the same labels in both. A
// longer label, or another labels implementation, takes pairsEqual.

// stringLabels: the block compare applies to this build's labels: they
// are stringlabels, whose Labels is that one string and nothing else (the
// size says so; TestLabelsData holds labelsData to Bytes).
var stringLabels = labels.ImplementationName == "stringlabels" &&
	unsafe.Sizeof(labels.Labels{}) == unsafe.Sizeof("")

// labelsData is the one string of a stringlabels Labels, read in place.
// Labels.Bytes would copy it, and that copy of a series' cold labels was
// 5.5 % of the server's CPU during make bench's ingest. Only when
// stringLabels.
func labelsData(lset labels.Labels) string {
	return *(*string)(unsafe.Pointer(&lset))
}

// pairsMatch is pairsEqual, by one compare of lset's bytes when short
// (countPairs) and the labels are stringlabels.
func pairsMatch(pairs []byte, short bool, lset labels.Labels) bool {
	if short && stringLabels {
		return labelsData(lset) == string(pairs)
	}
	return pairsEqual(pairs, lset)
}

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
			ms = r.lookupPairsLocked(d.LabelPairs, &t.lbuf)
		}
		t.known = append(t.known, ms)
	}
	r.mu.RUnlock()
}
