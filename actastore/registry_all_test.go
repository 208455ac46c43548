package actastore

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// registry.all visits, in id order, every series registered when it is
// called that is still registered when its chunk is copied, across chunk
// boundaries; series created during the walk are not visited; a caller
// breaking out stops it.
func TestRegistryAll(t *testing.T) {
	r := newRegistry()
	add := func(i int) *memSeries {
		ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.addLocked(hashLabels(appendCanonicalLabels(nil, ls)), ls, 0)
	}
	const n = 3*allChunk + 7
	var all []*memSeries
	for i := range n {
		all = append(all, add(i))
	}
	r.mu.Lock()
	r.removeLocked(all[5])        // before the walk: never visited
	r.removeLocked(all[allChunk]) // first of the second chunk
	r.mu.Unlock()
	var got []*memSeries
	for ms := range r.all() {
		if len(got) == 0 {
			add(n)      // created during the walk: not visited
			r.mu.Lock() // in a chunk not yet copied: not visited
			r.removeLocked(all[2*allChunk+1])
			r.mu.Unlock()
		}
		got = append(got, ms)
	}
	var want []*memSeries
	for i, ms := range all {
		if i != 5 && i != allChunk && i != 2*allChunk+1 {
			want = append(want, ms)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d series, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("visit %d is series id %d, want id %d", i, got[i].id, want[i].id)
		}
	}
	k := 0
	for range r.all() {
		if k++; k == allChunk+1 {
			break
		}
	}
	if k != allChunk+1 {
		t.Fatalf("stopped after %d, want %d", k, allChunk+1)
	}
}
