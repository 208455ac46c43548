package acta

import (
	"errors"
	"fmt"
	"io"
)

// Sequential discovery (spec §13.1): validate the prologue and schema frame,
// then walk frames by their declared lengths, checking each one before its
// block joins the index. Discovery reads through io.ReaderAt so the same
// code serves Open, Refresh, the writer's continuation and recovery.

// BlockInfo is one committed data block's metadata, from its header.
type BlockInfo struct {
	Seq       uint64 // frame sequence number, 1-based
	Offset    int64  // file offset of the frame
	Bytes     int64  // whole frame length
	Rows      int
	BaseRowID uint64 // first implicit row ID, or UINT64_MAX without row IDs
	Min, Max  int64  // primary bounds (raw units, or days); 0,0 without a primary column
	Sorted    bool   // TS_SORTED
}

// blockMeta is BlockInfo plus what reading and refreshing need.
type blockMeta struct {
	BlockInfo
	headerLen  uint32
	payloadLen uint64
}

// chain is the state discovery resumes from: where the next frame starts,
// its expected sequence, the next implicit row ID, and the trailer of the
// last committed frame (a refresh re-reads it to detect replacement).
type chain struct {
	off        int64
	seq        uint64
	rowID      uint64
	trailer    [trailerSize]byte
	trailerOff int64
}

// tailState describes bytes after the last complete frame.
type tailState struct {
	Incomplete bool
	Offset     int64 // where the incomplete frame starts (= last good offset)
	Present    int64 // bytes of it on disk
	Declared   int64 // its declared length, 0 when the prefix itself is incomplete
	Type       uint16
	Seq        uint64
}

// fileHead is the validated prologue and schema frame.
type fileHead struct {
	pro    prologue
	schema *Schema
	raw    []byte // prologue and schema frame bytes exactly as stored
	ctx    *blockCtx
}

// errIncompleteHead is wrapped when the file ends inside the prologue or
// schema frame: the file was being created.
func incompleteHead(off int64, what string) error {
	return &CorruptionError{Offset: off, Reason: "file ends inside the " + what, Err: ErrIncompleteTail}
}

