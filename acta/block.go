package acta

import (
	"slices"
)

// Data frame header codec (spec §8). Layout of the frame-specific header:
//
//	0   block header, 64 bytes: schemaID(8) baseRowID(8) rows(4) columns(4)
//	    primaryMin(8) primaryMax(8) colTableOff(4)=64 streamTableOff(4)
//	    statsOff(4) statsLen(4) flags(4) reserved(4)
//	64  column table: one 32-byte descriptor per column, sorted by ID
//	    id(4) layout(2) flags(2) nulls(4) dense(4) firstStream(4)
//	    streams(2) statsKind(2) statsOff(4) statsLen(4)
//	..  stream table: 48-byte descriptors kind(2) transform(2) codec(2)
//	    flags(2) payloadOff(8) stored(8) transformed(8) count(8) crc(4) rsv(4)
//	..  statistics area, then zero padding to eight

type colDesc struct {
	ID          uint32
	Layout      uint16
	Flags       uint16
	Nulls       uint32
	Dense       uint32
	FirstStream uint32
	NStreams    uint16
	StatsKind   uint16
	StatsOff    uint32
	StatsLen    uint32
}

type streamDesc struct {
	Kind, Transform, Codec uint16
	Off, Stored, RawLen    uint64
	Count                  uint64
	CRC                    uint32
}

// blockHeader is a parsed data frame header. Cols are in column-ID order.
type blockHeader struct {
	SchemaID  uint64
	BaseRowID uint64
	Rows      uint32
	Min, Max  int64
	StatsOff  uint32
	StatsLen  uint32
	Flags     uint32
	Cols      []colDesc
	Streams   []streamDesc
}

func (h *blockHeader) sorted() bool { return h.Flags&blockTSSorted != 0 }

// blockCtx is what checking a data frame header needs from the file.
type blockCtx struct {
	schema *Schema
	byID   []int // schema indexes in ascending column-ID order
	pos    []int // schema index -> position in the column table
	rowIDs bool
	lim    *Limits
}

func newBlockCtx(s *Schema, rowIDs bool, lim *Limits) *blockCtx {
	byID := make([]int, len(s.Columns))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(a, b int) int { return int(s.Columns[a].ID) - int(s.Columns[b].ID) })
	pos := make([]int, len(byID))
	for p, si := range byID {
		pos[si] = p
	}
	return &blockCtx{schema: s, byID: byID, pos: pos, rowIDs: rowIDs, lim: lim}
}

