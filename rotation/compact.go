package rotation

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/acta-remote/acta-remote/durable"

	"github.com/acta-remote/acta-remote/acta"
)

// CompactOptions configure CompactFile.
type CompactOptions struct {
	// BlockRows is the rows per rewritten block; default 65536 (a sealed
	// file of a 15 s series holds 5760 rows a day, so usually one block).
	BlockRows int
	// ZstdLevel is the Zstandard level of rewritten blocks; 0 means 3.
	ZstdLevel int
	// NoVerify skips the full validation of the new file before it
	// replaces the old one (tests measuring speed only).
	NoVerify bool
	// Limiter paces the rewrite (bytes read plus bytes written); nil runs
	// at full speed.
	Limiter *Limiter
}

// CompactResult describes one rewrite.
type CompactResult struct {
	Skipped                   bool // already compact: nothing written
	RowsIn, RowsOut           int  // RowsIn-RowsOut duplicate timestamps dropped
	BlocksIn, BlocksOut       int
	BytesIn, BytesOut         int64 // apparent sizes
	AllocatedIn, AllocatedOut int64 // st_blocks*512: what the disk pays
}

// ErrNotCompactable: the file's columns are not what CompactFile rewrites
// (fixed-width int64/float64 columns without nulls, an int64 primary).
var ErrNotCompactable = errors.New("rotation: file not compactable")

// IsCompact reports whether a file's blocks are already what CompactFile
// writes: sorted, in time order without overlap, every block but the last
// full. Only frame headers are read.
func IsCompact(path string, blockRows int) (bool, error) {
	r, err := acta.Open(path)
	if err != nil {
		return false, err
	}
	defer r.Close()
	return BlocksCompact(r.Blocks(), blockRows), nil
}

func defaultRows(n int) int {
	if n <= 0 {
		return 65536
	}
	return n
}

// BlocksCompact is IsCompact over a file's block index.
func BlocksCompact(bs []acta.BlockInfo, blockRows int) bool {
	blockRows = defaultRows(blockRows)
	for i, b := range bs {
		if !b.Sorted || (i < len(bs)-1 && b.Rows < blockRows) || (i > 0 && b.Min <= bs[i-1].Max) {
			return false
		}
	}
	return true
}

// CompactFile rewrites the sealed Acta file at path into large sorted
// blocks, dropping repeated primary values (the first stored wins, in file
// block order then row order — what a reader merging the blocks returns),
// for files whose columns are fixed-width int64/float64 without nulls and
// whose primary column is an int64 (Rewrite is the general form). Every
// value keeps its exact bits.
func CompactFile(path, tmp string, o CompactOptions) (CompactResult, error) {
	o.BlockRows = defaultRows(o.BlockRows)
	r, err := acta.Open(path)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", path, err)
	}
	blocks := r.Blocks()
	if BlocksCompact(blocks, o.BlockRows) {
		r.Close()
		return Skipped(path, blocks)
	}
	schema := r.Schema()
	pi := schema.PrimaryIndex()
	if pi < 0 {
		r.Close()
		return CompactResult{}, fmt.Errorf("compact %s: %w: no primary column", path, ErrNotCompactable)
	}
	cols, err := readColumns(r, pi)
	r.Close()
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", path, err)
	}
	cols = sortDedupe(cols, pi)
	rows := cols[pi].Len()
	var batches []*acta.Batch
	for lo := 0; lo < rows; lo += o.BlockRows {
		hi := min(lo+o.BlockRows, rows)
		b := &acta.Batch{Schema: schema, Rows: hi - lo, Columns: make([]acta.Array, len(cols))}
		for i, c := range cols {
			b.Columns[i] = c.slice(lo, hi)
		}
		batches = append(batches, b)
	}
	return Rewrite(path, tmp, schema, batches, o)
}

