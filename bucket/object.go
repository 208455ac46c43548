package bucket

import (
	"context"
	"sync"

	"github.com/acta-remote/acta-remote/acta"
)

// Reading series files in place: a bucket file is an acta.Reader whose
// reads are ranged GETs. Its block index (head and block list) comes from
// the local cache, or is discovered once with small ranged reads of the
// frame headers and trailers and cached; a block read then fetches
// exactly that block's frame, whose CRCs acta checks before any value is
// used, so a damaged or truncated object is an error naming its key.

const (
	// discoveryAhead is what discovery reads at each frame start: a
	// prefix and a float file's block header with room to spare (a
	// histogram file's larger headers cost one more read).
	discoveryAhead = 2 << 10
	// discoveryFetch is the least a discovery read fetches: the 32-byte
	// trailer read at a frame's end brings the next frame's start along,
	// so discovery costs one ranged GET a block.
	discoveryFetch = discoveryAhead + 64
)

// OpenFile opens the series file stored as key (size bytes, CRC-32C crc)
// for reading. cache may be nil (every open discovers). The reader's name
// in errors is the object's s3:// URL. It holds no connection: closing it
// is optional.
func (c *Client) OpenFile(key string, size int64, crc uint32, cache *IndexCache, lim acta.Limits) (*acta.Reader, error) {
	name := c.URL(key)
	ra := &objectReaderAt{c: c, key: key, purpose: "block"}
	if cache != nil {
		if head, blocks, ok := cache.Get(key, size, crc); ok {
			return acta.OpenKnown(name, ra, size, head, blocks, lim)
		}
	}
	dr := &discoveryReaderAt{c: c, key: key, size: size}
	r, err := acta.OpenReaderAt(name, dr, size, discoveryAhead, lim)
	if err != nil {
		return nil, err
	}
	if r.IncompleteTail() || r.CommittedSize() != size {
		// An uploaded file is whole: anything after its last frame means
		// the object is not the file that was uploaded.
		return nil, &acta.CorruptionError{Path: name, Offset: r.CommittedSize(),
			Reason: "object ends inside a frame or holds bytes after the last one (cut short or damaged)"}
	}
	if cache != nil {
		cache.Put(key, size, crc, r.Head(), r.Blocks()) // best effort: a failure only costs the next open
	}
	return acta.OpenKnown(name, ra, size, r.Head(), r.Blocks(), lim)
}

// objectReaderAt reads with one ranged GET per call (a block's frame).
type objectReaderAt struct {
	c       *Client
	key     string
	purpose string
}

func (o *objectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	b, err := o.c.GetRange(context.Background(), o.key, off, int64(len(p)), o.purpose)
	if err != nil {
		return 0, err
	}
	return copy(p, b), nil
}

// discoveryReaderAt serves discovery's many small reads from the chunks
// it fetched, fetching at least discoveryFetch bytes a time.
type discoveryReaderAt struct {
	c    *Client
	key  string
	size int64

	mu     sync.Mutex
	chunks []chunk
}

type chunk struct {
	off int64
	b   []byte
}

func (d *discoveryReaderAt) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.chunks {
		if off >= ch.off && off+int64(len(p)) <= ch.off+int64(len(ch.b)) {
			return copy(p, ch.b[off-ch.off:]), nil
		}
	}
	n := min(max(int64(len(p)), discoveryFetch), d.size-off)
	if n < int64(len(p)) {
		n = int64(len(p)) // past the end: GetRange reports the short object
	}
	b, err := d.c.GetRange(context.Background(), d.key, off, n, "discovery")
	if err != nil {
		return 0, err
	}
	if len(d.chunks) >= 4 { // discovery moves forward: old chunks are done
		d.chunks = d.chunks[1:]
	}
	d.chunks = append(d.chunks, chunk{off: off, b: b})
	return copy(p, b), nil
}
