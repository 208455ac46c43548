package acta

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acta-remote/acta-remote/durable"
)

// Salvage (spec §13.2): after a corrupt region, search the 8-byte boundaries
// for frame prefixes and keep a candidate only when its prefix CRC, bounded
// lengths, header CRC, trailer, sequence number and body CRC all validate.
// Beyond §13.2, a candidate's block header must also check against the
// schema and every stream must decode, so the salvaged file passes full
// validation. The kept frames are written to a new file, renumbered so the
// sequence (and row-ID) chains hold again; everything not carried over is
// reported as byte ranges, and a gap is never reported as complete.
//
// Why scan every boundary instead of jumping over a damaged frame whose
// prefix still validates: a lost or shifted disk page leaves that prefix
// intact while the next frame starts before the end the prefix declares.

// ErrSalvageNeedsSchema is wrapped when the file's prologue or schema frame
// is damaged: its blocks cannot be checked or written without a schema, so
// SalvageOptions.SchemaFrom must name a healthy file of the same schema.
var ErrSalvageNeedsSchema = errors.New("acta: salvage needs a schema: the prologue or schema frame is damaged")

// SalvageOptions configure PlanSalvage and Salvage.
type SalvageOptions struct {
	// SchemaFrom, when the file's own prologue or schema frame is damaged,
	// names a healthy Acta file whose schema frame (and, if the damaged
	// file's prologue is damaged too, prologue features) stand in for them.
	// A block is kept only if its header checks against that schema and its
	// streams decode under it; at least one block must, or nothing is
	// salvaged. It should be a file written by the same program for the same
	// kind of data. Unused while the file's own head is intact.
	SchemaFrom string
	// Limits bound what one candidate frame may allocate (zero fields:
	// DefaultLimits). A frame whose intact prefix exceeds them stops the
	// salvage with ErrLimit rather than being dropped as damage.
	Limits Limits
}

// SkipKind says why a byte range was not carried over.
type SkipKind uint8

const (
	// SkipCorrupt is damage: bytes that are no valid frame, between or
	// after kept frames; or a zero-length range where the sequence or
	// row-ID chain jumps although no byte is damaged (frames are missing).
	SkipCorrupt SkipKind = iota
	// SkipHead is a damaged prologue or schema frame, replaced from
	// SalvageOptions.SchemaFrom.
	SkipHead
	// SkipIncompleteTail is an interrupted append: the file ends inside its
	// final frame (a valid prefix declaring more bytes than remain, or fewer
	// bytes than a prefix). It was never committed (§13.2 ignores it), so
	// cutting it loses nothing; recovery's repair cuts the same bytes.
	SkipIncompleteTail
)

func (k SkipKind) String() string {
	switch k {
	case SkipHead:
		return "head"
	case SkipIncompleteTail:
		return "incomplete_tail"
	}
	return "corrupt"
}

// SkippedRange is a byte range [Offset, End) of the input not carried over.
type SkippedRange struct {
	Offset, End int64
	Kind        SkipKind
	// Reason is why the first byte of the range did not start a frame that
	// could be kept, naming the rule and the numbers.
	Reason string
	// LostFrom and LostTo are the data-frame sequence numbers lost in the
	// range (inclusive), from the sequence numbers of the kept frames around
	// it. LostFrom is 0 when no frame is known lost. LostTo is 0 when the
	// range runs to the end of the file: frames from LostFrom on may have
	// been lost there, and how many (if any) is unknown.
	LostFrom, LostTo uint64
}

// Bytes is the length of the range.
func (s SkippedRange) Bytes() int64 { return s.End - s.Offset }

// SalvagedBlock is one data frame carried over.
type SalvagedBlock struct {
	Offset    int64  // in the input
	Bytes     int64  // frame length, the same in the output
	Seq       uint64 // in the input
	NewOffset int64  // in the output (Salvage only)
	NewSeq    uint64 // in the output: 1, 2, ...
	Rows      int
}

