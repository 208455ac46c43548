package actastore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
)

// admitStore is a store of n float series files (label i = 00..n-1, read
// in that order by a Select of all) of 2 samples each, with a reader
// cache of capacity.
func admitStore(t *testing.T, n, capacity int) *Store {
	t.Helper()
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: capacity, MaintenanceInterval: -1, Logger: quiet})
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	var batch []SeriesSamples
	for i := range n {
		batch = append(batch, SeriesSamples{Labels: admitLabels(i), Samples: []Sample{{T: 1000, V: float64(i)}, {T: 2000, V: float64(i) + 0.5}}})
	}
	mustAppend(t, s, batch)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	return s
}

func admitLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%02d", i))
}

// cacheDelta is what reads did to the reader cache's counters.
type cacheDelta struct{ hits, misses, refused, evictions int64 }

func (d cacheDelta) plus(e cacheDelta) cacheDelta {
	return cacheDelta{d.hits + e.hits, d.misses + e.misses, d.refused + e.refused, d.evictions + e.evictions}
}

// readCounted selects the series i (all of them in one Select, its
// lookahead reading a few files at once, when i < 0), checks that each
// has samples 2k, 2k+1 of value n.0, n.5 and returns what the reads did
// to the cache's counters.
func readCounted(t *testing.T, s *Store, c context.Context, i int) cacheDelta {
	t.Helper()
	rc := s.readers
	before := cacheDelta{rc.hits.Load(), rc.misses.Load(), rc.refused.Load(), rc.evictions.Load()}
	m := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	if i >= 0 {
		m = labels.MustNewMatcher(labels.MatchEqual, "i", fmt.Sprintf("%02d", i))
	}
	ss := s.Select(c, math.MinInt64, math.MaxInt64, m)
	series := 0
	for ss.Next() {
		n, err := strconv.Atoi(ss.At().Labels().Get("i"))
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for it := ss.At().Iterator(); it.Next(); k++ {
			ts, v := it.At()
			if want := float64(n) + 0.5*float64(k%2); ts != int64(k+1)*1000 || v != want {
				t.Fatalf("%s: sample %d is %d %v, want %d %v", ss.At().Labels(), k, ts, v, (k+1)*1000, want)
			}
		}
		if k == 0 || k%2 != 0 {
			t.Fatalf("%s: %d samples", ss.At().Labels(), k)
		}
		series++
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
	ss.Close()
	if series == 0 {
		t.Fatal("nothing read")
	}
	if open, b := rc.stats(); open > rc.maxOpen || (rc.maxBytes > 0 && b > rc.maxBytes) {
		t.Fatalf("%d readers of %d bytes open, bounds %d, %d", open, b, rc.maxOpen, rc.maxBytes)
	}
	return cacheDelta{rc.hits.Load() - before.hits, rc.misses.Load() - before.misses,
		rc.refused.Load() - before.refused, rc.evictions.Load() - before.evictions}
}

// scanEach reads series 0..n-1, one Select each: a cyclic scan in a
// fixed order.
func scanEach(t *testing.T, s *Store, c context.Context, n int) cacheDelta {
	t.Helper()
	var d cacheDelta
	for i := range n {
		d = d.plus(readCounted(t, s, c, i))
	}
	return d
}

// A scan of twice as many files as the cache holds, repeated for 25
// passes (the counts halved 9 times meanwhile), hits the C files cached
// in every pass (C/N of its reads), refuses the other C (read as often:
// a tie) and evicts nothing. The streamed reads' path (kept XOR chunks,
// held apart from the readers) builds every file's chunks in the first
// pass, from cached and refused readers alike, and opens nothing after;
// counting a file once a read as the plain path does.
func TestReaderCacheScanOfTwiceCapacity(t *testing.T) {
	const files, capacity, passes = 16, 8, 25
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunks=%v", chunked), func(t *testing.T) {
			s := admitStore(t, files, capacity)
			c := ctx
			outside := int64(files - capacity) // opens a pass of the files not cached
			if chunked {
				c = WithXORChunks(ctx)
			}
			if d := scanEach(t, s, c, files); d != (cacheDelta{0, capacity + outside, outside, 0}) {
				t.Fatalf("first pass: %+v, want %d misses filling the cache, %d refused", d, capacity, outside)
			}
			later := cacheDelta{capacity, outside, outside, 0}
			if chunked {
				later = cacheDelta{}
			}
			for pass := 2; pass <= passes; pass++ {
				if d := scanEach(t, s, c, files); d != later {
					t.Fatalf("pass %d: %+v, want %+v", pass, d, later)
				}
			}
			if h := s.readers.freq.halvings; h != 9 {
				t.Fatalf("%d halvings of the counts, want 9 (after 80 reads, then every 40)", h)
			}
			if _, hits, builds := s.readers.chunkStats(); chunked && (builds != files || hits != files*(passes-1)) {
				t.Fatalf("%d files' chunks built, %d hits over %d passes, want %d (each file's once) and %d", builds, hits, passes, files, files*(passes-1))
			}
		})
	}
}

// The same scan in one Select a pass: its lookahead reads a few files at
// once, so the order varies a little from pass to pass near the cache's
// edge and, where a halving left two files a count apart, the one
// outside can win over the one inside (a swap: one miss). No pass loses
// more than one hit; the swaps are rare.
func TestReaderCacheScanOfTwiceCapacityConcurrent(t *testing.T) {
	const files, capacity, passes = 16, 8, 40
	s := admitStore(t, files, capacity)
	readCounted(t, s, ctx, -1)
	var total cacheDelta
	for pass := 2; pass <= passes; pass++ {
		d := readCounted(t, s, ctx, -1)
		if d.hits < capacity-1 || d.evictions > 1 || d.hits+d.misses != files {
			t.Fatalf("pass %d: %+v, want at least %d hits and one eviction at most", pass, d, capacity-1)
		}
		total = total.plus(d)
	}
	if min := int64((passes-1)*capacity - 4); total.hits < min {
		t.Fatalf("%d hits over %d passes, want at least %d (of %d)", total.hits, passes-1, min, (passes-1)*capacity)
	}
}