// Skipped is the result for a file found compact already (nothing is
// written).
func Skipped(path string, blocks []acta.BlockInfo) (CompactResult, error) {
	var res CompactResult
	var err error
	res.BytesIn, res.AllocatedIn, err = sizes(path)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", path, err)
	}
	res.BlocksIn = len(blocks)
	for _, b := range blocks {
		res.RowsIn += b.Rows
	}
	res.Skipped, res.RowsOut, res.BlocksOut = true, res.RowsIn, res.BlocksIn
	res.BytesOut, res.AllocatedOut = res.BytesIn, res.AllocatedIn
	return res, nil
}

// Rewrite replaces the sealed Acta file at path with one holding batches,
// each written as one block (a batch's schema may differ from schema, the
// file's, in its ID and column types: the new file takes the first
// batch's), crash-safely: WriteTemp, then Install. A crash at any moment
// leaves the old file or the new one (and at worst a stray tmp, which the
// caller sweeps at start-up). A reader with the old file open keeps
// reading it (the old inode lives until closed); readers opening path
// afterwards see the new file. The caller guarantees that no one appends
// to path meanwhile (sealed: only the newest file is written), and that
// batches hold the same samples as the old file (the rewrite does not
// compare them). o.Limiter paces bytes read plus written.
func Rewrite(path, tmp string, schema *acta.Schema, batches []*acta.Batch, o CompactOptions) (CompactResult, error) {
	res, err := WriteTemp([]string{path}, tmp, schema, batches, o)
	if err != nil {
		return res, err
	}
	return res, Install(tmp, path, &res)
}

// WriteTemp writes batches (one block each, the first batch's schema, or
// schema) to tmp with Zstandard at o.ZstdLevel, fsyncs it and its
// directory entry, and validates it fully, so that tmp can replace the
// files at inputs. The In figures of the result are the inputs' (sizes,
// rows, blocks); BytesOut and AllocatedOut stay 0 until Install. On error
// tmp is removed.
func WriteTemp(inputs []string, tmp string, schema *acta.Schema, batches []*acta.Batch, o CompactOptions) (CompactResult, error) {
	var res CompactResult
	what := tmp
	if len(inputs) > 0 {
		what = inputs[0]
	}
	for _, in := range inputs {
		apparent, allocated, err := sizes(in)
		if err != nil {
			return res, fmt.Errorf("compact %s: %w", in, err)
		}
		res.BytesIn += apparent
		res.AllocatedIn += allocated
		if r, err := acta.Open(in); err == nil {
			for _, b := range r.Blocks() {
				res.RowsIn += b.Rows
				res.BlocksIn++
			}
			r.Close()
		}
	}
	if o.Limiter != nil {
		o.Limiter.Take(res.BytesIn)
	}
	if len(batches) > 0 && batches[0].Schema != nil {
		schema = batches[0].Schema
	}
	os.Remove(tmp) // a leftover of an earlier crash
	w, err := acta.Create(tmp, schema, acta.WriterOptions{
		Codec: acta.CodecZstd, ZstdLevel: o.ZstdLevel, Encoding: acta.EncodingAdaptive,
		RowBlockTarget: 1 << 24, // the reader limit: one block per batch, Flush cuts them
	})
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", what, err)
	}
	fail := func(err error) (CompactResult, error) {
		w.Close()
		os.Remove(tmp)
		return res, fmt.Errorf("compact %s: %w", what, err)
	}
	for _, b := range batches {
		res.RowsOut += b.Rows
		if err := w.Append(b); err != nil {
			return fail(err)
		}
		if err := w.Flush(); err != nil {
			return fail(err)
		}
	}
	sum, err := w.Finish() // publishes, fsyncs the file and its directory entry
	if err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("compact %s: %w", what, err)
	}
	res.BlocksOut = int(sum.BlocksWritten)
	if !o.NoVerify {
		if err := acta.Validate(tmp, acta.ValidateFull); err != nil {
			os.Remove(tmp)
			return res, fmt.Errorf("compact %s: new file fails validation: %w", what, err)
		}
	}
	if o.Limiter != nil {
		o.Limiter.Take(sum.BytesWritten)
	}
	return res, nil
}