// SalvageReport says what salvage found, kept and skipped.
type SalvageReport struct {
	Path string
	Size int64 // input size when scanned
	// HeadFrom is "" when the file's own prologue and schema frame were
	// kept, else SalvageOptions.SchemaFrom.
	HeadFrom string
	HeadSize int64 // bytes of prologue and schema frame in the output
	Blocks   []SalvagedBlock
	Rows     int64          // rows in Blocks
	Skipped  []SkippedRange // in file order; with Blocks and the head they tile [0, Size)
	Out      string         // the file written (Salvage only)
	OutSize  int64          // its size
}

// Lossless reports whether nothing committed was lost: every skipped range
// is an interrupted tail. A report with a damaged range is never lossless.
func (r *SalvageReport) Lossless() bool {
	for _, s := range r.Skipped {
		if s.Kind != SkipIncompleteTail {
			return false
		}
	}
	return true
}

// Intact reports whether the file needs no salvage: nothing was skipped.
func (r *SalvageReport) Intact() bool { return len(r.Skipped) == 0 }

// PlanSalvage scans path as Salvage would and reports what it would keep
// and skip, writing nothing. It returns an error wrapping
// ErrSalvageNeedsSchema when the head is damaged and no SchemaFrom is set,
// ErrUnsupportedVersion for another format version, ErrLimit or
// ErrUnsupported for an intact frame this build cannot check, or an I/O
// error.
func PlanSalvage(path string, opts SalvageOptions) (*SalvageReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acta: salvage: %w", err)
	}
	defer f.Close()
	sv, err := scanSalvage(path, f, opts)
	return sv.rep, withPath(err, path)
}

// Salvage scans path (never trusting an earlier plan) and writes the kept
// frames to out, which must not exist: the prologue and schema frame, then
// every kept data frame, bit for bit except its sequence number (and, with
// row IDs, its base row ID) and the CRCs covering them, renumbered so the
// file validates. The file is written under out+".tmp", synced, fully
// validated, renamed to out, and the directory synced, so a crash leaves
// out absent or complete. The report says what was skipped; check
// Lossless before presenting the result as complete. Errors are those of
// PlanSalvage, plus ErrCorrupt when a replaced head is confirmed by no block.
func Salvage(path, out string, opts SalvageOptions) (*SalvageReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acta: salvage: %w", err)
	}
	defer f.Close()
	sv, err := scanSalvage(path, f, opts)
	rep := sv.rep
	if err != nil {
		return rep, withPath(err, path)
	}
	if rep.HeadFrom != "" && len(rep.Blocks) == 0 {
		return rep, &CorruptionError{Path: path, Offset: 0, Err: ErrSalvageNeedsSchema,
			Reason: fmt.Sprintf("no block checks against the schema of %s; nothing salvaged", rep.HeadFrom)}
	}
	if _, err := os.Lstat(out); err == nil {
		return rep, fmt.Errorf("acta: salvage %s: output %s exists", path, out)
	}
	tmp := out + ".tmp"
	if err := sv.write(tmp); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("acta: salvage %s: write %s: %w", path, tmp, err)
	}
	if err := ValidateWithLimits(tmp, ValidateFull, opts.Limits); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("acta: salvage %s: BUG: the salvaged file does not validate: %w", path, err)
	}
	if _, err := os.Lstat(out); err == nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("acta: salvage %s: output %s appeared while writing", path, out)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("acta: salvage %s: %w", path, err)
	}
	if err := durable.SyncDir(filepath.Dir(out)); err != nil {
		return rep, fmt.Errorf("acta: salvage %s: sync directory of %s: %w", path, out, err)
	}
	rep.Out = out
	return rep, nil
}

// salvager is one salvage scan: the report it fills, a reader over the
// input for block checks, the head to write, and scratch.
type salvager struct {
	rep     *SalvageReport
	r       *Reader
	head    []byte // prologue and schema frame to write
	lastSeq uint64 // sequence of the last kept frame
	win     []byte // read-ahead window: file bytes [winOff, winOff+len(win))
	winOff  int64
	buf     []byte // one whole frame
}

