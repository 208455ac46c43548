package actastore

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/acta-remote/acta-remote/acta"
)

// readerCache keeps series file readers open between reads (Select, and
// duplicate detection's look-ups): opening a file costs the discovery of
// every frame header, which a query over thousands of series would
// otherwise pay per series per query. It is bounded by count (file
// descriptors) and by the bytes the readers' block indexes hold, least
// recently used first out; once full, a new file is cached only if it was
// read more often lately than the readers it would evict
// (readers_admit.go), else read with a reader of its own.
//
// A reader is shared (acta readers allow concurrent ReadBlock). When a file
// changes — a flush appended a block, compaction or a deletion replaced
// it, retention removed it — the store invalidates its path before the
// change becomes visible in memory (a flush clears its flushing buffer only
// after), so a read that finds the data gone from memory also finds a fresh
// reader; holders of the old one keep reading its snapshot, closed once
// the last lets go.
type readerCache struct {
	maxOpen  int
	maxBytes int64

	mu    sync.Mutex
	ll    *list.List // of *cachedReader, most recent at the front
	m     map[string]*list.Element
	bytes int64
	// gens counts invalidations, striped by path hash: a reader opened
	// while its path was invalidated may hold the old snapshot, so it is
	// used once and not cached.
	gens [256]uint64

	// freq counts reads of files, cached or not, for admission.
	freq *freqSketch

	hits, misses, evictions atomic.Int64
	refused                 atomic.Int64 // opens not cached: not read more often than the readers they would evict

	// maxChunkBytes bounds the XOR chunks kept of float files
	// (xorcache.go, xorcache_kept.go); chunkBytes is what they hold. 0:
	// none kept. kept maps a path to its element in keptLL (of
	// *keptFile, most recent at the front); both nil until the first.
	maxChunkBytes int64
	chunkBytes    int64
	kept          map[string]*list.Element
	keptLL        *list.List
	chunkHits     atomic.Int64
	chunkBuilds   atomic.Int64

	// remote opens a file whose local copy is missing from the object
	// store (tier.openRemote); nil without a tier. ok is false for a file
	// the tier does not hold.
	remote func(path string) (r *acta.Reader, ok bool, err error)
	// remoteOnly: paths are object keys, never local files (BucketView).
	remoteOnly bool
}

type cachedReader struct {
	path   string
	r      *acta.Reader
	bytes  int64
	hash   uint64 // xxhash of path: gens stripe, freq counters
	refs   int    // guarded by readerCache.mu
	stale  bool   // out of the cache: close when refs drop to 0
	remote bool   // reads go to the object store
	solo   bool   // not in the cache: used by one read, closed after
}

// readerIndexBytes estimates what an open reader holds: its block index
// (two copies of ~80 bytes a block) plus a fixed part (schema, file).
func readerIndexBytes(r *acta.Reader) int64 { return 512 + 160*int64(len(r.Blocks())) }

func newReaderCache(maxOpen int, maxBytes int64) *readerCache {
	c := &readerCache{maxOpen: maxOpen, maxBytes: maxBytes, ll: list.New(), m: make(map[string]*list.Element)}
	if maxOpen > 0 {
		c.freq = newFreqSketch(maxOpen)
	}
	return c
}

// open returns a reader of path, the function that gives it back, and
// whether its reads go to the object store (a file whose local copy is
// gone). A nil cache opens a fresh reader every time (tools that read a
// directory another process writes: ReadOnly).
func (c *readerCache) open(path string) (*acta.Reader, func(), bool, error) {
	cr, done, err := c.acquire(path, true)
	if err != nil {
		return nil, nil, false, err
	}
	return cr.r, done, cr.remote, nil
}