// Install renames a file WriteTemp wrote over path and syncs the
// directory; res gets the new file's sizes. On a rename error tmp is
// removed.
func Install(tmp, path string, res *CompactResult) error {
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", path, err)
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("compact %s: %w", path, err)
	}
	var err error
	res.BytesOut, res.AllocatedOut, err = sizes(path)
	if err != nil {
		return fmt.Errorf("compact %s: %w", path, err)
	}
	return nil
}

// column is one decoded column of the whole file.
type column interface {
	Len() int
	slice(lo, hi int) acta.Array
	permute(idx []int) column
}

type fixedCol[T acta.Fixed] []T

func (c fixedCol[T]) Len() int                    { return len(c) }
func (c fixedCol[T]) slice(lo, hi int) acta.Array { return &acta.FixedArray[T]{Values: c[lo:hi]} }
func (c fixedCol[T]) permute(idx []int) column {
	out := make(fixedCol[T], len(idx))
	for i, k := range idx {
		out[i] = c[k]
	}
	return out
}

// readColumns decodes every committed block and concatenates its columns
// in file order.
func readColumns(r *acta.Reader, pi int) ([]column, error) {
	s := r.Schema()
	cols := make([]column, len(s.Columns))
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			return nil, fmt.Errorf("read block %d: %w", i, err)
		}
		for ci, a := range b.Columns {
			if a.Validity() != nil {
				return nil, fmt.Errorf("%w: column %q has nulls", ErrNotCompactable, s.Columns[ci].Name)
			}
			switch v := a.(type) {
			case *acta.FixedArray[int64]:
				c, _ := cols[ci].(fixedCol[int64])
				cols[ci] = append(c, v.Values...)
			case *acta.FixedArray[float64]:
				c, _ := cols[ci].(fixedCol[float64])
				cols[ci] = append(c, v.Values...)
			default:
				return nil, fmt.Errorf("%w: column %q is %T", ErrNotCompactable, s.Columns[ci].Name, a)
			}
		}
	}
	for ci := range cols {
		if cols[ci] == nil { // a file without rows
			cols[ci] = emptyLike(s.Columns[ci].Type)
		}
	}
	if _, ok := cols[pi].(fixedCol[int64]); !ok {
		return nil, fmt.Errorf("%w: primary column is not 64-bit integer", ErrNotCompactable)
	}
	return cols, nil
}

func emptyLike(t acta.Type) column {
	if t.ID == acta.TypeFloat64 {
		return fixedCol[float64](nil)
	}
	return fixedCol[int64](nil)
}

// sortDedupe orders rows by the primary column, stably (file order decides
// among equal keys), and keeps the first row of each key.
func sortDedupe(cols []column, pi int) []column {
	ts := cols[pi].(fixedCol[int64])
	sorted, dup := true, false
	for i := 1; i < len(ts); i++ {
		if ts[i] < ts[i-1] {
			sorted = false
			break
		}
		if ts[i] == ts[i-1] {
			dup = true
		}
	}
	if sorted && !dup {
		return cols // the usual sealed file: blocks already in time order
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ts[a], ts[b]) })
	keep := idx[:0]
	for _, k := range idx {
		if len(keep) > 0 && ts[keep[len(keep)-1]] == ts[k] {
			continue
		}
		keep = append(keep, k)
	}
	out := make([]column, len(cols))
	for i, c := range cols {
		out[i] = c.permute(keep)
	}
	return out
}

// sizes returns a file's apparent size and what the file system allocated
// for it (st_blocks × 512, what `du` reports).
func sizes(path string) (apparent, allocated int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), Allocated(fi), nil
}

// Allocated is the bytes the file system allocated for fi (st_blocks ×
// 512), or its apparent size where the OS does not say.
func Allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
