package encoding

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// check validates the options that do not depend on a column's class.
func (o Options) check() error {
	if o.Policy > PolicyFixed {
		return fmt.Errorf("encoding: policy %d is not raw, adaptive or fixed", o.Policy)
	}
	if o.Codec > CodecZstd {
		return fmt.Errorf("encoding: codec %d is not none (0) or zstd (1)", o.Codec)
	}
	if o.ZstdLevel < 0 || o.ZstdLevel > 22 {
		return fmt.Errorf("encoding: zstd level %d outside 1..22", o.ZstdLevel)
	}
	if o.Stats > StatsAutomatic {
		return fmt.Errorf("encoding: statistics policy %d is not none, minmax or automatic", o.Stats)
	}
	if o.Policy == PolicyFixed {
		if o.FixedLayout > LayoutRunLength {
			return fmt.Errorf("encoding: fixed layout %d is not a v0.2 layout", o.FixedLayout)
		}
		if o.FixedLayout == LayoutPlain && o.Transform > TransformBoolRLE {
			return fmt.Errorf("encoding: fixed transform %d is not a v0.2 transform", o.Transform)
		}
	}
	return nil
}

// candidate is one materialized encoding of a column: its layout and its
// streams' transformed bytes, all kept in one reusable arena.
type candidate struct {
	layout     uint16
	buf        []byte
	streams    []Stream
	spans      []int // start, end offsets in buf per stream
	z          []byte
	zspans     []int
	compressed bool
}

func (c *candidate) reset(layout uint16) {
	c.layout = layout
	c.buf = c.buf[:0]
	c.streams = c.streams[:0]
	c.spans = c.spans[:0]
	c.compressed = false
}

// add records that buf[start:] is one stream.
func (c *candidate) add(kind, transform uint16, count, start int) {
	c.streams = append(c.streams, Stream{Kind: kind, Transform: transform, Count: uint64(count)})
	c.spans = append(c.spans, start, len(c.buf))
}

// seal points every stream at its bytes, now that buf no longer moves.
func (c *candidate) seal() {
	for i := range c.streams {
		d := c.buf[c.spans[2*i]:c.spans[2*i+1]:c.spans[2*i+1]]
		c.streams[i].Data = d
		c.streams[i].RawLen = uint64(len(d))
		c.streams[i].Codec = CodecNone
	}
}

// column describes the input of one Encode call after validation.
type column struct {
	class     Class
	width     int
	nullable  bool
	rows      int
	nullCount int
	validity  []byte // nil when no validity stream is needed
	vals      Values
}

func (e *Encoder) encode(class Class, width int, nullable bool, rows int, validity []byte, vals Values) (Column, error) {
	col, err := checkInput(class, width, nullable, rows, validity, vals)
	if err != nil {
		return Column{}, err
	}
	out := Column{
		Layout:    LayoutPlain,
		NullCount: col.nullCount,
		Implicit:  nullable && (col.nullCount == 0 || col.nullCount == rows),
	}
	if out.Stats, err = e.statistics(col); err != nil {
		return Column{}, err
	}
	dense := rows - col.nullCount
	var c *candidate
	switch {
	case dense == 0:
		// §8.1: an all-null column has no value streams, plain layout.
		c = &e.cand[0]
		c.reset(LayoutPlain)
		c.seal()
	case e.opts.Policy == PolicyRaw:
		c = &e.cand[0]
		c.reset(LayoutPlain)
		e.putValidityRaw(c, col)
		putRaw(c, col.class, col.vals)
		c.seal()
	case e.opts.Policy == PolicyFixed:
		if c, err = e.fixed(col); err != nil {
			return Column{}, err
		}
	default:
		if c, err = e.adaptive(col); err != nil {
			return Column{}, err
		}
	}
	e.compress(c)
	out.Layout = c.layout
	out.Streams = c.streams
	return out, nil
}

// compress applies the codec to every stream of c, keeping a compressed
// stream only when it saves at least 8 bytes (spec §10).
func (e *Encoder) compress(c *candidate) {
	if e.zstd == nil || c.compressed {
		return
	}
	c.compressed = true
	c.z = c.z[:0]
	for i := range c.streams {
		s := &c.streams[i]
		if len(s.Data) < zstdMinFrame+zstdMinSaving {
			continue // no frame is small enough to save 8 bytes here
		}
		start := len(c.z)
		c.z = e.zstd.encode(c.z, s.Data)
		if len(c.z)-start+zstdMinSaving > len(s.Data) {
			c.z = c.z[:start]
			continue
		}
		s.Codec = CodecZstd
		s.RawLen = uint64(len(s.Data))
		// Data is fixed below, once c.z stops moving.
		c.zspans = append(c.zspans, i, start, len(c.z))
	}
	for k := 0; k < len(c.zspans); k += 3 {
		i, a, b := c.zspans[k], c.zspans[k+1], c.zspans[k+2]
		c.streams[i].Data = c.z[a:b:b]
	}
	c.zspans = c.zspans[:0]
}

// storedCost is what c costs in a frame: each stream's descriptor plus its
// stored bytes padded to eight.
func (c *candidate) storedCost() int {
	n := 0
	for _, s := range c.streams {
		n += streamDescriptorSize + pad8(len(s.Data))
	}
	return n
}

