package bucket

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/acta"
)

// IndexCache keeps the block indexes of bucket files on local disk (what
// acta.OpenKnown needs: the file's head and block list), so a bucket file
// is discovered once, not once per query or per restart. It is bounded in
// bytes; the least recently used entries go first. An entry is one file,
// <hash of the key>.bidx (docs/format/bucket.md), written under a
// temporary name and renamed: a damaged or stale entry fails its checksum
// or its key, size and CRC check and is dropped. It is a cache: nothing
// is fsynced.
type IndexCache struct {
	dir      string
	maxBytes int64

	mu    sync.Mutex
	ll    *list.List // of *cacheEntry, most recent at the front
	m     map[string]*list.Element
	bytes int64

	hits, misses prometheus.Counter
	size         prometheus.GaugeFunc
}

type cacheEntry struct {
	name  string
	bytes int64
}

const (
	bidxMagic   = "ACTABIDC"
	bidxVersion = 1
	bidxExt     = ".bidx"
)

// OpenIndexCache opens (creating) the cache in dir with a size bound
// (bytes; at least one entry is always kept). reg may be nil.
func OpenIndexCache(dir string, maxBytes int64, reg prometheus.Registerer) (*IndexCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bucket: block index cache: %w", err)
	}
	c := &IndexCache{dir: dir, maxBytes: maxBytes, ll: list.New(), m: make(map[string]*list.Element)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bucket: block index cache: %w", err)
	}
	type found struct {
		name  string
		bytes int64
		mod   int64
	}
	var fs []found
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, bidxExt) {
			os.Remove(filepath.Join(dir, name)) // a temporary file of an interrupted write
			continue
		}
		if fi, err := e.Info(); err == nil {
			fs = append(fs, found{name, fi.Size(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(fs, func(a, b found) int { return int(max(-1, min(1, a.mod-b.mod))) })
	for _, f := range fs { // oldest first, so the newest end up in front
		c.m[f.name] = c.ll.PushFront(&cacheEntry{name: f.name, bytes: f.bytes})
		c.bytes += f.bytes
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	c.hits = prometheus.NewCounter(prometheus.CounterOpts{Name: "acta_bucket_block_index_cache_hits_total",
		Help: "Bucket files opened with a block index from the local cache."})
	c.misses = prometheus.NewCounter(prometheus.CounterOpts{Name: "acta_bucket_block_index_cache_misses_total",
		Help: "Bucket files whose block index was not cached: discovered with ranged reads of their frame headers."})
	c.size = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "acta_bucket_block_index_cache_bytes",
		Help: "Bytes of the local block index cache (bounded by storage.object_store.block_index_cache_size)."},
		func() float64 { _, b := c.Stats(); return float64(b) })
	if reg != nil {
		reg.MustRegister(c.hits, c.misses, c.size)
	}
	return c, nil
}

func entryName(key string) string { return fmt.Sprintf("%016x%s", xxhash.Sum64String(key), bidxExt) }

// Get returns the cached block index of key if it is there and describes
// an object of that size and CRC.
func (c *IndexCache) Get(key string, size int64, crc uint32) (head []byte, blocks []acta.BlockInfo, ok bool) {
	name := entryName(key)
	c.mu.Lock()
	el, found := c.m[name]
	if found {
		c.ll.MoveToFront(el)
	}
	c.mu.Unlock()
	if !found {
		c.misses.Inc()
		return nil, nil, false
	}
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err == nil {
		var k string
		var sz int64
		var cr uint32
		k, sz, cr, head, blocks, err = decodeBlockIndex(b)
		if err == nil && (k != key || sz != size || cr != crc) {
			err = errors.New("another object") // a hash collision or a rewritten object
		}
	}
	if err != nil {
		c.drop(name)
		c.misses.Inc()
		return nil, nil, false
	}
	c.hits.Inc()
	return head, blocks, true
}

// Put stores the block index of key (size bytes, CRC crc).
func (c *IndexCache) Put(key string, size int64, crc uint32, head []byte, blocks []acta.BlockInfo) error {
	b := encodeBlockIndex(key, size, crc, head, blocks)
	name := entryName(key)
	tmp, err := os.CreateTemp(c.dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("bucket: block index cache: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("bucket: block index cache: %w", err)
	}
	c.mu.Lock()
	if el, ok := c.m[name]; ok {
		e := el.Value.(*cacheEntry)
		c.bytes += int64(len(b)) - e.bytes
		e.bytes = int64(len(b))
		c.ll.MoveToFront(el)
	} else {
		c.m[name] = c.ll.PushFront(&cacheEntry{name: name, bytes: int64(len(b))})
		c.bytes += int64(len(b))
	}
	c.evictLocked()
	c.mu.Unlock()
	return nil
}

// Forget drops key's entry (its object was deleted).
func (c *IndexCache) Forget(key string) { c.drop(entryName(key)) }

func (c *IndexCache) drop(name string) {
	c.mu.Lock()
	if el, ok := c.m[name]; ok {
		c.removeLocked(el)
	}
	c.mu.Unlock()
}

func (c *IndexCache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.m, e.name)
	c.bytes -= e.bytes
	os.Remove(filepath.Join(c.dir, e.name))
}

func (c *IndexCache) evictLocked() {
	for c.maxBytes > 0 && c.bytes > c.maxBytes && c.ll.Len() > 1 {
		c.removeLocked(c.ll.Back())
	}
}

// Stats is the number of entries and their bytes.
func (c *IndexCache) Stats() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len(), c.bytes
}

// An entry (frozen):
//
//	magic "ACTABIDC" | version u16 LE = 1 | key: uvarint length, bytes
//	| object size uvarint | object CRC-32C u32 LE | head: uvarint length, bytes
//	| block count uvarint | per block: seq, offset, bytes, rows (uvarints),
//	  base row ID u64 LE, min, max (varints), sorted u8
//	| CRC-32C u32 LE of everything before
func encodeBlockIndex(key string, size int64, crc uint32, head []byte, blocks []acta.BlockInfo) []byte {
	b := make([]byte, 0, 64+len(key)+len(head)+len(blocks)*40)
	b = append(b, bidxMagic...)
	b = binary.LittleEndian.AppendUint16(b, bidxVersion)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.LittleEndian.AppendUint32(b, crc)
	b = binary.AppendUvarint(b, uint64(len(head)))
	b = append(b, head...)
	b = binary.AppendUvarint(b, uint64(len(blocks)))
	for _, bi := range blocks {
		b = binary.AppendUvarint(b, bi.Seq)
		b = binary.AppendUvarint(b, uint64(bi.Offset))
		b = binary.AppendUvarint(b, uint64(bi.Bytes))
		b = binary.AppendUvarint(b, uint64(bi.Rows))
		b = binary.LittleEndian.AppendUint64(b, bi.BaseRowID)
		b = binary.AppendVarint(b, bi.Min)
		b = binary.AppendVarint(b, bi.Max)
		sorted := byte(0)
		if bi.Sorted {
			sorted = 1
		}
		b = append(b, sorted)
	}
	return binary.LittleEndian.AppendUint32(b, CRC32C(b))
}

func decodeBlockIndex(b []byte) (key string, size int64, crc uint32, head []byte, blocks []acta.BlockInfo, err error) {
	if len(b) < len(bidxMagic)+2+4 || string(b[:8]) != bidxMagic {
		return "", 0, 0, nil, nil, errors.New("not a block index entry")
	}
	body := b[:len(b)-4]
	if CRC32C(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return "", 0, 0, nil, nil, errors.New("block index entry checksum")
	}
	if binary.LittleEndian.Uint16(body[8:]) != bidxVersion {
		return "", 0, 0, nil, nil, errors.New("block index entry version")
	}
	d := decoder{p: body[10:]}
	key = d.str()
	sz := d.uvarint()
	crc = d.u32()
	hl := d.uvarint()
	if d.err == nil && hl > uint64(len(d.p)) {
		d.fail("head of %d bytes", hl)
	}
	if d.err == nil {
		head, d.p = d.p[:hl], d.p[hl:]
	}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.p))/14 { // a block takes 14 bytes at least
		d.fail("%d blocks", n)
	}
	if d.err == nil {
		blocks = make([]acta.BlockInfo, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		var bi acta.BlockInfo
		bi.Seq = d.uvarint()
		off, bytes, rows := d.uvarint(), d.uvarint(), d.uvarint()
		if off > math.MaxInt64/2 || bytes > math.MaxInt64/2 || rows > math.MaxInt32 {
			d.fail("block %d out of range", i)
		}
		bi.Offset, bi.Bytes, bi.Rows = int64(off), int64(bytes), int(rows)
		bi.BaseRowID = d.u64()
		bi.Min, bi.Max = d.varint(), d.varint()
		if d.need(1) {
			bi.Sorted = d.p[0] == 1
			d.p = d.p[1:]
		}
		blocks = append(blocks, bi)
	}
	if d.err == nil && len(d.p) != 0 {
		d.fail("%d trailing bytes", len(d.p))
	}
	if d.err == nil && sz > math.MaxInt64/2 {
		d.fail("size %d", sz)
	}
	if d.err != nil {
		return "", 0, 0, nil, nil, d.err
	}
	return key, int64(sz), crc, head, blocks, nil
}