// window returns file bytes from off: at least a prefix's worth when the
// file holds them.
func (sv *salvager) window(off int64) ([]byte, error) {
	if off >= sv.winOff && off+prefixSize <= sv.winOff+int64(len(sv.win)) {
		return sv.win[off-sv.winOff:], nil
	}
	n := int(min(sv.rep.Size-off, readAhead))
	sv.win = grow(sv.win, n)
	if _, err := sv.r.f.ReadAt(sv.win, off); err != nil {
		sv.win = sv.win[:0]
		return nil, err
	}
	sv.winOff = off
	return sv.win, nil
}

// scanSalvage reads the head (or its stand-in) and walks the data frames.
// The returned salvager always carries a report, also with an error.
func scanSalvage(path string, f *os.File, opts SalvageOptions) (*salvager, error) {
	sv := &salvager{rep: &SalvageReport{Path: path}}
	fi, err := f.Stat()
	if err != nil {
		return sv, err
	}
	rep := sv.rep
	rep.Size = fi.Size()
	lim := opts.Limits.withDefaults()
	sv.r = &Reader{path: path, f: f, ra: f, lim: lim}
	off, gap, err := sv.readHead(opts, &lim)
	if err != nil {
		return sv, err
	}
	tailAt := int64(-1) // offset of an interrupted final frame, when a gap starts with one
	expectBase := uint64(0)
	for off < rep.Size {
		if rep.Size-off < prefixSize {
			if gap == nil {
				tailAt = off
			}
			break
		}
		b, err := sv.candidate(off)
		var inc *tailState
		switch {
		case err == nil:
		case errors.As(err, &inc):
			// Only the frame that would come next can be an interrupted
			// append; one further on means frames are missing before it.
			if gap == nil && inc.Seq == sv.lastSeq+1 {
				tailAt = off
			}
		case errors.Is(err, ErrCorrupt):
		default:
			return sv, err // I/O, or an intact frame this build cannot check
		}
		if err != nil {
			if gap == nil {
				reason := reasonOf(err)
				if inc != nil {
					reason = fmt.Sprintf("frame %d declares %d bytes, the file holds %d of them", inc.Seq, inc.Declared, inc.Present)
				}
				gap = &SkippedRange{Offset: off, Kind: SkipCorrupt, Reason: reason}
			}
			off += frameAlign
			continue
		}
		switch {
		case gap != nil:
			gap.End = off
			if b.Seq > sv.lastSeq+1 {
				gap.LostFrom, gap.LostTo = sv.lastSeq+1, b.Seq-1
			}
			rep.Skipped = append(rep.Skipped, *gap)
			gap, tailAt = nil, -1
		case b.Seq != sv.lastSeq+1:
			rep.Skipped = append(rep.Skipped, SkippedRange{Offset: off, End: off, Kind: SkipCorrupt,
				Reason:   fmt.Sprintf("sequence jumps from %d to %d with no damaged byte between", sv.lastSeq, b.Seq),
				LostFrom: sv.lastSeq + 1, LostTo: b.Seq - 1})
		case sv.r.fh.pro.rowIDs() && b.base != expectBase:
			rep.Skipped = append(rep.Skipped, SkippedRange{Offset: off, End: off, Kind: SkipCorrupt,
				Reason: fmt.Sprintf("base row ID %d, row-ID chain expects %d, with no damaged byte between", b.base, expectBase)})
		}
		expectBase = b.base + uint64(b.Rows)
		sv.lastSeq = b.Seq
		b.NewSeq = uint64(len(rep.Blocks)) + 1
		rep.Blocks = append(rep.Blocks, b.SalvagedBlock)
		rep.Rows += int64(b.Rows)
		off += b.Bytes
	}
	switch {
	case gap != nil && gap.Offset == tailAt:
		gap.End, gap.Kind = rep.Size, SkipIncompleteTail
		gap.Reason = "interrupted append: " + gap.Reason
		rep.Skipped = append(rep.Skipped, *gap)
	case gap != nil:
		gap.End, gap.LostFrom = rep.Size, sv.lastSeq+1
		rep.Skipped = append(rep.Skipped, *gap)
	case tailAt >= 0:
		rep.Skipped = append(rep.Skipped, SkippedRange{Offset: tailAt, End: rep.Size, Kind: SkipIncompleteTail,
			Reason: fmt.Sprintf("interrupted append: %d bytes, fewer than a frame prefix", rep.Size-tailAt)})
	}
	return sv, nil
}