// readHead reads and checks the prologue and schema frame (§5, §7).
func readHead(r io.ReaderAt, size int64, lim *Limits) (*fileHead, error) {
	var pb [prologueSize]byte
	n, err := r.ReadAt(pb[:min(size, prologueSize)], 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n < prologueSize {
		if _, err := parsePrologue(pb[:n]); err != nil && (n >= 8 || n == 0) {
			if n == 0 {
				return nil, incompleteHead(0, "prologue (empty file)")
			}
			var ce *CorruptionError
			if errors.As(err, &ce) && ce.Offset == 0 {
				return nil, err
			}
		}
		return nil, incompleteHead(int64(n), "prologue")
	}
	pro, err := parsePrologue(pb[:])
	if err != nil {
		return nil, err
	}
	off := int64(schemaFrameOffset)
	if size-off < prefixSize {
		return nil, incompleteHead(size, "schema frame prefix")
	}
	var px [prefixSize]byte
	if _, err := r.ReadAt(px[:], off); err != nil {
		return nil, err
	}
	p, err := parsePrefix(px[:], off, lim)
	if err != nil {
		return nil, err
	}
	if p.Type != frameSchema || p.Seq != 0 {
		return nil, corruptf(off+8, "first frame is type %d sequence %d, want the schema frame (type 1, sequence 0)", p.Type, p.Seq)
	}
	if size-off < p.total() {
		return nil, incompleteHead(size, fmt.Sprintf("%d-byte schema frame", p.total()))
	}
	raw := make([]byte, off+p.total())
	if _, err := r.ReadAt(raw, 0); err != nil {
		return nil, err
	}
	fr := raw[off:]
	if err := checkFrameBody(fr, off, p); err != nil {
		return nil, err
	}
	hb := fr[prefixSize : prefixSize+int(p.HeaderLen)]
	pl := fr[prefixSize+int(p.HeaderLen) : p.total()-trailerSize]
	s, err := parseSchema(hb, pl, off+prefixSize, off+prefixSize+int64(p.HeaderLen), lim)
	if err != nil {
		return nil, err
	}
	return &fileHead{pro: pro, schema: s, raw: raw, ctx: newBlockCtx(s, pro.rowIDs(), lim)}, nil
}

// checkFrameBody checks a whole frame held in fr (header CRC, trailer, body
// CRC). fr is exactly p.total() bytes.
func checkFrameBody(fr []byte, off int64, p framePrefix) error {
	h := fr[prefixSize : prefixSize+int(p.HeaderLen)]
	if got := crc(h); got != p.HeaderCRC {
		return corruptf(off+prefixSize, "frame %d header CRC32C %#08x, prefix says %#08x", p.Seq, got, p.HeaderCRC)
	}
	t := fr[len(fr)-trailerSize:]
	if err := checkTrailer(t, off, p); err != nil {
		return err
	}
	if got, want := crc(fr[:len(fr)-trailerSize]), le.Uint32(t[16:]); got != want {
		return corruptf(off, "frame %d body CRC32C %#08x, trailer says %#08x", p.Seq, got, want)
	}
	return nil
}

// firstChain is the chain state right after the schema frame.
func (fh *fileHead) firstChain() chain {
	c := chain{off: int64(len(fh.raw)), seq: 1, trailerOff: int64(len(fh.raw)) - trailerSize}
	copy(c.trailer[:], fh.raw[len(fh.raw)-trailerSize:])
	return c
}

// discoverer walks data frames. It keeps a scratch buffer across frames.
type discoverer struct {
	r      io.ReaderAt
	fh     *fileHead
	strict bool // check every body CRC (recovery, the writer, validation)
	buf    []byte
	win    []byte // read-ahead window: file bytes [winOff, winOff+len(win))
	winOff int64
	ahead  int // read-ahead; 0: readAhead
	h      blockHeader
}

// readAhead is the discovery window: small frames (the store's shape) are
// served many to a read instead of a syscall per field.
const readAhead = 64 << 10

// window returns the file bytes from off (at least a prefix, at most what
// the window holds), refilling the window when off is not inside it.
func (d *discoverer) window(off, size int64) ([]byte, error) {
	if off >= d.winOff && off+prefixSize <= d.winOff+int64(len(d.win)) {
		return d.win[off-d.winOff:], nil
	}
	ahead := int64(readAhead)
	if d.ahead > 0 {
		ahead = int64(max(d.ahead, prefixSize))
	}
	n := int(min(size-off, ahead))
	if cap(d.win) < n {
		// Exactly n: most series files are far smaller than readAhead, and
		// a reader is opened per query, so a full-size window would be
		// allocated and cleared for nothing.
		d.win = make([]byte, n)
	}
	d.win = d.win[:n]
	if _, err := d.r.ReadAt(d.win, off); err != nil {
		d.win = d.win[:0]
		return nil, err
	}
	d.winOff = off
	return d.win, nil
}

// run walks frames from c up to size, appending blocks to out. It stops at
// EOF (tail complete), at an incomplete final frame (reported in the tail),
// or at the first error, returning what it committed before it.
func (d *discoverer) run(c chain, size int64, out []blockMeta) ([]blockMeta, chain, tailState, error) {
	for {
		if c.off == size {
			return out, c, tailState{Offset: c.off}, nil
		}
		if size < c.off {
			return out, c, tailState{Offset: c.off}, fmt.Errorf("%w: file is %d bytes, committed data ends at %d", ErrFileTruncated, size, c.off)
		}
		m, err := d.frame(&c, size)
		if err != nil {
			var t *tailState
			if errors.As(err, &t) {
				return out, c, *t, nil
			}
			return out, c, tailState{Offset: c.off}, err
		}
		out = append(out, m)
	}
}

func (t *tailState) Error() string { return "incomplete tail" }

// frame reads and checks the frame at c.off and advances c. An incomplete
// final frame comes back as a *tailState error.
func (d *discoverer) frame(c *chain, size int64) (blockMeta, error) {
	var m blockMeta
	off := c.off
	if size-off < prefixSize {
		return m, &tailState{Incomplete: true, Offset: off, Present: size - off}
	}
	// One read usually brings the whole frame: the store writes many small
	// blocks, and a syscall per field would dominate opening.
	pre, err := d.window(off, size)
	if err != nil {
		return m, err
	}
	p, err := parsePrefix(pre[:prefixSize], off, d.fh.ctx.lim)
	if err != nil {
		return m, err
	}
	if p.Type != frameData {
		return m, corruptf(off+8, "frame type %d after the schema frame, want data (2)", p.Type)
	}
	if p.Seq != c.seq {
		return m, corruptf(off+32, "frame sequence %d, want %d", p.Seq, c.seq)
	}
	total := p.total()
	if size-off < total {
		return m, &tailState{Incomplete: true, Offset: off, Present: size - off, Declared: total, Type: p.Type, Seq: p.Seq}
	}
	var hdr, tr []byte
	if total <= int64(len(pre)) {
		fr := pre[:total]
		hdr = fr[prefixSize : prefixSize+int(p.HeaderLen)]
		tr = fr[total-trailerSize:]
		if d.strict {
			if err := checkFrameBody(fr, off, p); err != nil {
				return m, err
			}
		} else {
			if got := crc(hdr); got != p.HeaderCRC {
				return m, corruptf(off+prefixSize, "frame %d header CRC32C %#08x, prefix says %#08x", p.Seq, got, p.HeaderCRC)
			}
			if err := checkTrailer(tr, off, p); err != nil {
				return m, err
			}
		}
	} else if d.strict {
		d.buf = grow(d.buf, int(total))
		if _, err := d.r.ReadAt(d.buf, off); err != nil {
			return m, err
		}
		if err := checkFrameBody(d.buf, off, p); err != nil {
			return m, err
		}
		hdr = d.buf[prefixSize : prefixSize+int(p.HeaderLen)]
		tr = d.buf[total-trailerSize:]
	} else {
		// Metadata-only (§6.2 MAY): read header and trailer, defer the
		// body CRC to the first read of the block.
		d.buf = grow(d.buf, int(p.HeaderLen)+trailerSize)
		hdr = d.buf[:p.HeaderLen]
		tr = d.buf[p.HeaderLen:]
		if _, err := d.r.ReadAt(hdr, off+prefixSize); err != nil {
			return m, err
		}
		if _, err := d.r.ReadAt(tr, off+total-trailerSize); err != nil {
			return m, err
		}
		if got := crc(hdr); got != p.HeaderCRC {
			return m, corruptf(off+prefixSize, "frame %d header CRC32C %#08x, prefix says %#08x", p.Seq, got, p.HeaderCRC)
		}
		if err := checkTrailer(tr, off, p); err != nil {
			return m, err
		}
	}
	if err := d.fh.ctx.parseBlockHeader(&d.h, hdr, off+prefixSize, p.PayloadLen, c.rowID); err != nil {
		return m, err
	}
	m = blockMeta{
		BlockInfo: BlockInfo{Seq: p.Seq, Offset: off, Bytes: total, Rows: int(d.h.Rows),
			BaseRowID: d.h.BaseRowID, Min: d.h.Min, Max: d.h.Max, Sorted: d.h.sorted()},
		headerLen: p.HeaderLen, payloadLen: p.PayloadLen,
	}
	c.off += total
	c.seq++
	if d.fh.pro.rowIDs() {
		c.rowID += uint64(d.h.Rows)
	}
	copy(c.trailer[:], tr)
	c.trailerOff = off + total - trailerSize
	return m, nil
}

// grow returns b resized to n, reallocating only when it must.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// withPath fills in the path of a corruption error.
func withPath(err error, path string) error {
	var ce *CorruptionError
	if errors.As(err, &ce) && ce.Path == "" {
		ce.Path = path
	}
	return err
}
