package actastore

import (
	"context"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/xorchunk"
)

// A streamed remote read sends a series' floats as Prometheus XOR chunks.
// Decoding a file's Acta blocks to float64 and encoding them again as XOR
// is most of the CPU of a read of many series, and a file that does not
// change gives the same chunks every time: so the chunks of a file, once
// built, are kept, by path (xorcache_kept.go). The store invalidates a
// file's path before a flush, a compaction, a merge, a deletion or
// retention changes what reads see of it (readers.go), which drops its
// chunks too, and chunks are kept only when built from a reader opened
// after the last invalidation. Their bytes are bounded apart from the
// readers' (Options.MaxChunkCacheBytes), with the readers' admission rule:
// once the bound is reached, a file read no more often than what is kept
// is read as before (decoded per read) instead of pushing out chunks a
// query is cycling through: an LRU smaller than a wide query's working set
// would never hit.

// ChunkSamples is the number of samples in each XOR chunk Select hands
// out (the last of a file's may hold fewer): Prometheus's head chunk size,
// so a remote-read client sees the chunk sizes it is used to.
const ChunkSamples = 120

// XORChunk is one Prometheus XOR chunk (chunkenc.EncXOR bytes, as
// xorchunk writes them) of a series' float samples.
type XORChunk struct {
	MinT, MaxT int64 // ms, the first and last sample's timestamps
	Samples    int
	Data       []byte // shared: never modified
}

// FloatPart is a run of a series' float samples: XOR chunks, or samples
// (exactly one of the two is set).
type FloatPart struct {
	Chunks  []XORChunk
	Samples []Sample
}

// ChunkedSeries is a Series of a Select whose context came from
// WithXORChunks: FloatParts returns its float samples as parts in time
// order, each one's timestamps after the previous one's, together exactly
// the samples Iterator returns; nil when it has no chunks (read Iterator).
// Such a series carries no start timestamps of its floats (a streamed
// answer has no place for them), and a store with StartTimeZeroSamples
// hands out no chunks.
type ChunkedSeries interface {
	Series
	FloatParts() []FloatPart
}

type xorChunksKey struct{}

// WithXORChunks returns a context whose Selects hand out float samples as
// XOR chunks where a file's chunks are kept or can be (ChunkedSeries): what
// a streamed remote read sends.
func WithXORChunks(ctx context.Context) context.Context {
	return context.WithValue(ctx, xorChunksKey{}, true)
}

func wantsXORChunks(ctx context.Context) bool {
	v, _ := ctx.Value(xorChunksKey{}).(bool)
	return v
}

// fileChunks are a float file's samples (sorted, one per timestamp: the
// first stored wins, as readTrack merges them) as XOR chunks.
type fileChunks struct {
	chunks []XORChunk
	bytes  int64 // what they cost: data and headers
	// starts: the file holds start timestamps, which the chunks leave
	// out (plain reads then read the file: select_kept.go).
	starts bool
}

// chunkHeaderBytes is an XORChunk's own size.
const chunkHeaderBytes = 48

// buildFileChunks decodes every block of a float file and encodes its
// samples as XOR chunks of ChunkSamples. st counts what it fetched from
// the object store.
func buildFileChunks(r *acta.Reader, remote bool, st *readStats) (*fileChunks, error) {
	var runs [][]Sample
	starts := false
	// Start timestamps are left out: a streamed answer has no place for
	// them (Select does not hand out chunks with StartTimeZeroSamples).
	if _, _, _, err := readOpened(floats, r, remote, math.MinInt64, math.MaxInt64, st, func(run []Sample, sts []StartTime) error {
		runs = append(runs, run)
		starts = starts || len(sts) > 0
		return nil
	}); err != nil {
		return nil, err
	}
	fc := encodeChunks(mergeRuns(floats, runs))
	fc.starts = starts
	return fc, nil
}

// encodeChunks encodes sorted samples as XOR chunks in one buffer.
func encodeChunks(ss []Sample) *fileChunks {
	fc := &fileChunks{chunks: make([]XORChunk, 0, (len(ss)+ChunkSamples-1)/ChunkSamples)}
	// XOR takes 1-10 bytes a sample; grow from a guess of 2.
	buf := make([]byte, 0, 2*len(ss)+16)
	var enc xorchunk.Encoder
	for i := 0; i < len(ss); i += ChunkSamples {
		part := ss[i:min(i+ChunkSamples, len(ss))]
		start := len(buf)
		enc.Start(buf)
		for _, s := range part {
			enc.Append(s.T, s.V)
		}
		buf = enc.Finish(buf)
		fc.chunks = append(fc.chunks, XORChunk{MinT: part[0].T, MaxT: part[len(part)-1].T, Samples: len(part), Data: buf[start:len(buf):len(buf)]})
	}
	// Data slices point into buf, reallocated as it grew: re-slice them
	// into the final array so the file's chunks hold one allocation,
	// copied to its length when growing left much spare capacity (kept
	// for as long as the reader is: the bound counts capacity).
	if cap(buf)-len(buf) > len(buf)/8 {
		buf = append(make([]byte, 0, len(buf)), buf...)
	}
	off := 0
	for i := range fc.chunks {
		n := len(fc.chunks[i].Data)
		fc.chunks[i].Data = buf[off : off+n : off+n]
		off += n
	}
	fc.bytes = int64(cap(buf)) + chunkHeaderBytes*int64(len(fc.chunks))
	return fc
}

