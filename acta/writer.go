package acta

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acta-remote/acta-remote/durable"

	"github.com/acta-remote/acta-remote/acta/internal/encoding"
)

// Writer appends blocks to one Acta file. It holds the file's cooperative
// writer lock until Finish or Close. It is not safe for concurrent use.
type Writer struct {
	path     string
	f        *os.File
	schema   *Schema
	opts     WriterOptions
	ctx      *blockCtx
	rowIDs   bool
	encs     []*encoding.Encoder // per schema column
	encsBare []*encoding.Encoder // per schema column, without the codec: blocks under CodecMinRows
	ch       chain
	cols     []colBuf // per schema column
	rows     int      // buffered rows
	bytes    int64    // estimated raw bytes buffered
	rowWidth int64    // fixed bytes per row, for the byte target
	poison   error
	dirty    bool // published since the last Sync
	newFile  bool // directory entry not yet synced
	sum      WriterSummary

	// Scratch kept across blocks: the store writes many small blocks.
	payload []byte
	stats   []byte
	frame   []byte
	cds     []colDesc
	sds     []streamDesc
}

// WriterSummary describes one writer session.
type WriterSummary struct {
	RowsWritten   int64
	BlocksWritten int64
	LastSeq       uint64 // sequence of the last block written, 0 if none in the file
	BytesWritten  int64  // the whole file's size
}

// colBuf buffers one column's dense values and validity.
type colBuf struct {
	fixed []byte
	bools []bool
	offs  []int
	data  []byte
	valid Bitmap // nil while every buffered row is present
	nulls int
}

// Create creates a new file at path (refusing an existing one), writes its
// prologue and schema frame, and takes the writer lock.
func Create(path string, s *Schema, opts WriterOptions) (*Writer, error) {
	if s == nil {
		return nil, errors.New("acta: create: nil schema")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w, err := newWriter(path, s, opts)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("acta: create: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	var pro prologue
	if opts.RowIDs {
		pro.Features = featureRowIDs
	}
	rand.Read(pro.FileID[:])
	head := appendPrologue(nil, pro)
	head = append(head, encodeSchemaFrame(s)...)
	if _, err := f.WriteAt(head, 0); err != nil {
		unlockFile(f)
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("acta: create %s: write head: %w", path, err)
	}
	w.f, w.newFile, w.dirty = f, true, true
	w.ch = chain{off: int64(len(head)), seq: 1}
	w.sum.BytesWritten = w.ch.off
	return w, nil
}

// OpenWriter continues an existing complete file. It checks every frame
// (with body CRCs) and refuses a file with an incomplete tail
// (ErrIncompleteTail; see RepairIncompleteTail). opts.RowIDs must agree
// with the file.
func OpenWriter(path string, opts WriterOptions) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("acta: open writer: %w", err)
	}
	w, err := openWriter(path, f, opts)
	if err != nil {
		f.Close()
		return nil, withPath(err, path)
	}
	return w, nil
}

func openWriter(path string, f *os.File, opts WriterOptions) (*Writer, error) {
	if err := lockFile(f); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	lim := opts.Limits.withDefaults()
	fh, err := readHead(f, fi.Size(), &lim)
	if err != nil {
		return nil, err
	}
	d := discoverer{r: f, fh: fh, strict: !opts.SkipBodyCheck}
	_, ch, tail, err := d.run(fh.firstChain(), fi.Size(), nil)
	if err != nil {
		return nil, err
	}
	if tail.Incomplete {
		return nil, fmt.Errorf("%w: %s: %d bytes of frame %d at offset %d", ErrIncompleteTail, path, tail.Present, ch.seq, tail.Offset)
	}
	if opts.RowIDs != fh.pro.rowIDs() {
		return nil, fmt.Errorf("acta: open writer %s: RowIDs option %v disagrees with the file's %v", path, opts.RowIDs, fh.pro.rowIDs())
	}
	w, err := newWriter(path, fh.schema, opts)
	if err != nil {
		return nil, err
	}
	w.f, w.ch = f, ch
	w.sum.BytesWritten = ch.off
	w.sum.LastSeq = ch.seq - 1
	return w, nil
}

