package actastore

import (
	"math/rand/v2"
	"testing"
)

// TestRefTable runs random puts, gets and deletes against a Go map. The
// refs are drawn so that many share a shard, a home slot or a tag, and
// runs wrap around a shard's end, which is where backward-shift deletion
// can go wrong.
func TestRefTable(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 99))
		// Few shards and homes: seeds 0-2 crowd 2 shards with 64 low
		// words; the others spread over every shard.
		ref := func() uint64 {
			if seed < 3 {
				return uint64(rng.IntN(2))<<56 | uint64(rng.IntN(4))<<32 | uint64(rng.IntN(64))<<26 | uint64(rng.IntN(3))
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
				tab.delete(k)
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
				if (ms == nil) != (sh.tags[j] == 0) || ms != nil && (want[ms.ref] != ms || sh.tags[j] != tagOf(ms.ref) || shardOf(ms.ref) != i) {
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
		tab.delete(1<<63 | 12345)
		if tab.len() != len(want) {
			t.Fatalf("seed %d: len %d after deleting an absent ref, want %d", seed, tab.len(), len(want))
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