func pad8(n int) int { return (n + 7) &^ 7 }

// streamDescriptorSize is the 48-byte stream descriptor of spec §8.2.
const streamDescriptorSize = 48

// zstdMinSaving is spec §10's reference heuristic: compression must save at
// least eight stored bytes (one descriptor's bookkeeping) to be kept.
const zstdMinSaving = 8

// zstdMinFrame is the smallest Zstandard frame holding any data: 4-byte
// magic, 1-byte descriptor, 1-byte content size, 3-byte block header and
// one byte of content.
const zstdMinFrame = 10

// checkInput validates one Encode call and counts its nulls.
func checkInput(class Class, width int, nullable bool, rows int, validity []byte, vals Values) (column, error) {
	if err := checkClass(class, width); err != nil {
		return column{}, err
	}
	if rows < 0 || rows > 1<<32-1 {
		return column{}, fmt.Errorf("encoding: %d rows outside 0..%d", rows, uint32(1<<32-1))
	}
	col := column{class: class, width: width, nullable: nullable, rows: rows, vals: vals}
	if validity != nil {
		if len(validity) < bitmapLen(rows) {
			return column{}, fmt.Errorf("encoding: validity bitmap of %d bytes for %d rows", len(validity), rows)
		}
		valid := 0
		full := rows / 8
		for _, b := range validity[:full] {
			valid += bits.OnesCount8(b)
		}
		if r := rows % 8; r != 0 {
			valid += bits.OnesCount8(validity[full] & (1<<uint(r) - 1))
		}
		col.nullCount = rows - valid
		if col.nullCount != 0 && col.nullCount != rows {
			col.validity = validity[:bitmapLen(rows)]
		}
	}
	if !nullable && col.nullCount != 0 {
		return column{}, fmt.Errorf("encoding: non-nullable column has %d nulls", col.nullCount)
	}
	dense := rows - col.nullCount
	if vals.N != dense {
		return column{}, fmt.Errorf("encoding: %d values for %d rows with %d nulls", vals.N, rows, col.nullCount)
	}
	switch class {
	case ClassBool:
		if len(vals.Bools) != dense {
			return column{}, fmt.Errorf("encoding: %d bools for %d values", len(vals.Bools), dense)
		}
	case ClassVar:
		if len(vals.Offsets) != dense+1 {
			return column{}, fmt.Errorf("encoding: %d offsets for %d values, want %d", len(vals.Offsets), dense, dense+1)
		}
		for i := 0; i < dense; i++ {
			if l := vals.Offsets[i+1] - vals.Offsets[i]; l < 0 || l > 1<<32-1 {
				return column{}, fmt.Errorf("encoding: value %d has length %d outside 0..%d", i, l, uint32(1<<32-1))
			}
		}
		if vals.Offsets[0] < 0 || vals.Offsets[dense] > len(vals.Data) {
			return column{}, fmt.Errorf("encoding: offsets %d..%d outside %d data bytes", vals.Offsets[0], vals.Offsets[dense], len(vals.Data))
		}
	default:
		if len(vals.Fixed) != dense*width {
			return column{}, fmt.Errorf("encoding: %d value bytes for %d values of %d bytes", len(vals.Fixed), dense, width)
		}
	}
	return col, nil
}

// putValidityRaw adds the §9.1 raw validity bitmap when one is needed, with
// the padding bits of the final byte cleared.
func (e *Encoder) putValidityRaw(c *candidate, col column) {
	if col.validity == nil {
		return
	}
	start := len(c.buf)
	c.buf = append(c.buf, col.validity...)
	if r := col.rows % 8; r != 0 {
		c.buf[len(c.buf)-1] &= 1<<uint(r) - 1
	}
	c.add(KindValidity, TransformRaw, col.rows, start)
}

// putRaw adds the plain-layout raw value streams (§9.1).
func putRaw(c *candidate, class Class, v Values) {
	start := len(c.buf)
	switch class {
	case ClassBool:
		c.buf = appendBools(c.buf, v.Bools)
		c.add(KindValues, TransformRaw, v.N, start)
	case ClassVar:
		c.buf = append(c.buf, v.Data[v.Offsets[0]:v.Offsets[v.N]]...)
		c.add(KindValues, TransformRaw, v.N, start)
		start = len(c.buf)
		c.buf = appendLengths(c.buf, v.Offsets)
		c.add(KindLengths, TransformRaw, v.N, start)
	default:
		c.buf = append(c.buf, v.Fixed...)
		c.add(KindValues, TransformRaw, v.N, start)
	}
}

// appendBools appends an LSB-first bitmap of bs.
func appendBools(dst []byte, bs []bool) []byte {
	var cur byte
	for i, b := range bs {
		if b {
			cur |= 1 << (uint(i) & 7)
		}
		if i&7 == 7 {
			dst = append(dst, cur)
			cur = 0
		}
	}
	if len(bs)&7 != 0 {
		dst = append(dst, cur)
	}
	return dst
}

// appendLengths appends one uint32 length per value given offsets.
func appendLengths(dst []byte, offsets []int) []byte {
	for i := 1; i < len(offsets); i++ {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(offsets[i]-offsets[i-1]))
	}
	return dst
}