func newWriter(path string, s *Schema, opts WriterOptions) (*Writer, error) {
	if opts.RowBlockTarget <= 0 {
		opts.RowBlockTarget = defaultRowBlockTarget
	}
	if opts.ByteBlockTarget <= 0 {
		opts.ByteBlockTarget = defaultByteBlockTarget
	}
	lim := opts.Limits.withDefaults()
	if opts.RowBlockTarget > lim.MaxRowsPerBlock {
		return nil, fmt.Errorf("acta: row block target %d exceeds the reader limit %d", opts.RowBlockTarget, lim.MaxRowsPerBlock)
	}
	w := &Writer{path: path, schema: s, opts: opts, rowIDs: opts.RowIDs,
		ctx: newBlockCtx(s, opts.RowIDs, &lim), cols: make([]colBuf, len(s.Columns))}
	w.encs = make([]*encoding.Encoder, len(s.Columns))
	for i, c := range s.Columns {
		e, err := encoding.NewEncoder(opts.encodingOptions(c.ID == s.Primary))
		if err != nil {
			return nil, fmt.Errorf("acta: column %q: %w", c.Name, err)
		}
		w.encs[i] = e
		if opts.Codec != CodecNone && opts.CodecMinRows > 0 {
			bare := opts
			bare.Codec = CodecNone
			if w.encsBare == nil {
				w.encsBare = make([]*encoding.Encoder, len(s.Columns))
			}
			if w.encsBare[i], err = encoding.NewEncoder(bare.encodingOptions(c.ID == s.Primary)); err != nil {
				return nil, fmt.Errorf("acta: column %q: %w", c.Name, err)
			}
		}
		if opts.Encoding.policy == encoding.PolicyFixed {
			if err := probeFixed(e, c); err != nil {
				return nil, fmt.Errorf("acta: column %q (%s): %w", c.Name, c.Type, err)
			}
		}
		_, wd := classOf(c.Type)
		w.rowWidth += int64(max(wd, 1))
	}
	return w, nil
}

// Schema returns the file's schema, which appended batches must match.
func (w *Writer) Schema() *Schema { return w.schema }

// Size is the file's committed length in bytes.
func (w *Writer) Size() int64 { return w.ch.off }

// Buffered is the number of rows appended but not yet published.
func (w *Writer) Buffered() int { return w.rows }

