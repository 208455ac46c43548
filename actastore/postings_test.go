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
		for k := range min(len(ref), 40) {
			i := r.IntN(len(ref))
			switch k % 4 {
			case 1:
				i = 0 // the first id
			case 2:
				i = len(ref) - 1 // the last
			case 3:
				// an id a skip entry holds, when there is one
				if len(p.skip) > 0 {
					e := p.skip[r.IntN(len(p.skip))]
					i, _ = slices.BinarySearch(ref, e.id)
				}
			}
			left := p.remove(ref[i])
			ref = slices.Delete(ref, i, i+1)
			if left != (len(ref) > 0) {
				t.Fatalf("trial %d: remove reports %v with %d left", trial, left, len(ref))
			}
			if p.remove(1<<31+7) != (len(ref) > 0) { // not held: nothing changes
				t.Fatalf("trial %d: removing an absent id", trial)
			}
			check("after removals")
			if len(ref) == 0 {
				break
			}
		}
	}
}

// The same id twice (a label set holding one pair twice, which only a
// damaged record could) is held once; an id below the newest is a bug in
// the caller.
func TestPostingsAddOrder(t *testing.T) {
	var p postings
	p.add(5)
	p.add(5)
	if got := p.appendTo(nil); !slices.Equal(got, []uint32{5}) {
		t.Fatalf("after adding 5 twice: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic adding 4 after 5")
		}
	}()
	p.add(4)
}

// BenchmarkPostingsRemove: one series' id out of a job's list of a
// million consecutive ids (retention or deletion), against the []uint32
// delete the lists were before.
func BenchmarkPostingsRemove(b *testing.B) {
	const n = 1 << 20
	b.Run("postings", func(b *testing.B) {
		var p postings
		for id := range uint32(n) {
			p.add(id)
		}
		id := uint32(n / 2)
		for b.Loop() {
			p.remove(id)
			id++
		}
	})
	b.Run("uint32-slice", func(b *testing.B) {
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i)
		}
		id := uint32(n / 2)
		for b.Loop() {
			ids = slices.DeleteFunc(ids, func(x uint32) bool { return x == id })
			id++
		}
	})
}
