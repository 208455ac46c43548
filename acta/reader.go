package acta

import (
	"fmt"
	"io"
	"os"
)

// Reader is a snapshot of one Acta file: its prologue, schema and the data
// blocks committed when it was opened (or last refreshed). ReadBlock and
// Scan may run concurrently with each other; Refresh and Tail may not run
// concurrently with anything else on the same Reader.
type Reader struct {
	path   string
	f      *os.File    // nil for a reader over an io.ReaderAt (OpenReaderAt, OpenKnown)
	ra     io.ReaderAt // every read goes here: f, or the caller's source
	fi     os.FileInfo // identity at open, for Refresh
	lim    Limits
	fh     *fileHead
	blocks []blockMeta
	infos  []BlockInfo
	ch     chain
	tail   tailState
	known  bool // blocks from OpenKnown, not discovered: no header lengths
	ahead  int  // discovery read-ahead (OpenReaderAt); 0: readAhead
}

// Open opens path with DefaultLimits.
func Open(path string) (*Reader, error) { return OpenWithLimits(path, DefaultLimits()) }

// OpenWithLimits opens path and discovers its committed blocks (§13.1). It
// checks every frame's prefix, header, trailer and block metadata; the body
// CRC of a data frame is checked when the block is first read (§6.2 allows
// the deferral), so opening costs the headers, not the file size. An
// incomplete final frame is not an error: it is left out and reported by
// Refresh and InspectRecovery.
func OpenWithLimits(path string, l Limits) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acta: %w", err) // os.Open already says "open PATH"
	}
	r, err := newReader(path, f, l)
	if err != nil {
		f.Close()
		return nil, withPath(err, path)
	}
	return r, nil
}

func newReader(path string, f *os.File, l Limits) (*Reader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("acta: stat %s: %w", path, err)
	}
	r := &Reader{path: path, f: f, ra: f, fi: fi, lim: l.withDefaults()}
	if err := r.discover(fi.Size()); err != nil {
		return nil, err
	}
	return r, nil
}

// discover reads the prologue and schema and walks the frames of the
// first size bytes of r.ra (§13.1).
func (r *Reader) discover(size int64) error {
	var err error
	r.fh, err = readHead(r.ra, size, &r.lim)
	if err != nil {
		return err
	}
	d := discoverer{r: r.ra, fh: r.fh, ahead: r.ahead}
	r.blocks, r.ch, r.tail, err = d.run(r.fh.firstChain(), size, nil)
	if err != nil {
		return err
	}
	r.infos = make([]BlockInfo, len(r.blocks))
	for i := range r.blocks {
		r.infos[i] = r.blocks[i].BlockInfo
	}
	return nil
}

// Schema returns the file's schema.
func (r *Reader) Schema() *Schema { return r.fh.schema }

// Blocks returns the committed blocks' metadata in file order. The slice is
// shared: do not modify it.
func (r *Reader) Blocks() []BlockInfo { return r.infos }

// FileID returns the prologue's file ID.
func (r *Reader) FileID() [16]byte { return r.fh.pro.FileID }

// RowIDs reports whether the file has implicit row IDs.
func (r *Reader) RowIDs() bool { return r.fh.pro.rowIDs() }

// CommittedSize is the offset just after the last committed frame.
func (r *Reader) CommittedSize() int64 { return r.ch.off }

// IncompleteTail reports whether the snapshot saw an incomplete final frame.
func (r *Reader) IncompleteTail() bool { return r.tail.Incomplete }

// Path returns the path the reader opened.
func (r *Reader) Path() string { return r.path }

// Close releases the file. A reader over an io.ReaderAt has none: Close
// does nothing, and the caller keeps the source.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}

// ReadBlock decodes every column of block i, verifying its body and stream
// CRCs first. It never shares a scan's cumulative limits.
func (r *Reader) ReadBlock(i int) (*Batch, error) {
	if i < 0 || i >= len(r.blocks) {
		return nil, fmt.Errorf("acta: block index %d out of range [0, %d)", i, len(r.blocks))
	}
	all := make([]int, len(r.fh.schema.Columns))
	for k := range all {
		all[k] = k
	}
	var met ScanMetrics
	cols, rows, err := r.decodeBlock(&r.blocks[i], all, r.lim.MaxDecodedBlockBytes, &met)
	if err != nil {
		return nil, err
	}
	return &Batch{Schema: r.fh.schema, Columns: cols, Rows: rows}, nil
}
