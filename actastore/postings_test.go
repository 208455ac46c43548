package actastore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A postings list holds exactly the ids added, in order, through every
// read (appendTo, each, intersectInto against the plain merge) and after
// removals, for lists short and long, dense (a target's consecutive ids)
// and sparse (differences of several varint bytes).
func TestPostingsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		n := r.IntN(3 * postingsSkipEvery * (1 + trial%4))
		maxGap := []uint32{1, 3, 300, 1 << 22}[trial%4]
		var p postings
		var ref []uint32
		id := uint32(r.IntN(5))
		for range n {
			p.add(id)
			ref = append(ref, id)
			id += 1 + uint32(r.Int64N(int64(maxGap)))
		}
		check := func(what string) {
			t.Helper()
			if got := p.appendTo(nil); !slices.Equal(got, ref) || int(p.n) != len(ref) {
				t.Fatalf("trial %d %s: appendTo gives %d ids (n %d), want %d", trial, what, len(got), p.n, len(ref))
			}
			var each []uint32
			p.each(func(id uint32) { each = append(each, id) })
			if !slices.Equal(each, ref) {
				t.Fatalf("trial %d %s: each differs", trial, what)
			}
			// Queries: some of the ids, some between and beyond them.
			var a []uint32
			for _, id := range ref {
				if r.IntN(8) == 0 {
					a = append(a, id)
				}
				if r.IntN(8) == 0 {
					a = append(a, id+1)
				}
			}
			a = append(a, 0, id+5)
			slices.Sort(a)
			a = slices.Compact(a)
			if got, want := p.intersectInto(nil, a), intersect(a, ref); !slices.Equal(got, want) {
				t.Fatalf("trial %d %s: intersectInto gives %d ids, want %d", trial, what, len(got), len(want))
			}
		}
		check("built")
		for range min(len(ref), 5) {
			i := r.IntN(len(ref))
			left := p.remove(ref[i])
			ref = slices.Delete(ref, i, i+1)
			if left != (len(ref) > 0) {
				t.Fatalf("trial %d: remove reports %v with %d left", trial, left, len(ref))
			}
			if p.remove(1<<31+7) != (len(ref) > 0) { // not held: nothing changes
				t.Fatalf("trial %d: removing an absent id", trial)
			}
			check("after removals")
		}
	}
}

// Adding an id that is not above every id held is a bug in the caller.
func TestPostingsAddOutOfOrderPanics(t *testing.T) {
	var p postings
	p.add(5)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic adding 5 after 5")
		}
	}()
	p.add(5)
}
