package acta

import (
	"errors"
	"fmt"

	"github.com/acta-remote/acta-remote/acta/internal/encoding"
)

// ScanMetrics reports what a scan (or tail, or block read) did.
type ScanMetrics struct {
	BlocksConsidered   int64 // blocks the scan looked at
	BlocksPruned       int64 // of those, skipped on their primary bounds
	StreamsDecoded     int64
	RowsReturned       int64
	StreamBytesDecoded int64 // stored bytes of the streams decoded
	BytesRead          int64 // every byte read from the file (whole frames)
}

// decodeBlock reads block m, checks its body CRC, re-checks its header, and
// decodes the columns at schema indexes want (in that order). budget bounds
// the bytes the decode may materialize.
func (r *Reader) decodeBlock(m *blockMeta, want []int, budget int64, met *ScanMetrics) ([]Array, int, error) {
	cols, rows, err := r.decodeBlockAt(m, want, budget, met)
	if err != nil {
		err = withPath(err, r.path)
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrLimit) {
			err = fmt.Errorf("acta: block %d of %s at offset %d: %w", m.Seq, r.path, m.Offset, err)
		}
	}
	return cols, rows, err
}

func (r *Reader) decodeBlockAt(m *blockMeta, want []int, budget int64, met *ScanMetrics) ([]Array, int, error) {
	ctx := r.fh.ctx
	// The whole frame is read at once: its body CRC must hold before any of
	// its streams is trusted. Its size was bounded by the limits at discovery.
	buf := make([]byte, m.Bytes)
	if _, err := r.ra.ReadAt(buf, m.Offset); err != nil {
		return nil, 0, fmt.Errorf("read: %w", err)
	}
	met.BytesRead += m.Bytes
	p, err := parsePrefix(buf[:prefixSize], m.Offset, &r.lim)
	if err != nil {
		return nil, 0, err
	}
	if p.Seq != m.Seq || p.total() != m.Bytes || p.Type != frameData {
		return nil, 0, corruptf(m.Offset, "frame changed since discovery: sequence %d length %d, snapshot has %d and %d", p.Seq, p.total(), m.Seq, m.Bytes)
	}
	if err := checkFrameBody(buf, m.Offset, p); err != nil {
		return nil, 0, err
	}
	hoff := m.Offset + prefixSize
	hdr := buf[prefixSize : prefixSize+int(p.HeaderLen)]
	payload := buf[prefixSize+int(p.HeaderLen) : len(buf)-trailerSize]
	poff := hoff + int64(p.HeaderLen)
	var h blockHeader
	if err := ctx.parseBlockHeader(&h, hdr, hoff, p.PayloadLen, m.BaseRowID); err != nil {
		return nil, 0, err
	}
	if err := checkKnown(m, &h); err != nil {
		return nil, 0, err
	}
	rows := int(h.Rows)
	b := &encoding.Budget{Remaining: budget}
	out := make([]Array, len(want))
	var streams []encoding.Stream
	for k, si := range want {
		col := &r.fh.schema.Columns[si]
		cd := h.Cols[ctx.pos[si]]
		streams = streams[:0]
		for j := cd.FirstStream; j < cd.FirstStream+uint32(cd.NStreams); j++ {
			sd := h.Streams[j]
			data := payload[sd.Off : sd.Off+sd.Stored]
			if got := crc(data); got != sd.CRC {
				return nil, 0, corruptf(poff+int64(sd.Off), "block %d column %q stream %d CRC32C %#08x, descriptor says %#08x", m.Seq, col.Name, j, got, sd.CRC)
			}
			streams = append(streams, encoding.Stream{Kind: sd.Kind, Transform: sd.Transform, Codec: sd.Codec,
				Data: data, RawLen: sd.RawLen, Count: sd.Count})
			met.StreamsDecoded++
			met.StreamBytesDecoded += int64(sd.Stored)
		}
		class, w := classOf(col.Type)
		// The slot-per-row array costs rows × width (offsets for byte types)
		// on top of what the column layer materializes; charge it first.
		slot := int64(rows) * int64(max(w, 1))
		if class == encoding.ClassVar || class == encoding.ClassFixed {
			slot = int64(rows+1) * 8
		}
		if err := b.Charge(slot); err != nil {
			return nil, 0, limitf(hoff, "block %d column %q: decoding exceeds %d bytes", m.Seq, col.Name, budget)
		}
		validity, vals, err := encoding.Decode(class, w, col.Nullable, rows, cd.Layout, int(cd.Nulls), cd.Flags&colImplicit != 0, streams, b)
		if err != nil {
			at := hoff + blockHeaderSize + int64(ctx.pos[si])*colDescSize
			switch {
			case errors.Is(err, encoding.ErrLimit):
				return nil, 0, limitf(at, "block %d column %q: decoding exceeds %d bytes: %v", m.Seq, col.Name, budget, err)
			case errors.Is(err, encoding.ErrUnsupported):
				return nil, 0, fmt.Errorf("%w: block %d column %q at offset %d: %v", ErrUnsupported, m.Seq, col.Name, at, err)
			}
			return nil, 0, &CorruptionError{Offset: at, Reason: fmt.Sprintf("block %d column %q", m.Seq, col.Name), Err: err}
		}
		var vb Bitmap
		if validity != nil {
			vb = Bitmap(validity)
		}
		a, err := toArray(col.Type, rows, vb, vals)
		if err != nil {
			return nil, 0, corruptf(hoff+blockHeaderSize+int64(ctx.pos[si])*colDescSize, "block %d column %q: %v", m.Seq, col.Name, err)
		}
		if col.Type.ID == TypeUTF8 || col.Type.ID == TypeCategorical {
			for i := 0; i+1 < len(vals.Offsets); i++ {
				if !validUTF8(vals.Data[vals.Offsets[i]:vals.Offsets[i+1]]) {
					return nil, 0, corruptf(hoff, "block %d column %q value %d is not UTF-8", m.Seq, col.Name, i)
				}
			}
		}
		out[k] = a
		if col.ID == r.fh.schema.Primary {
			if err := checkPrimary(&h, a, rows, m.Seq, hoff); err != nil {
				return nil, 0, err
			}
		}
	}
	return out, rows, nil
}

// checkPrimary verifies what the header claims about decoded primary values
// (§8): a strict reader that decodes the primary column MUST check the
// TS_SORTED order and the bounds (first/last when sorted, min/max always).
func checkPrimary(h *blockHeader, a Array, rows int, seq uint64, hoff int64) error {
	v := primaryValues(a)
	first, last := v(0), v(rows-1)
	lo, hi, sorted := first, first, true
	prev := first
	for i := 1; i < rows; i++ {
		x := v(i)
		if x < prev {
			sorted = false
		}
		lo, hi, prev = min(lo, x), max(hi, x), x
	}
	if h.sorted() {
		if !sorted {
			return corruptf(hoff+56, "block %d claims TS_SORTED but its primary values decrease", seq)
		}
		if h.Min != first || h.Max != last {
			return corruptf(hoff+24, "block %d is TS_SORTED but bounds [%d, %d] are not its first/last values [%d, %d]", seq, h.Min, h.Max, first, last)
		}
	}
	if h.Min != lo || h.Max != hi {
		return corruptf(hoff+24, "block %d bounds [%d, %d], primary values span [%d, %d]", seq, h.Min, h.Max, lo, hi)
	}
	return nil
}