// Append buffers b's rows, publishing a block whenever a row or byte target
// is reached. A failure while publishing poisons the writer; rows of b
// before the failed block may already be in the file.
func (w *Writer) Append(b *Batch) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.checkBatch(b); err != nil {
		return err
	}
	for o := 0; o < b.Rows; {
		k := min(b.Rows-o, w.opts.RowBlockTarget-w.rows)
		// Rows are priced at their fixed width (variable-width bytes are
		// added as they are buffered), so a block stays within the byte
		// target; a single row larger than the target gets a block alone.
		room := (w.opts.ByteBlockTarget - w.bytes) / w.rowWidth
		if room <= 0 {
			if w.rows > 0 {
				if err := w.publish(); err != nil {
					return err
				}
				continue
			}
			room = 1
		}
		k = int(min(int64(k), room))
		w.buffer(b, o, o+k)
		o += k
		if w.rows >= w.opts.RowBlockTarget || w.bytes+w.rowWidth > w.opts.ByteBlockTarget {
			if err := w.publish(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Writer) usable() error {
	if w.poison != nil {
		return fmt.Errorf("%w: %v", ErrPoisoned, w.poison)
	}
	if w.f == nil {
		return errors.New("acta: writer is closed")
	}
	return nil
}

func (w *Writer) checkBatch(b *Batch) error {
	if b == nil {
		return fmt.Errorf("%w: nil batch", ErrSchemaMismatch)
	}
	if len(b.Columns) != len(w.schema.Columns) {
		return fmt.Errorf("%w: batch has %d columns, schema %d", ErrSchemaMismatch, len(b.Columns), len(w.schema.Columns))
	}
	if b.Schema != nil && b.Schema != w.schema {
		for i, c := range b.Schema.Columns {
			if i >= len(w.schema.Columns) || c != w.schema.Columns[i] {
				return fmt.Errorf("%w: batch column %d (%q %s) differs from the file's", ErrSchemaMismatch, i, c.Name, c.Type)
			}
		}
	}
	for i := range w.schema.Columns {
		if err := checkArray(&w.schema.Columns[i], b.Columns[i], b.Rows); err != nil {
			return fmt.Errorf("%w: %v", ErrSchemaMismatch, err)
		}
	}
	return nil
}

// buffer appends rows [lo, hi) of b to the column buffers.
func (w *Writer) buffer(b *Batch, lo, hi int) {
	for i := range w.schema.Columns {
		cb := &w.cols[i]
		a := b.Columns[i]
		v := a.Validity()
		if v != nil {
			for r := lo; r < hi; r++ {
				if !v.Valid(r) {
					if cb.valid == nil {
						cb.valid = make(Bitmap, (w.rows+7)/8, max(64, w.opts.RowBlockTarget/8+1))
						for k := 0; k < w.rows; k++ {
							cb.valid.Set(k, true)
						}
					}
					break
				}
			}
		}
		if cb.valid != nil {
			for r := lo; r < hi; r++ {
				n := w.rows + r - lo
				for len(cb.valid) <= n/8 {
					cb.valid = append(cb.valid, 0)
				}
				ok := v.Valid(r)
				cb.valid.Set(n, ok)
				if !ok {
					cb.nulls++
				}
			}
		}
		switch x := a.(type) {
		case *FixedArray[bool]:
			for r := lo; r < hi; r++ {
				if v.Valid(r) {
					cb.bools = append(cb.bools, x.Values[r])
				}
			}
		case *FixedArray[int8]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[int16]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[int32]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[int64]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[uint8]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[uint16]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[uint32]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[uint64]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[float32]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *FixedArray[float64]:
			cb.fixed = appendFixed(cb.fixed, x.Values[lo:hi], subBitmap(v, lo, hi))
		case *BytesArray:
			fixedBin := w.schema.Columns[i].Type.ID == TypeFixedBinary
			for r := lo; r < hi; r++ {
				if !v.Valid(r) {
					continue
				}
				val := x.Value(r)
				w.bytes += int64(len(val))
				if fixedBin {
					cb.fixed = append(cb.fixed, val...)
					continue
				}
				if len(cb.offs) == 0 {
					cb.offs = append(cb.offs, 0)
				}
				cb.data = append(cb.data, val...)
				cb.offs = append(cb.offs, len(cb.data))
			}
		}
	}
	w.rows += hi - lo
	w.bytes += int64(hi-lo) * w.rowWidth
}

// subBitmap returns rows [lo, hi) of b re-based at zero; nil stays nil.
func subBitmap(b Bitmap, lo, hi int) Bitmap {
	if b == nil || lo%8 == 0 {
		if b == nil {
			return nil
		}
		return b[lo/8:]
	}
	return sliceBitmap(b, lo, hi)
}

// Flush publishes the buffered rows as one block, without syncing.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.rows == 0 {
		return nil
	}
	return w.publish()
}

// Sync makes every published block durable (fsync; the first Sync of a new
// file also syncs its directory entry).
func (w *Writer) Sync() error {
	if err := w.usable(); err != nil {
		return err
	}
	if !w.dirty {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		w.poison = fmt.Errorf("sync %s: %w", w.path, err)
		return fmt.Errorf("%w: %v", ErrPoisoned, w.poison)
	}
	if w.newFile {
		if err := durable.SyncDir(filepath.Dir(w.path)); err != nil {
			return fmt.Errorf("acta: sync directory of %s: %w", w.path, err)
		}
		w.newFile = false
	}
	w.dirty = false
	return nil
}

// Finish publishes buffered rows, syncs, releases the lock and closes.
func (w *Writer) Finish() (WriterSummary, error) {
	if err := w.Flush(); err != nil {
		w.Close()
		return w.sum, err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return w.sum, err
	}
	return w.sum, w.Close()
}

// Close releases the lock and the file WITHOUT publishing buffered rows.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	unlockFile(w.f)
	err := w.f.Close()
	w.f = nil
	return err
}

// Summary reports the session so far.
func (w *Writer) Summary() WriterSummary { return w.sum }

// probeFixed encodes two zero values of c so that a fixed transform the
// column layer does not offer for c's type fails at Create, not at the
// first publish (which would poison the writer).
func probeFixed(e *encoding.Encoder, c Column) error {
	class, w := classOf(c.Type)
	v := encoding.Values{N: 2, Width: w}
	switch class {
	case encoding.ClassBool:
		v.Bools = []bool{false, false}
	case encoding.ClassVar:
		v.Offsets, v.Data = []int{0, 0, 0}, []byte{}
	default:
		v.Fixed = make([]byte, 2*w)
	}
	_, err := e.Encode(class, w, false, 2, nil, v)
	return err
}
