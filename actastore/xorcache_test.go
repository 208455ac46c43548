package actastore

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/rotation"
)

// selectParts returns every series' floats of a Select, and how many came
// as kept XOR chunks (decoded with chunkenc, as a remote-read client does).
func selectParts(t *testing.T, s *Store, chunked bool, mint, maxt int64) (map[string][]Sample, int) {
	t.Helper()
	c := ctx
	if chunked {
		c = WithXORChunks(ctx)
	}
	ss := s.Select(c, mint, maxt, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	defer ss.Close()
	out := map[string][]Sample{}
	chunks := 0
	for ss.Next() {
		ser := ss.At()
		var got []Sample
		if cs, ok := ser.(ChunkedSeries); ok && cs.FloatParts() != nil {
			last := int64(math.MinInt64)
			for _, p := range cs.FloatParts() {
				if (len(p.Chunks) > 0) == (len(p.Samples) > 0) {
					t.Fatalf("%s: a part with %d chunks and %d samples", ser.Labels(), len(p.Chunks), len(p.Samples))
				}
				got = append(got, p.Samples...)
				for _, ch := range p.Chunks {
					chunks++
					xc, err := chunkenc.FromData(chunkenc.EncXOR, ch.Data)
					if err != nil {
						t.Fatal(err)
					}
					if xc.NumSamples() != ch.Samples {
						t.Fatalf("chunk of %d samples says %d", xc.NumSamples(), ch.Samples)
					}
					it := xc.Iterator(nil)
					n := 0
					for it.Next() == chunkenc.ValFloat {
						ts, v := it.At()
						if n == 0 && ts != ch.MinT {
							t.Fatalf("chunk starts at %d, says %d", ts, ch.MinT)
						}
						got = append(got, Sample{T: ts, V: v})
						n++
					}
					if it.Err() != nil || got[len(got)-1].T != ch.MaxT {
						t.Fatalf("chunk: err %v, ends at %d, says %d", it.Err(), got[len(got)-1].T, ch.MaxT)
					}
				}
			}
			for _, smp := range got {
				if smp.T <= last {
					t.Fatalf("%s: parts out of order at %d after %d", ser.Labels(), smp.T, last)
				}
				last = smp.T
			}
		} else {
			it := ser.Iterator()
			for it.Next() {
				ts, v := it.At()
				got = append(got, Sample{T: ts, V: v})
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
		out[ser.Labels().String()] = got
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
	return out, chunks
}

func sameSamples(t *testing.T, what string, got, want map[string][]Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d series, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Fatalf("%s: %s: %d samples, want %d", what, k, len(g), len(w))
		}
		for i := range w {
			if g[i].T != w[i].T || math.Float64bits(g[i].V) != math.Float64bits(w[i].V) {
				t.Fatalf("%s: %s sample %d: %d %x, want %d %x", what, k, i, g[i].T, math.Float64bits(g[i].V), w[i].T, math.Float64bits(w[i].V))
			}
		}
	}
}

// A Select with WithXORChunks returns, bit for bit, what a plain one
// returns, over compacted files, flushed blocks, the head, samples
// flushed out of order into an older file, and ranges cutting chunks; and
// the second read takes the kept chunks. NaN payloads and stale markers
// survive the XOR chunks.
func TestXORChunkSelectMatchesSamples(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(10 * hour)
	s := openT(t, t.TempDir(), Options{BlockRows: 50, Rotation: rotation.Policy{Period: time.Duration(2 * hour * int64(time.Millisecond))},
		MaintenanceInterval: -1, Now: clk.Now})
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []uint64{0x7ff0000000000002, 0x7ff8000000000001, 0xfff0000000000000, 1}
	write := func(from, to int64) {
		var batch []SeriesSamples
		for i := range 6 {
			var ss []Sample
			for ts := from; ts < to; ts += 15000 {
				v := float64(rng.IntN(1000)) / 100
				if rng.IntN(40) == 0 {
					v = math.Float64frombits(specials[rng.IntN(len(specials))])
				}
				ss = append(ss, Sample{T: ts + int64(i), V: v})
			}
			batch = append(batch, SeriesSamples{Labels: labels.FromStrings("__name__", "m", "i", string(rune('a'+i))), Samples: ss})
		}
		if _, err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 5*hour) // three files, the last the newest
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Maintain(); err != nil {
		t.Fatal(err)
	}
	write(5*hour, 6*hour) // flushed blocks appended to the newest file
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	// In the head: 40 samples a series, under BlockRows, so no size-triggered
	// flush changes a file between the reads compared below (80 did, and
	// the second read then built the chunks of the file it flushed into).
	write(6*hour, 6*hour+10*60000)
	check := func(what string, wantChunks bool) {
		t.Helper()
		// The last two ranges hold no whole chunk of a file.
		for n, r := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, 6 * hour}, {hour + 7777, 5*hour + 1}, {2 * hour, 2 * hour}, {6*hour + 1000, math.MaxInt64}} {
			want, _ := selectParts(t, s, false, r[0], r[1])
			got, chunks := selectParts(t, s, true, r[0], r[1])
			sameSamples(t, what, got, want)
			if wantChunks && n < 3 && chunks == 0 {
				t.Fatalf("%s %v: no kept chunks used", what, r)
			}
		}
	}
	check("first read", false)
	_, hits0, builds := s.readers.chunkStats()
	check("second read", true)
	_, hits1, builds1 := s.readers.chunkStats()
	if builds == 0 || hits1 <= hits0 || builds1 != builds {
		t.Fatalf("builds %d then %d, hits %d then %d: the second read should only hit", builds, builds1, hits0, hits1)
	}
	// An old sample flushed into the oldest file, which must not come back
	// from its chunks kept before; and one overlapping the head.
	if _, err := s.Append(ctx, []SeriesSamples{{Labels: labels.FromStrings("__name__", "m", "i", "a"), Samples: []Sample{{T: 7, V: 42}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	got, _ := selectParts(t, s, true, 0, 10)
	if a := got[`{__name__="m", i="a"}`]; len(a) != 2 || a[1] != (Sample{T: 7, V: 42}) {
		t.Fatalf("after an out-of-order flush: %v", a)
	}
	check("after an out-of-order flush", true)
	if _, err := s.Maintain(); err != nil { // compaction rewrites that file
		t.Fatal(err)
	}
	check("after compaction", true)
}

// The kept chunks stay within MaxChunkCacheBytes; files beyond it are
// read as before, with the same samples.
func TestXORChunkCacheBound(t *testing.T) {
	s := openT(t, t.TempDir(), Options{BlockRows: 64, MaxChunkCacheBytes: 4 << 10, MaintenanceInterval: -1})
	var batch []SeriesSamples
	for i := range 40 {
		ss := make([]Sample, 300)
		for j := range ss {
			ss[j] = Sample{T: int64(j) * 15000, V: float64(j*i) + 0.5}
		}
		batch = append(batch, SeriesSamples{Labels: labels.FromStrings("__name__", "m", "i", string(rune('A'+i))), Samples: ss})
	}
	if _, err := s.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	want, _ := selectParts(t, s, false, math.MinInt64, math.MaxInt64)
	for range 3 {
		got, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64)
		sameSamples(t, "bounded", got, want)
		if chunks == 0 {
			t.Fatal("nothing kept")
		}
		if b, _, _ := s.readers.chunkStats(); b > 4<<10 {
			t.Fatalf("%d bytes of chunks kept, bound %d", b, 4<<10)
		}
	}
}

// Streamed-style reads (WithXORChunks) racing flushes, compaction,
// rotation, retention and deletions see every acknowledged sample, in
// order, with its value: the kept chunks go with the reader of a file
// that changes. Run with -race.
func TestConcurrentChunkReadsWhileFilesChange(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(hour - 1)
	s := openT(t, t.TempDir(), Options{BlockRows: 8, MaxHeadAge: 2 * time.Millisecond, WALSegmentSize: 8 << 10, MaxOpenFiles: 4,
		MaxOpenReaders: 16, MaxChunkCacheBytes: 16 << 10, Rotation: rotation.Policy{Period: 20 * time.Millisecond},
		MaintenanceInterval: 5 * time.Millisecond, Compaction: CompactionOptions{BlockRows: 1024},
		Retention: rotation.Retention{MaxAge: time.Hour}, Now: clk.Now, MinTimestamp: math.MinInt64})
	const series, steps = 6, 300
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stop)
		for k := range steps {
			var b Batch
			for i := range series {
				b.Add(labels.FromStrings("__name__", "c", "i", string(rune('0'+i))), []Sample{{T: int64(k), V: float64(k*10 + i)}}, nil, nil)
			}
			// Old data that retention deletes, and data deleted again.
			b.Add(labels.FromStrings("__name__", "old"), []Sample{{T: -2*hour - int64(k), V: 1}}, nil, nil)
			b.Add(labels.FromStrings("__name__", "del"), []Sample{{T: int64(k), V: 1}}, nil, nil)
			if _, err := s.Commit(ctx, &b); err != nil {
				t.Error(err)
				return
			}
			acked.Store(int64(k + 1))
			if k%7 == 0 {
				if err := s.FlushAll(); err != nil {
					t.Error(err)
					return
				}
			}
			if _, err := s.DeleteSeries(ctx, int64(k), int64(k), labels.MustNewMatcher(labels.MatchEqual, "__name__", "del")); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var reads, chunkReads atomic.Int64
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := acked.Load()
				ss := s.Select(WithXORChunks(ctx), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "c"))
				for ss.Next() {
					ser := ss.At()
					i := int(ser.Labels().Get("i")[0] - '0')
					var got []Sample
					if cs := ser.(ChunkedSeries); cs.FloatParts() != nil {
						chunkReads.Add(1)
						var err error
						if got, err = samplesOfParts(cs.FloatParts(), 0); err != nil {
							t.Error(err)
							return
						}
					} else {
						for it := ser.Iterator(); it.Next(); {
							ts, v := it.At()
							got = append(got, Sample{T: ts, V: v})
						}
					}
					for n, smp := range got {
						if smp.T != int64(n) || smp.V != float64(n*10+i) {
							t.Errorf("%s: sample %d is %v", ser.Labels(), n, smp)
							return
						}
					}
					if int64(len(got)) < before {
						t.Errorf("%s: %d samples, %d acknowledged before the select", ser.Labels(), len(got), before)
						return
					}
				}
				if err := ss.Err(); err != nil {
					t.Error(err)
					return
				}
				ss.Close()
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	b, hits, builds := s.readers.chunkStats()
	if b > 16<<10 {
		t.Errorf("%d bytes of chunks kept, bound %d", b, 16<<10)
	}
	if hits == 0 || builds == 0 || chunkReads.Load() == 0 {
		t.Errorf("kept chunks never used: %d builds, %d hits, %d series read as chunks", builds, hits, chunkReads.Load())
	}
	t.Logf("%d reads; chunks: %d builds, %d hits, %d series as chunks; stats %+v", reads.Load(), builds, hits, chunkReads.Load(), s.Stats())
}

// Chunks are built only by a read of a whole file of at most maxKeptRows
// rows; a read of part of it uses them once kept. Every answer is the
// plain Select's.
func TestXORChunkBuildOnlyWholeFileReads(t *testing.T) {
	s := openT(t, t.TempDir(), Options{BlockRows: 1 << 17, MaintenanceInterval: -1})
	big := make([]Sample, maxKeptRows+1)
	for j := range big {
		big[j] = Sample{T: int64(j) * 1000, V: float64(j % 77)}
	}
	small := big[:1000]
	if _, err := s.Append(ctx, []SeriesSamples{{Labels: labels.FromStrings("__name__", "big"), Samples: big},
		{Labels: labels.FromStrings("__name__", "small"), Samples: small}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	read := func(mint, maxt int64, wantChunks bool, wantBuilds int64) {
		t.Helper()
		want, _ := selectParts(t, s, false, mint, maxt)
		got, chunks := selectParts(t, s, true, mint, maxt)
		sameSamples(t, "read", got, want)
		if _, _, builds := s.readers.chunkStats(); (chunks > 0) != wantChunks || builds != wantBuilds {
			t.Fatalf("[%d, %d]: %d chunks handed out, %d builds; want chunks %v, %d builds", mint, maxt, chunks, builds, wantChunks, wantBuilds)
		}
	}
	read(5000, 900_000, false, 0)               // part of both files
	read(math.MinInt64, math.MaxInt64, true, 1) // whole: the small file's chunks
	read(5000, 900_000, true, 1)                // part, from the kept chunks
	read(math.MinInt64, math.MaxInt64, true, 1) // kept
	if got, _ := selectParts(t, s, true, 5000, 9000); len(got[`{__name__="big"}`]) != 5 {
		t.Fatalf("%d samples of the big file in [5000, 9000], want 5", len(got[`{__name__="big"}`]))
	}
}

// With StartTimeZeroSamples, whose zero samples Select adds at read time,
// no chunks are handed out: every answer comes from the samples path.
func TestXORChunkNotWithStartTimeZeroSamples(t *testing.T) {
	s := openT(t, t.TempDir(), Options{BlockRows: 64, MaintenanceInterval: -1, StartTimeZeroSamples: true})
	ss := make([]Sample, 500)
	for j := range ss {
		ss[j] = Sample{T: int64(j)*15000 + 1, V: float64(j)}
	}
	if _, err := s.Append(ctx, []SeriesSamples{{Labels: labels.FromStrings("__name__", "m"), Samples: ss}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	want, _ := selectParts(t, s, false, math.MinInt64, math.MaxInt64)
	for range 2 {
		got, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64)
		sameSamples(t, "zero samples on", got, want)
		if _, _, builds := s.readers.chunkStats(); chunks != 0 || builds != 0 {
			t.Fatalf("%d chunks handed out, %d builds, with StartTimeZeroSamples", chunks, builds)
		}
	}
}

// chunksRun hands out runs of whole chunks as capped sub-slices of the
// kept ones: the same chunks in order, the straddling ones cut to the
// range, and an append to a part cannot write into the kept slice.
func TestChunksRunSharesWholeChunks(t *testing.T) {
	ss := make([]Sample, 5*ChunkSamples)
	for i := range ss {
		ss[i] = Sample{T: int64(i) * 1000, V: float64(i)}
	}
	fc := encodeChunks(ss)
	kept := slices.Clone(fc.chunks)
	// From inside chunk 1 to inside chunk 3: chunk 2 whole.
	mint, maxt := ss[ChunkSamples+10].T, ss[3*ChunkSamples+5].T
	r, ok, err := chunksRun(fc, mint, maxt)
	if err != nil || !ok {
		t.Fatalf("chunksRun: ok %v, err %v", ok, err)
	}
	if len(r.parts) != 3 || len(r.parts[1].Chunks) != 1 || r.parts[1].Chunks[0].MinT != fc.chunks[2].MinT {
		t.Fatalf("parts %+v: want samples, chunk 2, samples", r.parts)
	}
	if c := r.parts[1].Chunks; cap(c) != len(c) {
		t.Fatalf("whole-chunk part has capacity %d for %d chunks: an append would overwrite kept chunks", cap(c), len(c))
	}
	_ = append(r.parts[1].Chunks, XORChunk{MinT: -1})
	if !slices.EqualFunc(fc.chunks, kept, func(a, b XORChunk) bool { return a.MinT == b.MinT && a.Samples == b.Samples }) {
		t.Fatal("an append to a part changed the kept chunks")
	}
	want := ss[ChunkSamples+10 : 3*ChunkSamples+6]
	if r.n != len(want) || r.first != want[0].T || r.last != want[len(want)-1].T {
		t.Fatalf("n %d first %d last %d, want %d %d %d", r.n, r.first, r.last, len(want), want[0].T, want[len(want)-1].T)
	}
	if got := r.parts[0].Samples; len(got) != ChunkSamples-10 || got[0] != want[0] {
		t.Fatalf("first part %d samples from %v", len(got), got[0])
	}
	// The whole file: one part, the kept slice itself.
	r, _, _ = chunksRun(fc, math.MinInt64, math.MaxInt64)
	if len(r.parts) != 1 || len(r.parts[0].Chunks) != 5 || &r.parts[0].Chunks[0] != &fc.chunks[0] || r.n != len(ss) {
		t.Fatalf("whole file: %d parts, n %d", len(r.parts), r.n)
	}
}
