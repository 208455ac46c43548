package actastore

import (
	"encoding/binary"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// registry is the set of series: refs, label sets, the label index, and
// what is not in the catalog yet. Its mu guards every field but num.
type registry struct {
	mu    sync.RWMutex
	byRef refTable
	// moved are series whose ref is not their label hash (a hash
	// collision gave them the next free ref), by label hash. Nearly
	// always empty: a lookup tries byRef.get(hash) first.
	moved map[uint64][]*memSeries
	ix    *index
	// pending are series not yet in the catalog; they are written there
	// before WAL truncation.
	pending []*memSeries
	// deleted are series the catalog says were removed, with when (ms). At
	// replay, a WAL definition of one created before that is the removed
	// series' (skipped), and samples without a live definition are
	// dropped: they were expired or deleted.
	deleted map[uint64]int64
	num     atomic.Int64
}

func newRegistry() *registry {
	return &registry{moved: make(map[uint64][]*memSeries),
		ix: newIndex(), deleted: make(map[uint64]int64)}
}

// addLocked registers a series under a known ref (from the catalog or the
// WAL); an existing ref is returned as is. Called with mu held or before
// the store is shared.
func (r *registry) addLocked(ref uint64, lset labels.Labels, created int64) *memSeries {
	if ms := r.byRef.get(ref); ms != nil {
		return ms
	}
	ms := newMemSeries(ref, created)
	r.byRef.put(ms)
	if h := hashLabels(appendCanonicalLabels(nil, lset)); h != ref {
		r.moved[h] = append(r.moved[h], ms)
	}
	r.ix.add(ms, lset)
	r.num.Add(1)
	return ms
}

// removeLocked takes a series out of the maps and the index. Called with
// mu held or before the store is shared.
func (r *registry) removeLocked(ms *memSeries) {
	if !r.byRef.delete(ms) {
		return
	}
	if h := hashLabels(r.ix.syms.appendCanonical(nil, ms.syms)); h != ms.ref {
		r.moved[h] = slices.DeleteFunc(r.moved[h], func(o *memSeries) bool { return o == ms })
		if len(r.moved[h]) == 0 {
			delete(r.moved, h)
		}
	}
	r.pending = slices.DeleteFunc(r.pending, func(o *memSeries) bool { return o == ms })
	r.ix.remove(ms)
	r.num.Add(-1)
}

// labels is the label set of ms, built with b (nil: a new builder), under
// the read lock (symbols).
func (r *registry) labels(b *labels.ScratchBuilder, ms *memSeries) labels.Labels {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ix.labels(b, ms)
}

// lookupLocked finds the series with exactly lset among those whose labels
// hash to h.
func (r *registry) lookupLocked(h uint64, lset labels.Labels) *memSeries {
	if ms := r.byRef.get(h); ms != nil && r.ix.syms.equal(ms.syms, lset) {
		return ms
	}
	for _, ms := range r.moved[h] {
		if r.ix.syms.equal(ms.syms, lset) {
			return ms
		}
	}
	return nil
}

// lookupPairsLocked finds a series by its label pairs as a receiver sent
// them (SeriesData.LabelPairs), without building labels: when they came
// sorted they are exactly the series' canonical encoding, so their hash
// is the series' ref (or, after a collision, a key of moved). The match is
// verified against the stored labels byte for byte, count included
// (symbols.pairsEqual). Unsorted pairs are not found here. Called with mu
// held (read).
func (r *registry) lookupPairsLocked(pairs []byte) *memSeries {
	h := hashLabels(pairs)
	if ms := r.byRef.get(h); ms != nil && r.ix.syms.pairsEqual(ms.syms, pairs) {
		return ms
	}
	for _, ms := range r.moved[h] {
		if r.ix.syms.pairsEqual(ms.syms, pairs) {
			return ms
		}
	}
	return nil
}

// pairsEqual reports whether a LabelPairs encoding holds exactly lset, in
// its order.
func pairsEqual(pairs []byte, lset labels.Labels) bool {
	n, k := binary.Uvarint(pairs)
	if k <= 0 || n != uint64(lset.Len()) {
		return false
	}
	pairs = pairs[k:]
	eq := true
	lset.Range(func(l labels.Label) {
		if !eq {
			return
		}
		var name, value []byte
		if name, pairs, eq = nextBytes(pairs); !eq {
			return
		}
		if value, pairs, eq = nextBytes(pairs); !eq {
			return
		}
		eq = string(name) == l.Name && string(value) == l.Value
	})
	return eq && len(pairs) == 0
}

func nextBytes(src []byte) ([]byte, []byte, bool) {
	l, k := binary.Uvarint(src)
	if k <= 0 || l > uint64(len(src)-k) {
		return nil, nil, false
	}
	return src[k : k+int(l)], src[k+int(l):], true
}

// newRefLocked picks the ref of a new series with label hash h: h itself,
// or after a collision the next value not taken (0 is never used).
func (r *registry) newRefLocked(h uint64) uint64 {
	ref := h
	for {
		if ref != 0 && r.byRef.get(ref) == nil {
			return ref
		}
		ref++
	}
}

// live is a snapshot of every series.
func (r *registry) live() []*memSeries {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ix.live()
}

// allChunk is how many series all copies under one hold of the read lock.
const allChunk = 512

// all yields every series registered when it is called that is still
// registered when its turn comes, in id order, without the snapshot
// live allocates: 8 bytes a series (8 MB at a million series) per call,
// several times a rotation interval by the background loops, all of it
// live at once and counted in the GC goal. It copies allChunk pointers at
// a time under the read lock and yields them outside it; series created
// meanwhile are not visited (as with a snapshot).
func (r *registry) all() iter.Seq[*memSeries] {
	return func(yield func(*memSeries) bool) {
		var buf [allChunk]*memSeries
		r.mu.RLock()
		end := len(r.ix.series)
		r.mu.RUnlock()
		for from := 0; from < end; {
			n := 0
			r.mu.RLock()
			for ; from < end && n < allChunk; from++ {
				if ms := r.ix.series[from]; ms != nil {
					buf[n] = ms
					n++
				}
			}
			r.mu.RUnlock()
			for _, ms := range buf[:n] {
				if !yield(ms) {
					return
				}
			}
		}
	}
}

// get returns the series of ref, or nil.
func (r *registry) get(ref uint64) *memSeries {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byRef.get(ref)
}

// resolver turns a SeriesData's labels into a series, creating it (not yet
// durable: the batch's WAL write makes it so) when new. It keeps its
// scratch across the series of one batch.
type resolver struct {
	r         *registry
	maxSeries int
	now       func() int64 // ms
	log       *slog.Logger
	canon     []byte
	sb        labels.ScratchBuilder
	sorted    int // label sets sorted into canonical order
}

// resolve returns the series of d. On refusal it returns the rejection
// reason and an error wrapping ErrInvalidSeries or ErrTooManySeries.
func (rs *resolver) resolve(d *SeriesData) (*memSeries, string, error) {
	lset := d.Labels
	if lset.IsEmpty() && len(d.LabelPairs) > 0 {
		rs.r.mu.RLock()
		ms := rs.r.lookupPairsLocked(d.LabelPairs)
		rs.r.mu.RUnlock()
		if ms != nil {
			return ms, "", nil
		}
		var err error
		if lset, err = labelsFromPairs(&rs.sb, d.LabelPairs); err != nil {
			return nil, ReasonInvalidSeries, err
		}
	}
	lset, sorted, err := canonicalLabels(lset)
	if err != nil {
		return nil, ReasonInvalidSeries, err
	}
	if sorted || (len(d.LabelPairs) > 0 && !pairsEqual(d.LabelPairs, lset)) {
		rs.sorted++
	}
	rs.canon = appendCanonicalLabels(rs.canon[:0], lset)
	h := hashLabels(rs.canon)
	rs.r.mu.RLock()
	ms := rs.r.lookupLocked(h, lset)
	rs.r.mu.RUnlock()
	if ms != nil {
		return ms, "", nil
	}
	r := rs.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if ms := r.lookupLocked(h, lset); ms != nil {
		return ms, "", nil
	}
	if rs.maxSeries > 0 && r.byRef.len() >= rs.maxSeries {
		return nil, ReasonTooManySeries, fmt.Errorf("%w: %d series stored, limit %d; refused %s", ErrTooManySeries, r.byRef.len(), rs.maxSeries, lset)
	}
	ref := r.newRefLocked(h)
	if ref != h {
		rs.log.Warn("series label hash collision", "hash", fmt.Sprintf("%016x", h), "ref", fmt.Sprintf("%016x", ref), "labels", lset.String())
	}
	ms = r.addLocked(ref, lset, rs.now()) // keeps none of lset's memory (index.add)
	r.pending = append(r.pending, ms)
	return ms, "", nil
}