// parseBlockHeader decodes and checks every MUST of §8, §8.1 and §8.2 that
// can be checked without decoding a stream. b is the padded header, hoff its
// file offset, payloadLen the frame's payload length. expectBase is the base
// row ID the chain expects when row IDs are on. h's slices are reused.
func (c *blockCtx) parseBlockHeader(h *blockHeader, b []byte, hoff int64, payloadLen uint64, expectBase uint64) error {
	if len(b) < blockHeaderSize {
		return corruptf(hoff, "data frame header is %d bytes, shorter than the %d-byte block header", len(b), blockHeaderSize)
	}
	s := c.schema
	h.SchemaID = le.Uint64(b[0:])
	h.BaseRowID = le.Uint64(b[8:])
	h.Rows = le.Uint32(b[16:])
	ncols := le.Uint32(b[20:])
	h.Min = int64(le.Uint64(b[24:]))
	h.Max = int64(le.Uint64(b[32:]))
	colOff, streamOff := le.Uint32(b[40:]), le.Uint32(b[44:])
	h.StatsOff, h.StatsLen = le.Uint32(b[48:]), le.Uint32(b[52:])
	h.Flags = le.Uint32(b[56:])
	if h.SchemaID != s.ID {
		return corruptf(hoff, "block schema ID %d, schema frame says %d", h.SchemaID, s.ID)
	}
	if int(ncols) != len(s.Columns) {
		return corruptf(hoff+20, "block column count %d, schema has %d", ncols, len(s.Columns))
	}
	if h.Rows == 0 {
		return corruptf(hoff+16, "empty data block (row count 0)")
	}
	if int64(h.Rows) > int64(c.lim.MaxRowsPerBlock) {
		return limitf(hoff+16, "block declares %d rows, limit %d", h.Rows, c.lim.MaxRowsPerBlock)
	}
	if h.Flags&^(blockRowIDs|blockTSSorted) != 0 {
		return corruptf(hoff+56, "unknown block flags %#x", h.Flags)
	}
	if (h.Flags&blockRowIDs != 0) != c.rowIDs {
		return corruptf(hoff+56, "block ROW_IDS flag %v disagrees with the file feature %v", h.Flags&blockRowIDs != 0, c.rowIDs)
	}
	if c.rowIDs {
		if h.BaseRowID != expectBase {
			return corruptf(hoff+8, "base row ID %d, row-ID chain expects %d", h.BaseRowID, expectBase)
		}
		if h.BaseRowID > noRowID-1-uint64(h.Rows) {
			return corruptf(hoff+8, "base row ID %d + %d rows overflows", h.BaseRowID, h.Rows)
		}
	} else if h.BaseRowID != noRowID {
		return corruptf(hoff+8, "base row ID %d without ROW_IDS, want UINT64_MAX", h.BaseRowID)
	}
	if s.Primary == 0 {
		if h.Min != 0 || h.Max != 0 {
			return corruptf(hoff+24, "primary bounds [%d, %d] must be zero without a primary column", h.Min, h.Max)
		}
		if h.sorted() {
			return corruptf(hoff+56, "TS_SORTED set without a primary column")
		}
	} else if h.Min > h.Max {
		return corruptf(hoff+24, "primary minimum %d exceeds maximum %d", h.Min, h.Max)
	}
	if colOff != blockHeaderSize {
		return corruptf(hoff+40, "column table offset %d, want %d", colOff, blockHeaderSize)
	}
	wantStream := uint64(blockHeaderSize) + colDescSize*uint64(ncols)
	if uint64(streamOff) != wantStream {
		return corruptf(hoff+44, "stream table offset %d, want %d", streamOff, wantStream)
	}
	if h.StatsOff < streamOff || (h.StatsOff-streamOff)%streamDescSize != 0 {
		return corruptf(hoff+48, "statistics offset %d: not stream table %d plus a multiple of %d", h.StatsOff, streamOff, streamDescSize)
	}
	if uint64(h.StatsOff)+uint64(h.StatsLen) > uint64(len(b)) {
		return corruptf(hoff+52, "statistics area [%d, +%d) outside the %d-byte header", h.StatsOff, h.StatsLen, len(b))
	}
	nstreams := int(h.StatsOff-streamOff) / streamDescSize

	h.Cols = slices.Grow(h.Cols[:0], int(ncols))[:ncols]
	for i, si := range c.byID {
		col := &s.Columns[si]
		at := hoff + blockHeaderSize + int64(i)*colDescSize
		d := b[blockHeaderSize+i*colDescSize:]
		cd := colDesc{
			ID: le.Uint32(d[0:]), Layout: le.Uint16(d[4:]), Flags: le.Uint16(d[6:]),
			Nulls: le.Uint32(d[8:]), Dense: le.Uint32(d[12:]), FirstStream: le.Uint32(d[16:]),
			NStreams: le.Uint16(d[20:]), StatsKind: le.Uint16(d[22:]),
			StatsOff: le.Uint32(d[24:]), StatsLen: le.Uint32(d[28:]),
		}
		if cd.ID != col.ID {
			return corruptf(at, "column descriptor %d has ID %d, want %d (sorted by ID)", i, cd.ID, col.ID)
		}
		if cd.Flags&^(colImplicit|colHasStats) != 0 {
			return corruptf(at+6, "column %d: unknown column flags %#x", cd.ID, cd.Flags)
		}
		if cd.Layout > maxLayout {
			return corruptf(at+4, "column %d: unknown layout %d", cd.ID, cd.Layout)
		}
		if cd.Nulls > h.Rows || cd.Dense != h.Rows-cd.Nulls {
			return corruptf(at+8, "column %d: %d nulls + %d dense values != %d rows", cd.ID, cd.Nulls, cd.Dense, h.Rows)
		}
		if !col.Nullable && cd.Nulls != 0 {
			return corruptf(at+8, "column %d is not nullable but has %d nulls", cd.ID, cd.Nulls)
		}
		if col.Nullable && cd.Flags&colImplicit != 0 && cd.Nulls != 0 && cd.Nulls != h.Rows {
			return corruptf(at+6, "column %d: implicit validity with %d nulls of %d rows", cd.ID, cd.Nulls, h.Rows)
		}
		if uint64(cd.FirstStream)+uint64(cd.NStreams) > uint64(nstreams) {
			return corruptf(at+16, "column %d: streams [%d, +%d) outside the %d-stream table", cd.ID, cd.FirstStream, cd.NStreams, nstreams)
		}
		if cd.StatsKind > statsMinMax {
			return corruptf(at+22, "column %d: unknown statistics kind %d", cd.ID, cd.StatsKind)
		}
		if (cd.Flags&colHasStats != 0) != (cd.StatsKind != statsNone) {
			return corruptf(at+6, "column %d: statistics flag and kind %d disagree", cd.ID, cd.StatsKind)
		}
		if cd.StatsKind == statsNone {
			if cd.StatsOff != 0 || cd.StatsLen != 0 {
				return corruptf(at+24, "column %d: statistics range without statistics", cd.ID)
			}
		} else if cd.StatsOff < h.StatsOff || uint64(cd.StatsOff)+uint64(cd.StatsLen) > uint64(h.StatsOff)+uint64(h.StatsLen) {
			return corruptf(at+24, "column %d: statistics [%d, +%d) outside the statistics area", cd.ID, cd.StatsOff, cd.StatsLen)
		}
		h.Cols[i] = cd
	}

	h.Streams = slices.Grow(h.Streams[:0], nstreams)[:nstreams]
	for i := range h.Streams {
		at := hoff + int64(streamOff) + int64(i)*streamDescSize
		d := b[int(streamOff)+i*streamDescSize:]
		sd := streamDesc{
			Kind: le.Uint16(d[0:]), Transform: le.Uint16(d[2:]), Codec: le.Uint16(d[4:]),
			Off: le.Uint64(d[8:]), Stored: le.Uint64(d[16:]), RawLen: le.Uint64(d[24:]),
			Count: le.Uint64(d[32:]), CRC: le.Uint32(d[40:]),
		}
		if f := le.Uint16(d[6:]); f != 0 {
			return corruptf(at+6, "stream %d: flags %#x must be zero", i, f)
		}
		if sd.Kind == 0 || sd.Kind > maxStreamKind {
			return corruptf(at, "stream %d: unknown kind %d", i, sd.Kind)
		}
		if sd.Transform > maxTransform {
			return corruptf(at+2, "stream %d: unknown transform %d", i, sd.Transform)
		}
		if sd.Codec > 1 {
			return corruptf(at+4, "stream %d: unknown codec %d", i, sd.Codec)
		}
		if sd.Off%frameAlign != 0 {
			return corruptf(at+8, "stream %d: payload offset %d not 8-byte aligned", i, sd.Off)
		}
		if sd.Stored > uint64(c.lim.MaxStreamBytes) || sd.RawLen > uint64(c.lim.MaxStreamBytes) {
			return limitf(at+16, "stream %d: stored %d / transformed %d bytes, limit %d", i, sd.Stored, sd.RawLen, c.lim.MaxStreamBytes)
		}
		if sd.Off > payloadLen || sd.Stored > payloadLen-sd.Off {
			return corruptf(at+8, "stream %d: range [%d, +%d) outside the %d-byte payload", i, sd.Off, sd.Stored, payloadLen)
		}
		if sd.Codec == 0 && sd.Stored != sd.RawLen {
			return corruptf(at+16, "stream %d: uncompressed but stored %d != transformed %d", i, sd.Stored, sd.RawLen)
		}
		h.Streams[i] = sd
	}
	// Non-nullable columns have no validity stream (§8.1).
	for i, si := range c.byID {
		if s.Columns[si].Nullable {
			continue
		}
		cd := h.Cols[i]
		for _, sd := range h.Streams[cd.FirstStream : cd.FirstStream+uint32(cd.NStreams)] {
			if sd.Kind == 1 {
				return corruptf(hoff+blockHeaderSize+int64(i)*colDescSize, "column %d is not nullable but has a validity stream", cd.ID)
			}
		}
	}
	return checkOverlap(h.Streams, hoff)
}

// checkOverlap refuses overlapping stream ranges (§8.2). Empty ranges
// overlap nothing. Streams written in offset order (ours, the reference
// writer's) are checked in one pass; others are sorted first.
func checkOverlap(ss []streamDesc, hoff int64) error {
	ordered := true
	for i := 1; i < len(ss); i++ {
		if ss[i].Off < ss[i-1].Off {
			ordered = false
			break
		}
	}
	idx := make([]int, 0, 8)
	for i := range ss {
		if ss[i].Stored > 0 {
			idx = append(idx, i)
		}
	}
	if !ordered {
		slices.SortFunc(idx, func(a, b int) int {
			if ss[a].Off < ss[b].Off {
				return -1
			} else if ss[a].Off > ss[b].Off {
				return 1
			}
			return 0
		})
	}
	for k := 1; k < len(idx); k++ {
		a, b := ss[idx[k-1]], ss[idx[k]]
		if a.Off+a.Stored > b.Off {
			return corruptf(hoff, "streams %d [%d, +%d) and %d [%d, +%d) overlap", idx[k-1], a.Off, a.Stored, idx[k], b.Off, b.Stored)
		}
	}
	return nil
}