// maxKeptRows is the largest file whose chunks are built: one compacted
// block (a day of 15 s samples is 5,760), so that one huge file neither
// takes the bound alone nor costs its read a long encode.
const maxKeptRows = 1 << 16

// covers reports whether the chunks of r's file are worth building for a
// read of [mint, maxt]: the read takes all of the file (building costs it
// what reading costs, plus the copy), and the file holds at most
// maxKeptRows. A read of part of a file is served from chunks kept
// already, but does not build them: it would encode every sample of the
// file for the few it sends (a 1 h read of a 6 h file, 1,000 series at a
// time, got slower that way).
func covers(r *acta.Reader, mint, maxt int64) bool {
	var rows int64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, bi := range r.Blocks() {
		if bi.Rows == 0 {
			continue
		}
		rows += int64(bi.Rows)
		lo, hi = min(lo, bi.Min), max(hi, bi.Max)
	}
	return rows > 0 && rows <= maxKeptRows && mint <= lo && maxt >= hi
}

// cachedChunks returns the XOR chunks of the float file at path: kept
// ones (no reader opened), or, when the read of [mint, maxt] covers the
// file (covers), built now and kept if the bound and admission allow. nil
// without error: not kept and not built (the caller decodes the file as
// usual). Files in the object store are not built: a read there fetches
// only the blocks in its range, building would fetch them all.
func (c *readerCache) cachedChunks(path string, mint, maxt int64, st *readStats) (*fileChunks, error) {
	if c == nil || c.maxOpen <= 0 || c.maxChunkBytes <= 0 {
		return nil, nil
	}
	c.mu.Lock()
	if fc, ok := c.keptLocked(path); ok {
		c.mu.Unlock()
		c.chunkHits.Add(1)
		return fc, nil
	}
	h := xxhash.Sum64String(path)
	gen, reads, epoch := c.gens[h%uint64(len(c.gens))], c.freq.estimate(h), c.freq.halvings
	c.mu.Unlock()
	// Counted as a read only where no decoding read of the file follows
	// (which counts itself): a file read once a pass is counted once.
	cr, done, err := c.acquire(path, false)
	if err != nil {
		return nil, err
	}
	defer done()
	if cr.remote || !covers(cr.r, mint, maxt) {
		return nil, nil
	}
	c.mu.Lock()
	c.countLocked(cr)
	c.mu.Unlock()
	return c.buildKept(cr.r, path, h, gen, reads, epoch, st)
}

// buildKept builds the chunks of r's local file at path and keeps them
// when keepLocked allows (gen: the path's stripe's generation before r
// was acquired; reads, epoch: the file's count before this read). Chunks
// not kept serve the read that built them.
func (c *readerCache) buildKept(r *acta.Reader, path string, h, gen uint64, reads uint8, epoch uint64, st *readStats) (*fileChunks, error) {
	fc, err := buildFileChunks(r, false, st)
	if err != nil {
		return nil, err
	}
	c.chunkBuilds.Add(1)
	c.mu.Lock()
	c.keepLocked(path, h, gen, reads, epoch, fc)
	c.mu.Unlock()
	return fc, nil
}

// chunkStats is the bytes of XOR chunks kept and how many files' chunks
// were used and built.
func (c *readerCache) chunkStats() (bytes, hits, builds int64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chunkBytes, c.chunkHits.Load(), c.chunkBuilds.Load()
}

// chunkCacheMetrics are the kept chunks' gauges and counters; rc is read
// at each scrape.
func chunkCacheMetrics(rc func() *readerCache) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_kept_chunk_bytes", Help: "Bytes of XOR chunks of series files kept for streamed remote reads (bounded by Options.MaxChunkCacheBytes).",
		}, func() float64 { b, _, _ := rc().chunkStats(); return float64(b) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "acta_store_kept_chunk_hits_total", Help: "Series file reads of streamed remote reads served from kept XOR chunks.",
		}, func() float64 { _, h, _ := rc().chunkStats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "acta_store_kept_chunk_builds_total", Help: "Series files whose XOR chunks a streamed remote read or the warm-up after a start built (kept if the bound and admission allowed).",
		}, func() float64 { _, _, n := rc().chunkStats(); return float64(n) }),
	}
}
