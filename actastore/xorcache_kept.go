package actastore

import (
	"container/list"

	"github.com/cespare/xxhash/v2"
)

// The kept XOR chunks (xorcache.go) are held by path, apart from the
// readers: a file's chunks stay when its reader is evicted, and a read
// that finds them opens nothing. When a store has more files than the
// reader cache holds (two day files a series, a day after a restart), a
// wide streamed read used to open half its files afresh every time (the
// readers refused admission: a cyclic scan's tie) and, its chunks being
// tied to a cached reader, decode and encode them again too; now every
// file whose chunks fit the bound is served from memory. They are
// dropped with the reader, by invalidate, before a change to the file
// becomes visible (readers.go), and built only from a reader opened
// after the last invalidation of the path's stripe (gens), so they are
// always the file's current samples.
//
// Bounded by bytes (Options.MaxChunkCacheBytes), least recently used
// out, with the readers' admission rule (readers_admit.go): once full,
// a file's chunks are kept only if it was read more often lately than
// every file whose chunks they would push out; a cyclic scan wider than
// the bound keeps hitting the chunks it has.

// keptFile is one float file's kept chunks.
type keptFile struct {
	path  string
	hash  uint64 // xxhash of path
	fc    *fileChunks
	bytes int64 // fc.bytes and the entry's own
}

// keptEntryBytes is a keptFile's own size beside its path: the entry,
// its list element and map slot.
const keptEntryBytes = 160

// keptLocked returns path's kept chunks, counting the read and marking
// them recently used; nil when none are kept.
func (c *readerCache) keptLocked(path string) (*fileChunks, bool) {
	el, ok := c.kept[path]
	if !ok {
		return nil, false
	}
	c.keptLL.MoveToFront(el)
	kf := el.Value.(*keptFile)
	c.freq.add(kf.hash)
	return kf.fc, true
}

// keepLocked keeps fc as the chunks of path, built from a reader opened
// after gen was the path's stripe's generation, when no invalidation came
// since, none are kept already, and the bound and admission allow (reads:
// the file's count before this read, taken at halvings epoch).
func (c *readerCache) keepLocked(path string, h, gen uint64, reads uint8, epoch uint64, fc *fileChunks) bool {
	if c.gens[h%uint64(len(c.gens))] != gen {
		return false
	}
	if _, ok := c.kept[path]; ok {
		return false
	}
	kf := &keptFile{path: path, hash: h, fc: fc, bytes: fc.bytes + keptEntryBytes + int64(len(path))}
	if !c.admitChunksLocked(kf.bytes, c.freq.aged(reads, epoch)) {
		return false
	}
	for c.chunkBytes+kf.bytes > c.maxChunkBytes {
		c.dropKeptLocked(c.keptLL.Back())
	}
	if c.kept == nil {
		c.kept, c.keptLL = make(map[string]*list.Element), list.New()
	}
	c.kept[path] = c.keptLL.PushFront(kf)
	c.chunkBytes += kf.bytes
	return true
}

// admitChunksLocked is admitLocked for kept chunks: there is room for
// bytes, or every file whose chunks would go (least recently used first)
// was read fewer times lately.
func (c *readerCache) admitChunksLocked(bytes int64, reads uint8) bool {
	if bytes > c.maxChunkBytes {
		return false
	}
	b := c.chunkBytes
	for el := c.back(); b+bytes > c.maxChunkBytes; el = el.Prev() {
		kf := el.Value.(*keptFile)
		if c.freq.estimate(kf.hash) >= reads {
			return false
		}
		b -= kf.bytes
	}
	return true
}

// back is the least recently used kept file's element (nil: none).
func (c *readerCache) back() *list.Element {
	if c.keptLL == nil {
		return nil
	}
	return c.keptLL.Back()
}

func (c *readerCache) dropKeptLocked(el *list.Element) {
	kf := el.Value.(*keptFile)
	c.keptLL.Remove(el)
	delete(c.kept, kf.path)
	c.chunkBytes -= kf.bytes
}

// forgetKeptLocked drops path's kept chunks (invalidate).
func (c *readerCache) forgetKeptLocked(path string) {
	if el, ok := c.kept[path]; ok {
		c.dropKeptLocked(el)
	}
}