// acquire is open returning the cache entry: solo when it is not cached
// (no cache, invalidated while it was being opened, or refused
// admission). counted: the acquire counts as a read of the file for
// admission; a caller that may read the file again through open for the
// same read passes false and counts with countLocked when it does not.
func (c *readerCache) acquire(path string, counted bool) (*cachedReader, func(), error) {
	if c == nil || c.maxOpen <= 0 {
		r, remote, err := c.openFile(path)
		if err != nil {
			return nil, nil, err
		}
		return &cachedReader{path: path, r: r, remote: remote, solo: true}, func() { r.Close() }, nil
	}
	c.mu.Lock()
	if el, ok := c.m[path]; ok {
		cr := el.Value.(*cachedReader)
		cr.refs++
		if counted {
			c.freq.add(cr.hash)
		}
		c.ll.MoveToFront(el)
		c.mu.Unlock()
		c.hits.Add(1)
		return cr, func() { c.release(cr) }, nil
	}
	h := xxhash.Sum64String(path)
	// Reads before this one: what admission weighs (readers_admit.go).
	reads, epoch := c.freq.estimate(h), c.freq.halvings
	if counted {
		c.freq.add(h)
	}
	g := &c.gens[h%uint64(len(c.gens))]
	gen := *g
	c.mu.Unlock()
	c.misses.Add(1)
	r, remote, err := c.openFile(path)
	if err != nil {
		return nil, nil, err
	}
	cr := &cachedReader{path: path, r: r, bytes: readerIndexBytes(r), hash: h, refs: 1, remote: remote}
	c.mu.Lock()
	if *g != gen {
		// Invalidated while it was being opened: its snapshot may predate
		// the change.
		c.mu.Unlock()
		cr.solo = true
		return cr, func() { r.Close() }, nil
	}
	if el, ok := c.m[path]; ok {
		// Another read opened it meanwhile: use the cached one.
		old := el.Value.(*cachedReader)
		old.refs++
		c.mu.Unlock()
		r.Close()
		return old, func() { c.release(old) }, nil
	}
	if !c.admitLocked(cr.bytes, c.freq.aged(reads, epoch)) {
		c.mu.Unlock()
		c.refused.Add(1)
		cr.solo = true
		return cr, func() { r.Close() }, nil
	}
	c.m[path] = c.ll.PushFront(cr)
	c.bytes += cr.bytes
	c.evictLocked()
	c.mu.Unlock()
	return cr, func() { c.release(cr) }, nil
}

// openFile opens the local file, or, when it is missing and the store has
// a tier holding it, the bucket's copy.
func (c *readerCache) openFile(path string) (*acta.Reader, bool, error) {
	if c != nil && c.remoteOnly {
		r, ok, err := c.remote(path)
		if !ok && err == nil {
			err = fmt.Errorf("%w: %s is not in the bucket index", os.ErrNotExist, path)
		}
		return r, true, err
	}
	r, err := acta.Open(path)
	if err == nil || c == nil || c.remote == nil || !errors.Is(err, os.ErrNotExist) {
		return r, false, err
	}
	rr, ok, rerr := c.remote(path)
	if !ok {
		return nil, false, err
	}
	return rr, true, rerr
}

func (c *readerCache) release(cr *cachedReader) {
	c.mu.Lock()
	cr.refs--
	closeIt := cr.stale && cr.refs == 0
	c.mu.Unlock()
	if closeIt {
		cr.r.Close()
	}
}

// admitLocked reports whether a new reader of size bytes, of a file read
// reads times before, may be cached: there is room, or every reader it
// would evict (least recently used first, as evictLocked will) was read
// fewer times lately. Ties are refused: a cyclic scan's files are all
// read as often, and admitting one would only evict another the scan
// reads again (readers_admit.go).
func (c *readerCache) admitLocked(bytes int64, reads uint8) bool {
	n, b := c.ll.Len(), c.bytes
	for el := c.ll.Back(); n >= c.maxOpen || (c.maxBytes > 0 && b+bytes > c.maxBytes && n > 0); el = el.Prev() {
		v := el.Value.(*cachedReader)
		if c.freq.estimate(v.hash) >= reads {
			return false
		}
		n, b = n-1, b-v.bytes
	}
	return true
}

// countLocked counts a read of a file acquired uncounted.
func (c *readerCache) countLocked(cr *cachedReader) {
	if c.freq != nil {
		c.freq.add(cr.hash)
	}
}

// evictLocked drops least recently used readers beyond the bounds.
func (c *readerCache) evictLocked() {
	for c.ll.Len() > c.maxOpen || (c.maxBytes > 0 && c.bytes > c.maxBytes && c.ll.Len() > 1) {
		c.dropLocked(c.ll.Back())
		c.evictions.Add(1)
	}
}

func (c *readerCache) dropLocked(el *list.Element) {
	cr := el.Value.(*cachedReader)
	c.ll.Remove(el)
	delete(c.m, cr.path)
	c.bytes -= cr.bytes
	cr.stale = true
	if cr.refs == 0 {
		cr.r.Close()
	}
}

// invalidate drops the reader and the kept chunks of a file that changed.
func (c *readerCache) invalidate(path string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gens[xxhash.Sum64String(path)%uint64(len(c.gens))]++
	if el, ok := c.m[path]; ok {
		c.dropLocked(el)
	}
	c.forgetKeptLocked(path)
	c.mu.Unlock()
}

// stats is the number of cached readers and the bytes they hold.
func (c *readerCache) stats() (int, int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len(), c.bytes
}

// closeAll closes every reader no one holds and drops the kept chunks
// (at Close).
func (c *readerCache) closeAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	for c.ll.Len() > 0 {
		c.dropLocked(c.ll.Back())
	}
	for el := c.back(); el != nil; el = c.back() {
		c.dropKeptLocked(el)
	}
	c.mu.Unlock()
}
