package acta

import (
	"fmt"

	"github.com/acta-remote/acta-remote/acta/internal/encoding"
)

// publish encodes the buffered rows as one data frame (§8), writes it at
// the committed end, and resets the buffers keeping their capacity.
func (w *Writer) publish() error {
	s := w.schema
	rows := w.rows
	w.payload, w.stats = w.payload[:0], w.stats[:0]
	w.cds, w.sds = w.cds[:0], w.sds[:0]
	encs := w.encs
	if rows < w.opts.CodecMinRows && w.encsBare != nil {
		encs = w.encsBare
	}
	for _, si := range w.ctx.byID {
		c := &s.Columns[si]
		cb := &w.cols[si]
		class, width := classOf(c.Type)
		dense := rows - cb.nulls
		vals := encoding.Values{N: dense, Width: width}
		switch class {
		case encoding.ClassBool:
			vals.Bools = cb.bools
		case encoding.ClassVar:
			vals.Offsets, vals.Data = cb.offs, cb.data
			if len(vals.Offsets) == 0 {
				vals.Offsets = []int{0}
			}
		default:
			vals.Fixed = cb.fixed
		}
		var validity []byte
		if cb.valid != nil {
			validity = cb.valid[:(rows+7)/8]
		}
		ec, err := encs[si].Encode(class, width, c.Nullable, rows, validity, vals)
		if err != nil {
			// Nothing was written: the buffered rows stay, but a block the
			// encoder refuses would be refused again, so the writer stops.
			w.poison = fmt.Errorf("encode column %q of block %d: %w", c.Name, w.ch.seq, err)
			return fmt.Errorf("%w: %v", ErrPoisoned, w.poison)
		}
		cd := colDesc{ID: c.ID, Layout: ec.Layout, Nulls: uint32(ec.NullCount), Dense: uint32(rows - ec.NullCount),
			FirstStream: uint32(len(w.sds)), NStreams: uint16(len(ec.Streams))}
		if ec.Implicit {
			cd.Flags |= colImplicit
		}
		if ec.Stats != nil {
			cd.Flags |= colHasStats
			cd.StatsKind = statsMinMax
			cd.StatsOff = uint32(len(w.stats)) // relative for now
			cd.StatsLen = uint32(len(ec.Stats))
			w.stats = append(w.stats, ec.Stats...)
		}
		w.cds = append(w.cds, cd)
		for _, st := range ec.Streams {
			sd := streamDesc{Kind: st.Kind, Transform: st.Transform, Codec: st.Codec,
				Off: uint64(len(w.payload)), Stored: uint64(len(st.Data)), RawLen: st.RawLen,
				Count: st.Count, CRC: crc(st.Data)}
			w.sds = append(w.sds, sd)
			w.payload = append(w.payload, st.Data...)
			pad := pad8(len(w.payload)) - len(w.payload)
			if len(st.Data) == 0 {
				// An empty stream still gets a payload offset of its own
				// (spec §8.2 SHOULD), so no reader has to decide whether
				// an empty range sharing the next stream's offset overlaps.
				pad = 8
			}
			w.payload = appendZeros(w.payload, pad)
		}
	}

	// Primary bounds and TS_SORTED (§8): verified over the values, in order.
	var flags uint32
	var lo, hi int64
	if pi := s.PrimaryIndex(); pi >= 0 {
		sorted := true
		v := w.cols[pi].fixed
		wd := s.Columns[pi].Type.ValueWidth()
		at := func(i int) int64 {
			if wd == 4 {
				return int64(int32(le.Uint32(v[i*4:])))
			}
			return int64(le.Uint64(v[i*8:]))
		}
		lo, hi = at(0), at(0)
		prev := lo
		for i := 1; i < rows; i++ {
			x := at(i)
			if x < prev {
				sorted = false
			}
			lo, hi, prev = min(lo, x), max(hi, x), x
		}
		if sorted {
			flags |= blockTSSorted
		}
	}
	base := noRowID
	if w.rowIDs {
		flags |= blockRowIDs
		base = w.ch.rowID
	}

	nstreams := len(w.sds)
	streamOff := blockHeaderSize + colDescSize*len(w.cds)
	statsOff := streamOff + streamDescSize*nstreams
	hlen := pad8(statsOff + len(w.stats))
	total := prefixSize + hlen + len(w.payload) + trailerSize
	w.frame = grow(w.frame, total)
	fr := w.frame
	h := fr[prefixSize : prefixSize+hlen]
	clear(h)
	le.PutUint64(h[0:], s.ID)
	le.PutUint64(h[8:], base)
	le.PutUint32(h[16:], uint32(rows))
	le.PutUint32(h[20:], uint32(len(w.cds)))
	le.PutUint64(h[24:], uint64(lo))
	le.PutUint64(h[32:], uint64(hi))
	le.PutUint32(h[40:], blockHeaderSize)
	le.PutUint32(h[44:], uint32(streamOff))
	le.PutUint32(h[48:], uint32(statsOff))
	le.PutUint32(h[52:], uint32(len(w.stats)))
	le.PutUint32(h[56:], flags)
	for i, cd := range w.cds {
		d := h[blockHeaderSize+i*colDescSize:]
		if cd.StatsKind != statsNone {
			cd.StatsOff += uint32(statsOff)
		}
		le.PutUint32(d[0:], cd.ID)
		le.PutUint16(d[4:], cd.Layout)
		le.PutUint16(d[6:], cd.Flags)
		le.PutUint32(d[8:], cd.Nulls)
		le.PutUint32(d[12:], cd.Dense)
		le.PutUint32(d[16:], cd.FirstStream)
		le.PutUint16(d[20:], cd.NStreams)
		le.PutUint16(d[22:], cd.StatsKind)
		le.PutUint32(d[24:], cd.StatsOff)
		le.PutUint32(d[28:], cd.StatsLen)
	}
	for i, sd := range w.sds {
		d := h[streamOff+i*streamDescSize:]
		le.PutUint16(d[0:], sd.Kind)
		le.PutUint16(d[2:], sd.Transform)
		le.PutUint16(d[4:], sd.Codec)
		le.PutUint64(d[8:], sd.Off)
		le.PutUint64(d[16:], sd.Stored)
		le.PutUint64(d[24:], sd.RawLen)
		le.PutUint64(d[32:], sd.Count)
		le.PutUint32(d[40:], sd.CRC)
	}
	copy(h[statsOff:], w.stats)
	copy(fr[prefixSize+hlen:], w.payload)
	seq := w.ch.seq
	putPrefix(fr, framePrefix{Type: frameData, HeaderLen: uint32(hlen), PayloadLen: uint64(len(w.payload)), Seq: seq, HeaderCRC: crc(h)})
	putTrailer(fr[total-trailerSize:], fr[:total-trailerSize], seq)

	if _, err := w.f.WriteAt(fr, w.ch.off); err != nil {
		// Part of the frame may be on disk: only recovery may decide what
		// the file holds now.
		w.poison = fmt.Errorf("write block %d at offset %d of %s: %w", seq, w.ch.off, w.path, err)
		return fmt.Errorf("%w: %v", ErrPoisoned, w.poison)
	}
	w.ch.off += int64(total)
	w.ch.seq++
	if w.rowIDs {
		w.ch.rowID += uint64(rows)
	}
	w.dirty = true
	w.sum.RowsWritten += int64(rows)
	w.sum.BlocksWritten++
	w.sum.LastSeq = seq
	w.sum.BytesWritten = w.ch.off
	w.reset()
	return nil
}

func (w *Writer) reset() {
	for i := range w.cols {
		cb := &w.cols[i]
		cb.fixed, cb.bools, cb.offs, cb.data = cb.fixed[:0], cb.bools[:0], cb.offs[:0], cb.data[:0]
		cb.valid, cb.nulls = nil, 0
	}
	w.rows, w.bytes = 0, 0
}
