package actastore

import "math/rand/v2"

// refTable maps series refs to their series: the registry's and a
// ReadOnly's byRef. Its owner's lock guards it.
//
// A Go map of uint64 to pointer held 26-34 bytes a series at a million
// series (16-byte slots and a control byte, 7/16 to 7/8 full). This table
// holds 9 bytes a slot, the pointer and a tag byte, 7/12 to 7/8 full:
// 10-16 bytes a series. The key is not stored: it is the series' own ref.
//
// Open addressing with linear probing. A probe reads the tag bytes, which
// lie side by side, and reads a series only when its tag matches (1 in 128
// others do), so a search stays a couple of cache lines long when the
// table is 7/8 full. A shard grows by half, not double, so that its load
// is not stuck near half for a count just below a power of two (a million
// is 0.95 × 2^20). The table is split into 256 shards by one byte of the
// mixed ref, so growing rehashes about 1/256 of the series under the owner's
// lock, not all of them at once.
//
// Where a ref goes is taken from the ref mixed with a seed drawn at start-up
// (mix), not from its bits: refs are label hashes (xxhash64, unseeded), so a
// writer could otherwise search offline for label sets that crowd one shard
// and home slot and make every lookup in it scan the crowd (a review's
// 20,000 crafted refs took 10 µs a lookup instead of 15 ns), and small
// sequential refs would all share shard 0, slot 0 and one tag. The mixed
// value's bits 56-63 pick the shard, bits 32-38 the tag, bits 0-31 the home
// slot. The seed is never stored: the key is always the series' own ref.
//
// Deleting is slower than a map's (about 1.1 µs against 0.4 at a million
// series): the entries after the hole are read to see whether they move
// back, a series read each. Series are deleted by retention and the delete
// API, far more rarely than they are looked up.
type refTable struct {
	shards [refShards]refShard
	n      int
}

const refShards = 256

type refShard struct {
	tags  []uint8 // 0: empty; else tagOf(mix(ref))
	slots []*memSeries
	n     int
}

// refSeed keys mix for this process.
var refSeed = rand.Uint64()

// mix spreads every bit of ref (xor with the seed, xorshift, multiply by
// 2^64 / golden ratio) over the bits shardOf, tagOf and home read.
func mix(ref uint64) uint64 {
	k := ref ^ refSeed
	k ^= k >> 32
	return k * 0x9e3779b97f4a7c15
}

// shardOf, tagOf and home take k = mix(ref).
func shardOf(k uint64) int { return int(k >> 56) }

func tagOf(k uint64) uint8 { return 0x80 | uint8(k>>32)&0x7f }

// home is the first slot of k in a shard of c slots (c > 0): the low 32
// bits scaled to [0, c) by a multiply, which needs no power-of-two size.
func home(k uint64, c int) int { return int(uint64(uint32(k)) * uint64(c) >> 32) }

// len is the number of series held.
func (t *refTable) len() int { return t.n }

// get returns the series of ref, or nil.
func (t *refTable) get(ref uint64) *memSeries {
	if sh, i := t.find(ref); i >= 0 {
		return sh.slots[i]
	}
	return nil
}

// find returns the shard of ref and the slot of its series, -1 when there
// is none.
func (t *refTable) find(ref uint64) (*refShard, int) {
	k := mix(ref)
	sh := &t.shards[shardOf(k)]
	c := len(sh.tags)
	if c == 0 {
		return sh, -1
	}
	tag := tagOf(k)
	for i := home(k, c); ; {
		switch sh.tags[i] {
		case 0:
			return sh, -1
		case tag:
			if sh.slots[i].ref == ref {
				return sh, i
			}
		}
		if i++; i == c {
			i = 0
		}
	}
}

// put adds ms under ms.ref, which must not be held yet.
func (t *refTable) put(ms *memSeries) {
	k := mix(ms.ref)
	sh := &t.shards[shardOf(k)]
	if (sh.n+1)*8 > len(sh.tags)*7 {
		sh.grow()
	}
	sh.insert(ms, k)
	sh.n++
	t.n++
}

// insert places ms, whose ref mixes to k, in the first empty slot from
// its home.
func (sh *refShard) insert(ms *memSeries, k uint64) {
	c := len(sh.tags)
	i := home(k, c)
	for sh.tags[i] != 0 {
		if i++; i == c {
			i = 0
		}
	}
	sh.tags[i], sh.slots[i] = tagOf(k), ms
}

// grow makes the shard half as large again (8 slots at first) and
// rehashes what it holds.
func (sh *refShard) grow() {
	old := sh.slots
	c := max(8, len(old)+len(old)/2)
	sh.tags, sh.slots = make([]uint8, c), make([]*memSeries, c)
	for _, ms := range old {
		if ms != nil {
			sh.insert(ms, mix(ms.ref))
		}
	}
}

// delete removes ms if it is the series held under its ref, and reports
// whether it was. The slots after it that probed past it move back (no
// tombstones), so no search stops early.
func (t *refTable) delete(ms *memSeries) bool {
	sh, i := t.find(ms.ref)
	if i < 0 || sh.slots[i] != ms {
		return false
	}
	c := len(sh.tags)
	sh.tags[i], sh.slots[i] = 0, nil
	sh.n--
	t.n--
	// i is the hole. An entry at j (later in the run) may fill it unless
	// its home lies cyclically in (i, j]: it would then be found before
	// reaching the hole's place.
	for j := (i + 1) % c; sh.tags[j] != 0; j = (j + 1) % c {
		h := home(mix(sh.slots[j].ref), c)
		if (i < j && i < h && h <= j) || (j < i && (i < h || h <= j)) {
			continue
		}
		sh.tags[i], sh.slots[i] = sh.tags[j], sh.slots[j]
		sh.tags[j], sh.slots[j] = 0, nil
		i = j
	}
	return true
}