// Once scans fill the cache, a file read again and again is cached at
// its second read (read more often than the victim) and hits after; the
// next scan still hits C files: the one evicted for it is refused (a
// tie with the next victim), it does not evict the next file the scan
// wants, which would evict the next, and so on.
func TestReaderCacheAdmitsFileReadAgain(t *testing.T) {
	const files, capacity = 16, 8
	s := admitStore(t, files, capacity)
	for range 3 {
		scanEach(t, s, ctx, files)
	}
	const hot = files - 1 // not cached: files 00..07 are
	for read, want := range []cacheDelta{
		{0, 1, 1, 0}, // read as often as the victim (3 times): refused
		{0, 1, 0, 1}, // read 4 times before: cached, 00 evicted
		{1, 0, 0, 0},
		{1, 0, 0, 0},
	} {
		if d := readCounted(t, s, ctx, hot); d != want {
			t.Fatalf("read %d of file %d: %+v, want %+v", read+1, hot, d, want)
		}
	}
	// 00 ties with 01 and is refused; 01..07 and the hot file hit.
	for pass := range 3 {
		if d := scanEach(t, s, ctx, files); d != (cacheDelta{capacity, capacity, capacity, 0}) {
			t.Fatalf("scan %d after: %+v, want %d hits, %d misses refused, no eviction", pass+1, d, capacity, capacity)
		}
	}
}

// Bounded by bytes: a new reader is cached only if it was read more often
// than each of the readers it would push out, here two.
func TestReaderCacheAdmitByBytes(t *testing.T) {
	const files = 8
	s := admitStore(t, files, 1000)
	// File 07 gets two more blocks: its reader holds more bytes.
	for k := range 2 {
		t0 := int64(3000 + 2000*k)
		mustAppend(t, s, []SeriesSamples{{Labels: admitLabels(7), Samples: []Sample{{T: t0, V: 7}, {T: t0 + 1000, V: 7.5}}}})
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	size := func(i int) int64 {
		r, err := acta.Open(seriesFilePath(s.dir, refOf(t, s, admitLabels(i)), 1000))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return readerIndexBytes(r)
	}
	one, big := size(0), size(7)
	if big <= one || big > 2*one {
		t.Fatalf("readers of %d and %d bytes: want the second bigger, at most twice the first", one, big)
	}
	s.readers.maxBytes = 4 * one
	if d := scanEach(t, s, ctx, files); d != (cacheDelta{0, files, 4, 0}) {
		t.Fatalf("first pass: %+v, want 8 misses, 4 refused", d)
	}
	for range 2 {
		if d := scanEach(t, s, ctx, files); d != (cacheDelta{4, 4, 4, 0}) {
			t.Fatalf("repeated pass: %+v, want 4 hits and 4 refused", d)
		}
	}
	// File 01 read 4 times more (7 in all), then a pass: 00 and 01 are
	// the least recently used, the two 07 would evict.
	for range 4 {
		readCounted(t, s, ctx, 1)
	}
	scanEach(t, s, ctx, files)
	var got []cacheDelta
	for range 6 {
		got = append(got, readCounted(t, s, ctx, 7))
	}
	// Reads of 07 before: 4 (ties with 00: refused), 5..8 (beat 00, not
	// 01's 8), 9: cached, both evicted.
	want := []cacheDelta{{0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("reads of file 07: %+v, want %+v", got, want)
	}
	if n, b := s.readers.stats(); n != 3 || b != 2*one+big {
		t.Fatalf("%d readers of %d bytes cached, want 3 of %d", n, b, 2*one+big)
	}
}

// The sketch counts each key up to 15, keys apart, and halves every count
// after sampleFactor × capacity counted reads.
func TestFreqSketch(t *testing.T) {
	s := newFreqSketch(8)
	if len(s.table) != minSketchWords || s.sample != 80 {
		t.Fatalf("%d words, sample %d; want %d, 80", len(s.table), s.sample, minSketchWords)
	}
	h := xxhash.Sum64String
	for range 5 {
		s.add(h("a"))
	}
	for range 30 {
		s.add(h("b"))
	}
	if a, b, c := s.estimate(h("a")), s.estimate(h("b")), s.estimate(h("c")); a != 5 || b != 15 || c != 0 {
		t.Fatalf("estimates a %d b %d c %d, want 5 15 0", a, b, c)
	}
	if s.adds != 20 { // b's reads at 15 are not counted
		t.Fatalf("%d adds, want 20", s.adds)
	}
	for i := range 60 {
		s.add(h(fmt.Sprint("k", i)))
	}
	// The 80th counted read halved everything: a 5 → 2, b 15 → 7.
	if a, b, adds := s.estimate(h("a")), s.estimate(h("b")), s.adds; a != 2 || b != 7 || adds != 40 {
		t.Fatalf("after halving: a %d b %d adds %d, want 2 7 40", a, b, adds)
	}
	if big := newFreqSketch(10_000); len(big.table) != 16384 {
		t.Fatalf("sketch of 10,000 readers: %d words, want 16384 (128 KiB)", len(big.table))
	}
	if huge := newFreqSketch(1 << 30); len(huge.table) != maxSketchWords {
		t.Fatalf("sketch of 2^30 readers: %d words, want %d", len(huge.table), maxSketchWords)
	}
}