// reasonOf is an error's reason without the file path, which the report
// already names.
func reasonOf(err error) string {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		if ce.Err != nil {
			return ce.Reason + ": " + ce.Err.Error()
		}
		return ce.Reason
	}
	return err.Error()
}

// readHead takes the file's own prologue and schema frame, or, when they
// are damaged, opts.SchemaFrom's schema frame (and its prologue features if
// the file's prologue is damaged too). It returns where the scan for data
// frames starts and, for a replaced head, the open skipped range that the
// first kept frame closes.
func (sv *salvager) readHead(opts SalvageOptions, lim *Limits) (int64, *SkippedRange, error) {
	rep, f := sv.rep, sv.r.f
	fh, err := readHead(f, rep.Size, lim)
	if err == nil {
		sv.r.fh, sv.head, rep.HeadSize = fh, fh.raw, int64(len(fh.raw))
		return rep.HeadSize, nil, nil
	}
	if !errors.Is(err, ErrCorrupt) {
		return 0, nil, err // another version, a limit, I/O
	}
	if opts.SchemaFrom == "" {
		return 0, nil, &CorruptionError{Offset: offsetOf(err), Reason: reasonOf(err), Err: ErrSalvageNeedsSchema}
	}
	donor, derr := readDonorHead(opts.SchemaFrom, lim)
	if derr != nil {
		return 0, nil, derr
	}
	// The file's own prologue is kept when it is intact, so only the
	// schema frame is lost; else the donor's features go into a prologue
	// with a new file ID (the old one is among the lost bytes).
	var pb [prologueSize]byte
	n, _ := f.ReadAt(pb[:], 0)
	pro, perr := parsePrologue(pb[:n])
	if errors.Is(perr, ErrUnsupportedVersion) {
		return 0, nil, perr
	}
	gap := &SkippedRange{Offset: prologueSize, Kind: SkipHead, Reason: "schema frame damaged: " + reasonOf(err)}
	head := append([]byte(nil), pb[:]...)
	if perr != nil {
		pro = prologue{Features: donor.pro.Features}
		if _, err := rand.Read(pro.FileID[:]); err != nil {
			return 0, nil, err
		}
		head = appendPrologue(nil, pro)
		gap.Offset, gap.Reason = 0, "prologue damaged: "+reasonOf(perr)
	}
	head = append(head, donor.raw[prologueSize:]...)
	rep.HeadFrom, rep.HeadSize, sv.head = opts.SchemaFrom, int64(len(head)), head
	sv.r.fh = &fileHead{pro: pro, schema: donor.schema, raw: head, ctx: newBlockCtx(donor.schema, pro.rowIDs(), lim)}
	// The first candidate is the damaged schema frame itself (or garbage),
	// refused as not a data frame; the gap runs to the first kept frame.
	return prologueSize, gap, nil
}

// readDonorHead reads the prologue and schema frame of the file standing
// in for a damaged head; they must be intact.
func readDonorHead(path string, lim *Limits) (*fileHead, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acta: salvage: schema source: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("acta: salvage: schema source: %w", err)
	}
	fh, err := readHead(f, fi.Size(), lim)
	if err != nil {
		return nil, fmt.Errorf("acta: salvage: schema source %s: %w", path, withPath(err, path))
	}
	return fh, nil
}

func offsetOf(err error) int64 {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		return ce.Offset
	}
	return -1
}

// salvageCandidate is a frame that passed every check, with its base row ID.
type salvageCandidate struct {
	SalvagedBlock
	base uint64
}

