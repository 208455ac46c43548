package actastore

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRefTable runs random puts, gets and deletes against a Go map. Seeds
// 0-2 draw from refs found to crowd two shards and the first and last
// 64th of their slots (by their mixed value), so runs wrap around a
// shard's end and deletions shift entries back across it, where
// backward-shift deletion can go wrong; the others spread over every
// shard.
func TestRefTable(t *testing.T) {
	crowd := crowdedRefs(3000)
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 99))
		ref := func() uint64 {
			if seed < 3 {
				return crowd[rng.IntN(len(crowd))]
			}
			return rng.Uint64()
		}
		var tab refTable
		want := map[uint64]*memSeries{}
		var keys []uint64
		for op := range 40_000 {
			switch r := rng.IntN(10); {
			case r < 5:
				k := ref()
				if want[k] == nil {
					ms := &memSeries{ref: k}
					tab.put(ms)
					want[k] = ms
					keys = append(keys, k)
				}
			case r < 8 && len(keys) > 0:
				i := rng.IntN(len(keys))
				k := keys[i]
				if other := (&memSeries{ref: k}); tab.delete(other) {
					t.Fatalf("seed %d op %d: deleted another series of ref %#x", seed, op, k)
				}
				if !tab.delete(want[k]) {
					t.Fatalf("seed %d op %d: delete(%#x) found nothing", seed, op, k)
				}
				delete(want, k)
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
			default:
				k := ref()
				if got := tab.get(k); got != want[k] {
					t.Fatalf("seed %d op %d: get(%#x) = %p, want %p", seed, op, k, got, want[k])
				}
			}
			if tab.len() != len(want) {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, tab.len(), len(want))
			}
		}
		for k, ms := range want {
			if got := tab.get(k); got != ms {
				t.Fatalf("seed %d: get(%#x) = %p, want %p", seed, k, got, ms)
			}
		}
		n := 0
		for i := range tab.shards {
			sh := &tab.shards[i]
			held := 0
			for j, ms := range sh.slots {
				if (ms == nil) != (sh.tags[j] == 0) || ms != nil && (want[ms.ref] != ms || sh.tags[j] != tagOf(mix(ms.ref)) || shardOf(mix(ms.ref)) != i) {
					t.Fatalf("seed %d: shard %d slot %d: tag %#x series %+v", seed, i, j, sh.tags[j], ms)
				}
				if ms != nil {
					held++
				}
			}
			if held != sh.n || (len(sh.tags) > 0 && sh.n*8 > len(sh.tags)*7) {
				t.Fatalf("seed %d: shard %d holds %d of %d slots, counts %d", seed, i, held, len(sh.tags), sh.n)
			}
			n += held
		}
		if n != len(want) {
			t.Fatalf("seed %d: %d held, want %d", seed, n, len(want))
		}
		// Deleting an absent ref changes nothing.
		if tab.delete(&memSeries{ref: 1<<63 | 12345}) {
			t.Fatalf("seed %d: deleted an absent ref", seed)
		}
		if tab.len() != len(want) {
			t.Fatalf("seed %d: len %d after deleting an absent ref, want %d", seed, tab.len(), len(want))
		}
	}
}

// crowdedRefs returns n refs whose mixed values fall in shards 0 and 1
// and in the first or last 64th of a shard's slots.
func crowdedRefs(n int) []uint64 {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []uint64
	for len(out) < n {
		r := rng.Uint64()
		k := mix(r)
		if lo := uint32(k); shardOf(k) < 2 && (lo < 1<<26 || lo >= math.MaxUint32-1<<26) {
			out = append(out, r)
		}
	}
	return out
}

// TestRefTableSpread holds what mix is for: refs that share their bits
// (100,000 sequential small refs, and as many that differ only in their
// top byte) spread over the shards and sit near their home slots as random
// refs do, instead of all probing from one slot.
func TestRefTableSpread(t *testing.T) {
	for name, ref := range map[string]func(i int) uint64{
		"sequential": func(i int) uint64 { return uint64(i + 1) },
		"top byte":   func(i int) uint64 { return uint64(i)<<56 | 12345 },
	} {
		var tab refTable
		n := 100_000
		if name == "top byte" {
			n = 256
		}
		for i := range n {
			tab.put(&memSeries{ref: ref(i)})
		}
		shards, dist := 0, 0
		for s := range tab.shards {
			sh := &tab.shards[s]
			if sh.n > 0 {
				shards++
			}
			c := len(sh.tags)
			for j, ms := range sh.slots {
				if ms != nil {
					dist += (j - home(mix(ms.ref), c) + c) % c
				}
			}
		}
		if mean := float64(dist) / float64(n); mean > 8 || shards < min(n/2, 200) {
			t.Fatalf("%s: %d refs in %d shards, %.1f slots from home on average; want at least %d shards and at most 8", name, n, shards, mean, min(n/2, 200))
		}
		for i := range n {
			if ms := tab.get(ref(i)); ms == nil || ms.ref != ref(i) {
				t.Fatalf("%s: get(%#x) = %v", name, ref(i), ms)
			}
		}
	}
}

// TestRefTableBytes holds the memory the table exists for: at most 17
// bytes a series (9 a slot, at least 7/12 full) at 200,000 and 1,000,000
// series, where a Go map held 25-34.
func TestRefTableBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a million series")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var tab refTable
	for _, n := range []int{200_000, 1_000_000} {
		for tab.len() < n {
			tab.put(&memSeries{ref: rng.Uint64()})
		}
		slots := 0
		for i := range tab.shards {
			slots += len(tab.shards[i].tags)
		}
		if per := float64(slots*9) / float64(n); per > 17 || per < 10 {
			t.Fatalf("%d series: %d slots, %.1f bytes a series, want 10-17", n, slots, per)
		}
	}
}

// BenchmarkRefTableGet looks up random refs of a million series, every
// one held, and reads the series found (as a lookup's caller does),
// against a Go map of the same.
func BenchmarkRefTableGet(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(3, 4))
	var tab refTable
	m := make(map[uint64]*memSeries)
	refs := make([]uint64, n)
	for i := range refs {
		ms := &memSeries{ref: rng.Uint64()}
		refs[i] = ms.ref
		tab.put(ms)
		m[ms.ref] = ms
	}
	order := rng.Perm(n)
	b.Run("refTable", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if ms := tab.get(refs[order[i%n]]); ms == nil || ms.created != 0 {
				b.Fatal("missing")
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if ms := m[refs[order[i%n]]]; ms == nil || ms.created != 0 {
				b.Fatal("missing")
			}
		}
	})
}
