package acta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// Readers over bytes that are not an open file: an object in a bucket read
// with ranged requests, bytes in memory. The format is the same, and so are
// the checks: OpenReaderAt discovers frames as Open does (§13.1), and
// OpenKnown skips discovery with a block list learned earlier but still
// checks every frame in full when its block is read (prefix, header,
// trailer and body CRCs, §6), and that the frame's header agrees with the
// list. Such a reader is a fixed snapshot: Refresh and Tail refuse it.

// OpenReaderAt opens the Acta file held by the first size bytes of ra,
// checking what Open checks. name is used in errors (a path, an object
// key). readAhead is how many bytes discovery reads at each frame start
// (0: 64 KiB, what Open reads, so that small frames come many to a read);
// a source where each read is a request (object storage) wants a few KiB,
// enough for a frame's prefix and header. Close does nothing: the caller
// keeps ra.
func OpenReaderAt(name string, ra io.ReaderAt, size int64, readAhead int, l Limits) (*Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("acta: open %s: negative size %d", name, size)
	}
	r := &Reader{path: name, ra: ra, lim: l.withDefaults(), ahead: max(readAhead, 0)}
	if err := r.discover(size); err != nil {
		return nil, withPath(err, name)
	}
	return r, nil
}

// HeadSize is the length of the file's prologue and schema frame: the
// bytes Head returns, where the first data frame starts.
func (r *Reader) HeadSize() int64 { return int64(len(r.fh.raw)) }

// Head returns the prologue and schema frame exactly as stored (shared: do
// not modify). With Blocks it is what OpenKnown needs to reopen the same
// bytes without discovery.
func (r *Reader) Head() []byte { return r.fh.raw }

// OpenKnown opens the Acta file held by the first size bytes of ra
// without reading them: head is the file's prologue and schema frame
// (Reader.Head) and blocks its committed blocks (Reader.Blocks), both from
// an earlier reader of the same bytes. The head is checked as Open checks
// it (§5, §7, its CRCs); the block list must describe a chain of frames
// (§6, §8: offsets contiguous from the head, sequence numbers from 1,
// row IDs continuing, lengths within the limits, within size). Nothing
// else is trusted: reading a block checks its whole frame and that its
// header says the rows, bounds and sort flag the list says, so a stale
// or damaged list gives ErrCorrupt, never other data. Close does nothing.
func OpenKnown(name string, ra io.ReaderAt, size int64, head []byte, blocks []BlockInfo, l Limits) (*Reader, error) {
	r := &Reader{path: name, ra: ra, lim: l.withDefaults()}
	fh, err := readHead(bytes.NewReader(head), int64(len(head)), &r.lim)
	if err != nil {
		return nil, withPath(err, name)
	}
	if int64(len(fh.raw)) != int64(len(head)) {
		return nil, withPath(corruptf(int64(len(fh.raw)), "known head is %d bytes, its schema frame ends at %d", len(head), len(fh.raw)), name)
	}
	if size < int64(len(head)) {
		return nil, withPath(corruptf(0, "file is %d bytes, shorter than its %d-byte head", size, len(head)), name)
	}
	r.fh = fh
	r.ch = fh.firstChain()
	r.blocks = make([]blockMeta, len(blocks))
	minFrame := int64(frameOverhead + blockHeaderSize)
	for i, b := range blocks {
		switch {
		case b.Seq != r.ch.seq:
			err = corruptf(b.Offset, "known block %d has sequence %d, want %d", i, b.Seq, r.ch.seq)
		case b.Offset != r.ch.off:
			err = corruptf(b.Offset, "known block %d starts at %d, the previous frame ends at %d", i, b.Offset, r.ch.off)
		case b.Bytes < minFrame || b.Bytes-frameOverhead > r.lim.MaxHeaderBytes+r.lim.MaxPayloadBytes:
			err = corruptf(b.Offset, "known block %d is %d bytes, outside [%d, %d]", i, b.Bytes, minFrame, r.lim.MaxHeaderBytes+r.lim.MaxPayloadBytes+frameOverhead)
		case b.Bytes > size-b.Offset:
			err = corruptf(b.Offset, "known block %d of %d bytes ends past the %d-byte file", i, b.Bytes, size)
		case b.Rows <= 0 || int64(b.Rows) > int64(r.lim.MaxRowsPerBlock):
			err = corruptf(b.Offset, "known block %d has %d rows, outside [1, %d]", i, b.Rows, r.lim.MaxRowsPerBlock)
		case fh.pro.rowIDs() && b.BaseRowID != r.ch.rowID:
			err = corruptf(b.Offset, "known block %d has base row ID %d, want %d", i, b.BaseRowID, r.ch.rowID)
		case !fh.pro.rowIDs() && b.BaseRowID != math.MaxUint64:
			err = corruptf(b.Offset, "known block %d has base row ID %d in a file without row IDs", i, b.BaseRowID)
		case b.Min > b.Max:
			err = corruptf(b.Offset, "known block %d has bounds [%d, %d]", i, b.Min, b.Max)
		}
		if err != nil {
			return nil, withPath(err, name)
		}
		r.blocks[i] = blockMeta{BlockInfo: b}
		r.ch.off += b.Bytes
		r.ch.seq++
		if fh.pro.rowIDs() {
			r.ch.rowID += uint64(b.Rows)
		}
	}
	r.tail = tailState{Offset: r.ch.off}
	r.known = true
	r.infos = make([]BlockInfo, len(r.blocks))
	for i := range r.blocks {
		r.infos[i] = r.blocks[i].BlockInfo
	}
	return r, nil
}

// errNotAFile is Refresh on a reader over an io.ReaderAt.
var errNotAFile = errors.New("not an open file: a reader over an io.ReaderAt is a fixed snapshot")

// checkKnown compares a block's header, as read with its frame, with what
// the reader's block list says (every reader: for a discovered list they
// agree unless the file changed under the snapshot).
func checkKnown(m *blockMeta, h *blockHeader) error {
	if int(h.Rows) != m.Rows || h.Min != m.Min || h.Max != m.Max || h.sorted() != m.Sorted {
		return corruptf(m.Offset, "block %d header says %d rows in [%d, %d] sorted %v, the block list says %d rows in [%d, %d] sorted %v",
			m.Seq, h.Rows, h.Min, h.Max, h.sorted(), m.Rows, m.Min, m.Max, m.Sorted)
	}
	return nil
}
