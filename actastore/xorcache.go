package actastore

import (
	"context"
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/xorchunk"
)

// A streamed remote read sends a series' floats as Prometheus XOR chunks.
// Decoding a file's Acta blocks to float64 and encoding them again as XOR
// is most of the CPU of a read of many series, and a file that does not
// change gives the same chunks every time: so the chunks of a file, once
// built, are kept on its cached reader. They live and die with it: the
// store invalidates a file's reader before a flush, a compaction, a merge,
// a deletion or retention changes the file (readers.go), which drops the
// chunks too, and a reader holds one snapshot of its file, so chunks built
// from it are that snapshot's. The chunks' bytes are bounded apart from
// the readers' (Options.MaxChunkCacheBytes); once the bound is reached,
// further files are read as before (decoded per read) instead of pushing
// out chunks a query is cycling through: an LRU smaller than a wide
// query's working set would never hit.

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
}

// chunkHeaderBytes is an XORChunk's own size.
const chunkHeaderBytes = 48

// buildFileChunks decodes every block of a float file and encodes its
// samples as XOR chunks of ChunkSamples. st counts what it fetched from
// the object store.
func buildFileChunks(r *acta.Reader, remote bool, st *readStats) (*fileChunks, error) {
	var runs [][]Sample
	// Start timestamps are left out: a streamed answer has no place for
	// them (Select does not hand out chunks with StartTimeZeroSamples).
	if _, _, _, err := readOpened(floats, r, remote, math.MinInt64, math.MaxInt64, st, func(run []Sample, _ []StartTime) error {
		runs = append(runs, run)
		return nil
	}); err != nil {
		return nil, err
	}
	return encodeChunks(mergeRuns(floats, runs)), nil
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
		buf = enc.Finish()
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

// cachedChunks returns the XOR chunks of the float file at path, from its
// cached reader or, when the read of [mint, maxt] covers the file (covers)
// and the bound allows, built now and kept there. nil without error: not kept and not built (the caller
// decodes the file as usual). Files in the object store are not built: a
// read there fetches only the blocks in its range, building would fetch
// them all.
func (c *readerCache) cachedChunks(path string, mint, maxt int64, st *readStats) (*fileChunks, error) {
	if c == nil || c.maxOpen <= 0 || c.maxChunkBytes <= 0 {
		return nil, nil
	}
	// Counted as a read only where no decoding read of the file follows
	// (which counts itself): a file read once a pass is counted once.
	cr, done, err := c.acquire(path, false)
	if err != nil {
		return nil, err
	}
	defer done()
	c.mu.Lock()
	fc, room := cr.chunks, c.chunkBytes < c.maxChunkBytes
	if fc != nil {
		c.countLocked(cr)
	}
	c.mu.Unlock()
	if fc != nil {
		c.chunkHits.Add(1)
		return fc, nil
	}
	if !room || cr.solo || cr.remote || !covers(cr.r, mint, maxt) {
		return nil, nil
	}
	c.mu.Lock()
	c.countLocked(cr)
	c.mu.Unlock()
	return c.buildKept(cr, st)
}

// buildKept builds the chunks of cr's file and keeps them on cr when the
// bound allows. A reader dropped meanwhile (its file changed) keeps its
// snapshot: the chunks serve the read that built them and are not kept.
func (c *readerCache) buildKept(cr *cachedReader, st *readStats) (*fileChunks, error) {
	fc, err := buildFileChunks(cr.r, cr.remote, st)
	if err != nil {
		return nil, err
	}
	c.chunkBuilds.Add(1)
	c.mu.Lock()
	if !cr.stale && cr.chunks == nil && c.chunkBytes+fc.bytes <= c.maxChunkBytes {
		cr.chunks = fc
		c.chunkBytes += fc.bytes
	}
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
			Name: "acta_store_kept_chunk_bytes", Help: "Bytes of XOR chunks kept on cached readers for streamed remote reads (bounded by Options.MaxChunkCacheBytes).",
		}, func() float64 { b, _, _ := rc().chunkStats(); return float64(b) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "acta_store_kept_chunk_hits_total", Help: "Series file reads of streamed remote reads served from kept XOR chunks.",
		}, func() float64 { _, h, _ := rc().chunkStats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "acta_store_kept_chunk_builds_total", Help: "Series files whose XOR chunks a streamed remote read built (kept if the bound allowed).",
		}, func() float64 { _, _, n := rc().chunkStats(); return float64(n) }),
	}
}