// A file rewritten by compaction or a tier merge would lose its kept
// chunks with the invalidation, and a file is compacted soon after it is
// sealed, or after a restart, just when the warm-up has built them: the
// reads of part of it that follow decode whole blocks again (make bench's
// 1,000 series × 1 h read after the restart's 13,699 compactions), since
// only a read of all of a file builds them. So where the old version's
// chunks were kept (hot), the rewrite keeps the new version's in their
// place, encoded from the samples it just wrote: under the series' flush
// lock nothing else changes the file meanwhile.

// hasKept reports whether any of paths has kept chunks.
func (c *readerCache) hasKept(paths ...string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if _, ok := c.kept[p]; ok {
			return true
		}
	}
	return false
}

// keepRewritten keeps fc as the chunks of the file at path just rewritten
// (and invalidated) under its series' flush lock, as keepLocked allows.
func (c *readerCache) keepRewritten(path string, fc *fileChunks) {
	if c == nil || fc == nil {
		return
	}
	h := xxhash.Sum64String(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepLocked(path, h, c.gens[h%uint64(len(c.gens))], c.freq.estimate(h), c.freq.halvings, fc)
}

// rewrittenChunks encodes the samples a rewrite wrote (sorted, one per
// timestamp) as the file's kept chunks; nil for a kind without XOR pairs
// or a file above maxKeptRows. starts: the file holds start timestamps.
func rewrittenChunks[S any](k kind[S], all []S, starts bool) *fileChunks {
	if !k.xorHead() || len(all) == 0 || len(all) > maxKeptRows {
		return nil
	}
	fc := encodeChunks(xorSamples(k, all))
	fc.starts = starts
	return fc
}

// A flush appending to a file with kept chunks (the newest file, every
// few minutes) dropped them as well; the reads of the last hours that
// follow only decode blocks. So a flush whose samples all follow the
// file's kept ones extends them instead (extendKept): the last chunk, when
// not full, is encoded again with the new samples, so chunks stay at
// ChunkSamples. Samples at or before the last kept one (an out-of-order
// flush into the newest file) drop them, as before.

// keptFor returns path's kept chunks for a writer about to extend them
// (not counted as a read); nil when none are kept or they leave out the
// file's start timestamps.
func (c *readerCache) keptFor(path string) *fileChunks {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wholeKeptLocked(path)
}

// wholeKeptLocked is path's kept chunks when they hold all its file does
// (no start timestamps left out), without counting a read; nil otherwise.
func (c *readerCache) wholeKeptLocked(path string) *fileChunks {
	el, ok := c.kept[path]
	if !ok || el.Value.(*keptFile).fc.starts {
		return nil
	}
	return el.Value.(*keptFile).fc
}

// extendKept returns fc's chunks followed by ss (sorted by T), or nil when
// ss does not follow them or the file would outgrow maxKeptRows. fc is
// not modified: readers may hold it.
func extendKept(fc *fileChunks, ss []Sample) (*fileChunks, error) {
	ss = dedupeSorted(floats, ss)
	cs := fc.chunks
	n := 0
	for _, c := range cs {
		n += c.Samples
	}
	if len(ss) == 0 || n+len(ss) > maxKeptRows || (len(cs) > 0 && ss[0].T <= cs[len(cs)-1].MaxT) {
		return nil, nil
	}
	keep := cs
	if last := len(cs) - 1; last >= 0 && cs[last].Samples < ChunkSamples {
		tail, err := decodeXOR(nil, cs[last].Data)
		if err != nil {
			return nil, err
		}
		ss = append(tail, ss...)
		keep = cs[:last]
	}
	add := encodeChunks(ss)
	out := &fileChunks{chunks: make([]XORChunk, 0, len(keep)+len(add.chunks)), bytes: fc.bytes + add.bytes}
	out.chunks = append(append(out.chunks, keep...), add.chunks...)
	return out, nil
}

// xorSamples is ss as (ms, float64) pairs (k.xorHead kinds).
func xorSamples[S any](k kind[S], ss []S) []Sample {
	out := make([]Sample, len(ss))
	for i, x := range ss {
		out[i].T, out[i].V = k.xorPair(x)
	}
	return out
}