// candidate checks the frame that may start at off: every §13.2 check, the
// block header against the schema, and a full decode. A frame whose prefix
// validates but which runs past the end of the file comes back as a
// *tailState. Errors wrapping ErrCorrupt refuse the candidate; any other
// error (I/O, ErrLimit or ErrUnsupported on an intact frame) stops the scan.
func (sv *salvager) candidate(off int64) (salvageCandidate, error) {
	var c salvageCandidate
	r, rep := sv.r, sv.rep
	b, err := sv.window(off)
	if err != nil {
		return c, err
	}
	if !bytes.Equal(b[:8], frameMagic[:]) {
		return c, corruptf(off, "no frame magic")
	}
	p, err := parsePrefix(b[:prefixSize], off, &r.lim)
	if err != nil {
		return c, err
	}
	if p.Type != frameData {
		return c, corruptf(off+8, "frame type %d, want data (2)", p.Type)
	}
	if p.Seq <= sv.lastSeq {
		return c, corruptf(off+32, "frame sequence %d is not after the last kept frame's %d", p.Seq, sv.lastSeq)
	}
	total := p.total()
	if total > rep.Size-off {
		return c, &tailState{Incomplete: true, Offset: off, Present: rep.Size - off, Declared: total, Type: p.Type, Seq: p.Seq}
	}
	sv.buf = grow(sv.buf, int(total))
	fr := sv.buf
	if _, err := r.f.ReadAt(fr, off); err != nil {
		return c, err
	}
	if err := checkFrameBody(fr, off, p); err != nil {
		return c, err
	}
	hdr := fr[prefixSize : prefixSize+int(p.HeaderLen)]
	var h blockHeader
	base := noRowID
	if len(hdr) >= blockHeaderSize {
		base = le.Uint64(hdr[8:])
	}
	// Salvage renumbers row IDs, so the header is checked against its own
	// base row ID rather than the broken chain.
	if err := r.fh.ctx.parseBlockHeader(&h, hdr, off+prefixSize, p.PayloadLen, base); err != nil {
		return c, err
	}
	m := blockMeta{BlockInfo: BlockInfo{Seq: p.Seq, Offset: off, Bytes: total, Rows: int(h.Rows), BaseRowID: h.BaseRowID,
		Min: h.Min, Max: h.Max, Sorted: h.sorted()}, headerLen: p.HeaderLen, payloadLen: p.PayloadLen}
	if err := r.validateBlock(&m); err != nil {
		return c, err
	}
	c.SalvagedBlock = SalvagedBlock{Offset: off, Bytes: total, Seq: p.Seq, Rows: int(h.Rows)}
	c.base = h.BaseRowID
	return c, nil
}

// write writes the salvaged file to tmp (created, never replaced) and syncs
// it. Kept frames are copied from the input and renumbered where needed.
func (sv *salvager) write(tmp string) error {
	rep := sv.rep
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.Write(sv.head); err != nil {
		return err
	}
	off, base := int64(len(sv.head)), uint64(0)
	rowIDs := sv.r.fh.pro.rowIDs()
	for i := range rep.Blocks {
		b := &rep.Blocks[i]
		sv.buf = grow(sv.buf, int(b.Bytes))
		fr := sv.buf
		if _, err := sv.r.f.ReadAt(fr, b.Offset); err != nil {
			return fmt.Errorf("read frame %d at %d: %w", b.Seq, b.Offset, err)
		}
		if b.NewSeq != b.Seq || rowIDs && le.Uint64(fr[prefixSize+8:]) != base {
			renumberFrame(fr, b.NewSeq, base, rowIDs)
		}
		if _, err := w.Write(fr); err != nil {
			return err
		}
		b.NewOffset = off
		off += b.Bytes
		if rowIDs {
			base += uint64(b.Rows)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	rep.OutSize = off
	return f.Close()
}

// renumberFrame gives a data frame sequence seq (prefix and trailer) and,
// with row IDs, base row ID base, and recomputes the header, prefix, body
// and trailer CRCs that cover them. The payload is not touched.
func renumberFrame(fr []byte, seq, base uint64, rowIDs bool) {
	hl := int(le.Uint32(fr[16:]))
	if rowIDs {
		le.PutUint64(fr[prefixSize+8:], base)
		le.PutUint32(fr[40:], crc(fr[prefixSize:prefixSize+hl]))
	}
	le.PutUint64(fr[32:], seq)
	le.PutUint32(fr[44:], crc(fr[:44]))
	body := len(fr) - trailerSize
	putTrailer(fr[body:], fr[:body], seq)
}
