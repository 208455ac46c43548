package actastore

// The reader cache's admission rule (TinyLFU: Einziger, Friedman, Manes,
// "TinyLFU: A Highly Efficient Cache Admission Policy", 2017). An LRU
// smaller than a query's working set never hits when the query cycles
// through its files: each open evicts the file the next query wants
// first. So once the cache is full a new file is cached only if it was
// read more often than each reader it would evict; otherwise it is read
// with a reader of its own (solo: opened, used, closed).
//
//   - A cyclic scan of N files over C readers, every file read once a
//     pass, keeps hitting the C it has: a file outside has been read as
//     often as the victims, and ties are refused.
//   - A file read again and again (one series, many queries) out-counts
//     the scan's files after a read or two and is cached, where a rule
//     of recency alone (the victim used within a minute) refused it
//     forever while scans kept the cache busy.
//   - The counts decay (halved every sampleFactor × capacity reads), so a
//     working set that moves on takes the cache over once it has been
//     read more than what the cache holds was lately, however long ago.
//
// The new file's count is compared without the read being decided: in a
// cyclic scan a cached file the pass has not reached yet is one read
// behind the file being read, and admitting the latter would evict the
// former, which would then evict the next one, and so on: one pass of
// misses after every admission. Compared before its read, the new file
// ties with it and is refused.
//
// A halving that falls inside a pass can leave the files read before it
// a count behind those read after; where the order of two such files
// varies (Select's lookahead opens a few at once) the one outside may win
// over the one inside: a swap, one miss, never a run of them.
//
// Counts are a count-min sketch of 4-bit counters (at most 15: enough to
// rank, and twice the counters for the memory of bytes); a hash collision
// only overestimates, which admits a file at worst (the victim it evicts
// misses once, then ties again).

// sampleFactor × capacity counted reads halve every count.
const sampleFactor = 10

// freqSketch estimates how often each file was read lately. Not safe for
// concurrent use (readerCache.mu guards it).
type freqSketch struct {
	table  []uint64 // 16 four-bit counters a word
	mask   uint64   // counters - 1 (a power of two)
	adds   int      // counted reads since the last halving (halved with it)
	sample int      // adds that trigger a halving
	// halvings counts the halvings: a count taken before one (a miss's,
	// weighed once its file is open) is halved as the counters were.
	halvings uint64
}

// Sketch size: 16 counters per reader, each file using 4 (as Caffeine's
// FrequencySketch), at least 1 KiB so a small cache does not collide
// often, at most 1 MiB (a cache above 131,072 readers shares counters).
const (
	minSketchWords = 128
	maxSketchWords = 1 << 17
)

func newFreqSketch(capacity int) *freqSketch {
	words := minSketchWords
	for words < capacity && words < maxSketchWords {
		words <<= 1
	}
	return &freqSketch{table: make([]uint64, words), mask: uint64(words)*16 - 1, sample: sampleFactor * max(capacity, 1)}
}

// at returns the word index and bit shift of hash h's i-th counter (i in
// 0..3): double hashing (Kirsch, Mitzenmacher), the odd step keeping the
// four apart.
func (s *freqSketch) at(h uint64, i int) (int, uint) {
	idx := (h + uint64(i)*(h>>32|1)) & s.mask
	return int(idx >> 4), uint(idx&15) * 4
}

// estimate is the count of hash h: the least of its counters.
func (s *freqSketch) estimate(h uint64) uint8 {
	m := uint8(15)
	for i := range 4 {
		w, sh := s.at(h, i)
		m = min(m, uint8(s.table[w]>>sh&15))
	}
	return m
}

// add counts a read of hash h, raising only its least counters
// (conservative update: the others already overestimate it).
func (s *freqSketch) add(h uint64) {
	m := s.estimate(h)
	if m == 15 {
		return
	}
	for i := range 4 {
		w, sh := s.at(h, i)
		if uint8(s.table[w]>>sh&15) == m {
			s.table[w] += 1 << sh
		}
	}
	if s.adds++; s.adds >= s.sample {
		s.halve()
	}
}

// halve ages every count (the low bit of each counter is dropped).
func (s *freqSketch) halve() {
	for i, w := range s.table {
		s.table[i] = w >> 1 & 0x7777777777777777
	}
	s.adds /= 2
	s.halvings++
}

// aged is count, an estimate taken when halvings was then, halved as
// the counters were since.
func (s *freqSketch) aged(count uint8, then uint64) uint8 {
	return count >> min(s.halvings-then, 4)
}
