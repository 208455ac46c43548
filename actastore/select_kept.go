package actastore

import (
	"fmt"
	"sort"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// A plain read (a SAMPLES remote read, PromQL, the query API) of a float
// file whose XOR chunks are kept (xorcache_kept.go) decodes those chunks
// instead of opening the file and decoding its Acta blocks: no open when
// the store has more files than readers, and an XOR chunk decodes faster
// than a compacted block (zstd, then the integer transforms). It never
// builds chunks: a file's are built by streamed reads and by the warm-up
// after a start. Files holding start timestamps are read from the file:
// the chunks leave them out.

// keptPlain returns path's kept chunks when a plain read can take them
// (the file holds no start timestamps), counting the read of the file;
// nil otherwise (then nothing is opened or built, nor counted).
func (c *readerCache) keptPlain(path string) *fileChunks {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wholeKeptLocked(path) == nil {
		return nil
	}
	fc, _ := c.keptLocked(path)
	c.chunkHits.Add(1)
	return fc
}

// keptRun is the samples of kept chunks in [mint, maxt] as k's samples
// (k.xorHead: they convert to and from XOR pairs bit-exactly), sorted,
// one per timestamp as the chunks hold them.
func keptRun[S any](k kind[S], fc *fileChunks, mint, maxt int64) ([]S, error) {
	cs := fc.chunks
	lo := sort.Search(len(cs), func(i int) bool { return cs[i].MaxT >= mint })
	hi := sort.Search(len(cs), func(i int) bool { return cs[i].MinT > maxt })
	n := 0
	for _, c := range cs[lo:hi] {
		n += c.Samples
	}
	out := make([]S, 0, n)
	var xc chunkenc.XORChunk
	var it chunkenc.Iterator
	var err error
	for _, c := range cs[lo:hi] {
		xc.Reset(c.Data)
		it = xc.Iterator(it)
		if out, err = appendXOR(k, out, it, mint, maxt); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendXOR appends the samples an XOR chunk's iterator gives in [mint,
// maxt] to dst.
func appendXOR[S any](k kind[S], dst []S, it chunkenc.Iterator, mint, maxt int64) ([]S, error) {
	for vt := it.Seek(mint); vt == chunkenc.ValFloat; vt = it.Next() {
		t, v := it.At()
		if t > maxt {
			break
		}
		dst = append(dst, k.fromXOR(t, v))
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("cannot read XOR chunk: %w", err)
	}
	return dst, nil
}
