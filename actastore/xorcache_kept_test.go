package actastore

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// keptStore is a store of n float series files of the same two samples
// (so every file's chunks cost the same), readers bounded to readers,
// kept chunks to chunkBytes (0: the default).
func keptStore(t *testing.T, n, readers int, chunkBytes int64) *Store {
	t.Helper()
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: readers, MaxChunkCacheBytes: chunkBytes, MaintenanceInterval: -1, Logger: quiet})
	t.Cleanup(func() { s.Close() })
	var batch []SeriesSamples
	for i := range n {
		batch = append(batch, SeriesSamples{Labels: admitLabels(i), Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 1.5}}})
	}
	mustAppend(t, s, batch)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	return s
}

// streamOne reads series i streamed and returns its samples and how many
// came as kept chunks.
func streamOne(t *testing.T, s *Store, i int) ([]Sample, int) {
	t.Helper()
	ss := s.Select(WithXORChunks(ctx), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", fmt.Sprintf("%02d", i)))
	defer ss.Close()
	var got []Sample
	chunks := 0
	for ss.Next() {
		parts := ss.At().(ChunkedSeries).FloatParts()
		for _, p := range parts {
			chunks += len(p.Chunks)
		}
		ps, err := samplesOfParts(parts, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ps...)
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
	return got, chunks
}

// Chunks are kept apart from the readers: with two readers for eight
// files, a second streamed read of everything takes every file's chunks
// and opens nothing; a flush into a file and a deletion in another, whose
// readers were evicted long before, drop those files' chunks, and the
// next read has the new samples, bit for bit.
func TestKeptChunksOutliveReaders(t *testing.T) {
	s := keptStore(t, 8, 2, 0)
	want, _ := selectParts(t, s, false, math.MinInt64, math.MaxInt64)
	if got, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64); chunks != 8 {
		t.Fatalf("first streamed read: %d chunks, want 8", chunks)
	} else {
		sameSamples(t, "first", got, want)
	}
	misses := s.readers.misses.Load()
	got, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64)
	sameSamples(t, "second", got, want)
	if d := s.readers.misses.Load() - misses; d != 0 || chunks != 8 {
		t.Fatalf("second streamed read: %d files opened, %d chunks; want 0 and 8", d, chunks)
	}
	if open, _ := s.readers.stats(); open > 2 {
		t.Fatalf("%d readers open, bound 2", open)
	}

	// Series 5 gets a sample flushed into its file; series 6 loses one.
	mustAppend(t, s, []SeriesSamples{{Labels: admitLabels(5), Samples: []Sample{{T: 3000, V: math.Float64frombits(0x7ff0000000000002)}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteSeries(ctx, 1000, 1000, labels.MustNewMatcher(labels.MatchEqual, "i", "06")); err != nil {
		t.Fatal(err)
	}
	k5, k6 := admitLabels(5).String(), admitLabels(6).String()
	want[k5] = append(want[k5], Sample{T: 3000, V: math.Float64frombits(0x7ff0000000000002)})
	want[k6] = want[k6][1:]
	for pass := range 2 {
		got, _ := selectParts(t, s, true, math.MinInt64, math.MaxInt64)
		sameSamples(t, fmt.Sprintf("after the changes, pass %d", pass), got, want)
		plain, _ := selectParts(t, s, false, math.MinInt64, math.MaxInt64)
		sameSamples(t, "plain read after the changes", plain, want)
	}
}

// With the chunk bound below the files a cyclic scan reads, the chunks
// kept in the first pass stay: every later pass hits the same files and
// builds the others' chunks without keeping them (a tie). A file read
// more often than the scan's out-counts them and is kept, pushing out the
// least recently used.
func TestKeptChunksScanWiderThanBound(t *testing.T) {
	const files, fit, passes = 16, 6, 4
	one := keptStore(t, 1, 100, 0)
	streamOne(t, one, 0)
	per, _, _ := one.readers.chunkStats()
	bound := fit*per + per/2
	s := keptStore(t, files, 100, bound)
	read := func(i int) (hit bool) {
		_, h0, _ := s.readers.chunkStats()
		got, _ := streamOne(t, s, i)
		if len(got) != 2 || got[0] != (Sample{T: 1000, V: 1}) || got[1] != (Sample{T: 2000, V: 1.5}) {
			t.Fatalf("series %d: %v", i, got)
		}
		if kept, _, _ := s.readers.chunkStats(); kept > bound {
			t.Fatalf("%d bytes kept, bound %d", kept, bound)
		}
		_, h1, _ := s.readers.chunkStats()
		return h1 > h0
	}
	for pass := range passes {
		var hits []int
		for i := range files {
			if read(i) {
				hits = append(hits, i)
			}
		}
		want := []int{0, 1, 2, 3, 4, 5}
		if pass == 0 {
			want = nil
		}
		if !slices.Equal(hits, want) {
			t.Fatalf("pass %d: kept chunks hit for series %v, want %v", pass, hits, want)
		}
	}
	if _, _, builds := s.readers.chunkStats(); builds != fit+passes*(files-fit) {
		t.Fatalf("%d builds, want %d", builds, fit+passes*(files-fit))
	}
	// Series 15 was read once a pass, as the kept ones: a tie, refused;
	// read once more it out-counts them, is kept, and hits after.
	if read(15) || read(15) {
		t.Fatal("series 15 hit before it out-counted the kept files")
	}
	if !read(15) {
		t.Fatal("series 15, read more often than every kept file, was not kept")
	}
	if read(0) {
		t.Fatal("series 0, the least recently used, still kept")
	}
}

// A plain read (SAMPLES, PromQL) of files whose chunks are kept decodes
// the chunks: with one reader for four files, after a streamed read it
// opens nothing, and gives every sample bit for bit (the stale marker,
// other NaN payloads, ±Inf, -0, subnormals), over the whole span and cut
// to a range inside a chunk. A file holding start timestamps is read from
// the file, its start timestamps with it.
func TestPlainReadFromKeptChunks(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 1, MaintenanceInterval: -1, Logger: quiet})
	defer s.Close()
	odd := []float64{math.Float64frombits(0x7ff0000000000002), math.Float64frombits(0x7ff8000000000abc), math.Inf(1), math.Inf(-1),
		math.Copysign(0, -1), math.SmallestNonzeroFloat64, 1 << 53, 0.1}
	var batch []SeriesSamples
	for i := range 4 {
		ss := make([]Sample, 300)
		for j := range ss {
			ss[j] = Sample{T: int64(j) * 15000, V: float64(j*i) / 7}
			if j%9 == 0 {
				ss[j].V = odd[(i+j)%len(odd)]
			}
		}
		batch = append(batch, SeriesSamples{Labels: admitLabels(i), Samples: ss})
	}
	mustAppend(t, s, batch)
	sts := []StartTime{{T: 1000, ST: 500}}
	if _, err := s.Commit(ctx, &Batch{Series: []SeriesData{{Labels: stCounter, Samples: []Sample{{T: 1000, V: 3}}, SampleStarts: sts}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	ranges := [][2]int64{{math.MinInt64, math.MaxInt64}, {40 * 15000, 41*15000 + 1}, {-5, 15000 * 150}}
	var want []map[string][]Sample
	for _, r := range ranges {
		w, _ := selectParts(t, s, false, r[0], r[1])
		want = append(want, w)
	}
	if _, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64); chunks == 0 {
		t.Fatal("the streamed read kept no chunks")
	}
	misses := s.readers.misses.Load()
	_, hits0, _ := s.readers.chunkStats()
	for i, r := range ranges {
		got, _ := selectParts(t, s, false, r[0], r[1])
		sameSamples(t, fmt.Sprintf("plain read of %v", r), got, want[i])
	}
	_, hits, _ := s.readers.chunkStats()
	// Only the start-timestamp file, once a read, is opened.
	if d := s.readers.misses.Load() - misses; d > int64(len(ranges)) || hits-hits0 != int64(4*len(ranges)) {
		t.Fatalf("plain reads: %d files opened, %d kept-chunk hits; want at most %d and %d", d, hits-hits0, len(ranges), 4*len(ranges))
	}
	if g := selectStarts(t, s, math.MinInt64, math.MaxInt64)["st_counter"]; !slices.Equal(g.fsts, sts) || !equalBits(g.floats, []Sample{{T: 1000, V: 3}}) {
		t.Fatalf("start-timestamp series: %v, starts %v", g.floats, g.fsts)
	}
}

// Compaction and tier merges keep the chunks of files whose chunks were
// kept: after 45 days of day files are read streamed once, compacted and
// merged into week and month files, a streamed read and a plain one build
// nothing and open nothing, and give back what was sent, bit for bit. A
// file whose chunks were not kept gets none from its compaction.
func TestKeptChunksSurviveRewrites(t *testing.T) {
	clk := &fakeClock{}
	s := openT(t, t.TempDir(), tierOptions(clk))
	defer s.Close()
	w := ingestDays(t, s, clk, day0-45*day, day0+3*hour, 10*60*1000, 500)
	cold := labels.FromStrings("__name__", "cold")
	mustAppend(t, s, []SeriesSamples{{Labels: cold, Samples: []Sample{{T: day0 - 40*day, V: 1}, {T: day0 - 40*day + 1000, V: 2}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	w.add(cold, Sample{T: day0 - 40*day, V: 1}, Sample{T: day0 - 40*day + 1000, V: 2})
	// Every file's chunks, but the cold series' (read by itself later).
	ss := s.Select(WithXORChunks(ctx), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", "tier_.*"))
	for ss.Next() {
		if _, err := samplesOfParts(ss.At().(ChunkedSeries).FloatParts(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
	ss.Close()
	kept0, _, _ := s.readers.chunkStats()
	if kept0 == 0 {
		t.Fatal("the streamed read kept no chunks")
	}
	merged, compacted := maintainUntilIdle(t, s)
	if merged == 0 || compacted == 0 {
		t.Fatalf("%d merges, %d compactions", merged, compacted)
	}
	coldRef := refOf(t, s, cold)
	for _, st := range seriesFiles(t, s.dir, coldRef) {
		if s.readers.hasKept(seriesFilePath(s.dir, coldRef, st)) {
			t.Fatal("the cold series' compacted file has kept chunks")
		}
	}
	_, _, builds := s.readers.chunkStats()
	misses := s.readers.misses.Load()
	for _, chunked := range []bool{true, false} {
		got, _ := selectParts(t, s, chunked, math.MinInt64, math.MaxInt64)
		delete(got, cold.String())
		exp := want{}
		for k, v := range w {
			if k != cold.String() {
				exp[k] = v
			}
		}
		checkWant(t, got, exp)
	}
	// Only the cold file is opened (once: its chunks are built by the
	// streamed read, then serve the plain one).
	if _, _, b := s.readers.chunkStats(); b != builds+1 || s.readers.misses.Load() != misses+1 {
		t.Fatalf("reads after the rewrites built %d files' chunks and opened %d files, want the cold file's only", b-builds, s.readers.misses.Load()-misses)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

// Flushes of samples after a file's kept chunks extend them: reads after
// each flush open and build nothing and give every sample bit for bit,
// and the chunks stay at ChunkSamples but the last. A flush of older
// samples into the file drops them; the next streamed read of the whole
// file builds them again.
func TestKeptChunksFollowFlushes(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 1, MaintenanceInterval: -1, OutOfOrderWindow: 24 * time.Hour, Logger: quiet})
	defer s.Close()
	l := labels.FromStrings("__name__", "f")
	w := want{}
	next := int64(0)
	add := func(n int) {
		var ss []Sample
		for range n {
			v := float64(next) / 3
			if next%17 == 0 {
				v = math.Float64frombits(0x7ff0000000000002)
			}
			ss = append(ss, Sample{T: next * 15000, V: v})
			next++
		}
		mustAppend(t, s, []SeriesSamples{{Labels: l, Samples: ss}})
		w.add(l, ss...)
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	add(50)
	streamOne := func() int {
		got, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64)
		checkWant(t, want(got), w)
		return chunks
	}
	streamOne() // builds
	ref := refOf(t, s, l)
	path := seriesFilePath(s.dir, ref, seriesFiles(t, s.dir, ref)[0])
	for _, n := range []int{5, 130, 1, 64, 200} {
		add(n)
		_, _, builds := s.readers.chunkStats()
		misses := s.readers.misses.Load()
		streamOne()
		plain, _ := selectParts(t, s, false, math.MinInt64, math.MaxInt64)
		checkWant(t, want(plain), w)
		if _, _, b := s.readers.chunkStats(); b != builds || s.readers.misses.Load() != misses {
			t.Fatalf("after a flush of %d: %d builds, %d opens; want none", n, b-builds, s.readers.misses.Load()-misses)
		}
		fc := s.readers.keptFor(path)
		if fc == nil {
			t.Fatalf("after a flush of %d: no kept chunks", n)
		}
		total := 0
		for i, c := range fc.chunks {
			total += c.Samples
			if c.Samples != ChunkSamples && i < len(fc.chunks)-1 {
				t.Fatalf("chunk %d of %d holds %d samples", i, len(fc.chunks), c.Samples)
			}
		}
		if total != int(next) {
			t.Fatalf("kept chunks hold %d samples, want %d", total, next)
		}
	}
	// An older sample into the same file.
	old := Sample{T: 7*15000 + 1, V: 42}
	mustAppend(t, s, []SeriesSamples{{Labels: l, Samples: []Sample{old}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	ws := w[l.String()]
	ws = append(ws[:8:8], append([]Sample{old}, ws[8:]...)...)
	w[l.String()] = ws
	if s.readers.keptFor(path) != nil {
		t.Fatal("chunks kept after an out-of-order flush into the file")
	}
	_, _, builds := s.readers.chunkStats()
	streamOne()
	if _, _, b := s.readers.chunkStats(); b != builds+1 {
		t.Fatalf("%d builds after the out-of-order flush, want 1", b-builds)
	}
}
