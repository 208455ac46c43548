package acta

import (
	"fmt"
	"unicode/utf8"
)

// Schema frame codec (spec §7). The frame-specific header is 24 bytes; the
// payload is one descriptor per column, each starting on an 8-byte boundary:
// len(4) id(4) type(2) flags(2) nameLen(4) paramLen(4) reserved(4), then the
// name, the padded type-parameter record, and padding to eight.

// appendTypeParams appends t's §7.1 type-parameter record, padded to eight.
func appendTypeParams(dst []byte, t Type) []byte {
	switch t.ID {
	case TypeDecimal64:
		dst = le.AppendUint16(dst, t.Precision)
		dst = le.AppendUint16(dst, uint16(t.Scale))
		dst = le.AppendUint32(dst, 0)
	case TypeTimestamp64:
		dst = append(dst, byte(t.Unit), byte(t.TZMode), 0, 0)
		dst = le.AppendUint32(dst, uint32(len(t.TZName)))
		dst = append(dst, t.TZName...)
		dst = appendZeros(dst, pad8(len(t.TZName))-len(t.TZName))
	case TypeCategorical:
		o := byte(0)
		if t.Ordered {
			o = 1
		}
		dst = append(dst, o, 0, 0, 0, 0, 0, 0, 0)
	case TypeFixedBinary:
		dst = le.AppendUint32(dst, t.Width)
		dst = le.AppendUint32(dst, 0)
	}
	return dst
}

func appendZeros(dst []byte, n int) []byte {
	for ; n > 0; n-- {
		dst = append(dst, 0)
	}
	return dst
}

// encodeSchemaFrame returns the schema frame (sequence 0) for s.
func encodeSchemaFrame(s *Schema) []byte {
	var payload []byte
	for _, c := range s.Columns {
		params := appendTypeParams(nil, c.Type)
		n := pad8(schemaDescFixed + len(c.Name) + len(params))
		var flags uint16
		if c.Nullable {
			flags = schemaColNullable
		}
		payload = le.AppendUint32(payload, uint32(n))
		payload = le.AppendUint32(payload, c.ID)
		payload = le.AppendUint16(payload, uint16(c.Type.ID))
		payload = le.AppendUint16(payload, flags)
		payload = le.AppendUint32(payload, uint32(len(c.Name)))
		payload = le.AppendUint32(payload, uint32(len(params)))
		payload = le.AppendUint32(payload, 0)
		payload = append(payload, c.Name...)
		payload = append(payload, params...)
		payload = appendZeros(payload, n-schemaDescFixed-len(c.Name)-len(params))
	}
	header := make([]byte, schemaHeaderSize)
	le.PutUint64(header[0:], s.ID)
	le.PutUint32(header[8:], uint32(len(s.Columns)))
	le.PutUint32(header[12:], s.Primary)
	return buildFrame(nil, frameSchema, 0, header, payload)
}

// buildFrame appends a complete frame (prefix, header, payload, trailer) to
// dst. header and payload must already be padded to multiples of eight.
func buildFrame(dst []byte, typ uint16, seq uint64, header, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, prefixSize)...)
	putPrefix(dst[start:], framePrefix{Type: typ, HeaderLen: uint32(len(header)),
		PayloadLen: uint64(len(payload)), Seq: seq, HeaderCRC: crc(header)})
	dst = append(dst, header...)
	dst = append(dst, payload...)
	body := len(dst) - start
	dst = append(dst, make([]byte, trailerSize)...)
	putTrailer(dst[start+body:], dst[start:start+body], seq)
	return dst
}

// parseSchema decodes a schema frame's header and payload. hoff and poff are
// their file offsets, for error messages.
func parseSchema(header, payload []byte, hoff, poff int64, l *Limits) (*Schema, error) {
	// §7 fixes the header at 24 bytes; the reference refuses any other
	// length rather than ignore what a longer one might mean.
	if len(header) != schemaHeaderSize {
		return nil, corruptf(hoff-prefixSize+16, "schema frame header is %d bytes, want %d", len(header), schemaHeaderSize)
	}
	s := &Schema{ID: le.Uint64(header[0:]), Primary: le.Uint32(header[12:])}
	n := le.Uint32(header[8:])
	if s.ID == 0 {
		return nil, corruptf(hoff, "schema ID is zero")
	}
	if n == 0 {
		return nil, corruptf(hoff+8, "schema column count is zero")
	}
	if f := le.Uint32(header[16:]); f != 0 {
		return nil, corruptf(hoff+16, "schema flags %#x must be zero in v0.2", f)
	}
	if int64(n) > int64(l.MaxColumns) {
		return nil, limitf(hoff+8, "schema declares %d columns, limit %d", n, l.MaxColumns)
	}
	// Each descriptor takes at least 24 bytes, so a count the payload cannot
	// hold is refused before the column slice is allocated.
	if uint64(n)*schemaDescFixed > uint64(len(payload)) {
		return nil, corruptf(hoff+8, "schema declares %d columns but its payload has %d bytes", n, len(payload))
	}
	s.Columns = make([]Column, 0, n)
	p := 0
	for i := uint32(0); i < n; i++ {
		at := poff + int64(p)
		if len(payload)-p < schemaDescFixed {
			return nil, corruptf(at, "column descriptor %d truncated", i)
		}
		d := payload[p:]
		dlen := int(le.Uint32(d[0:]))
		nameLen := uint64(le.Uint32(d[12:]))
		paramLen := uint64(le.Uint32(d[16:]))
		if dlen%8 != 0 || dlen < schemaDescFixed || dlen > len(d) {
			return nil, corruptf(at, "column descriptor %d length %d invalid (%d bytes left)", i, dlen, len(d))
		}
		if schemaDescFixed+nameLen+paramLen > uint64(dlen) {
			return nil, corruptf(at+12, "column descriptor %d: name %d + parameters %d exceed descriptor length %d", i, nameLen, paramLen, dlen)
		}
		c := Column{ID: le.Uint32(d[4:])}
		c.Type.ID = LogicalType(le.Uint16(d[8:]))
		flags := le.Uint16(d[10:])
		if flags&^schemaColNullable != 0 {
			return nil, corruptf(at+10, "column %d: unknown column flags %#x", c.ID, flags)
		}
		c.Nullable = flags&schemaColNullable != 0
		name := d[schemaDescFixed : schemaDescFixed+nameLen]
		if !utf8.Valid(name) {
			return nil, corruptf(at+schemaDescFixed, "column %d name is not UTF-8", c.ID)
		}
		c.Name = string(name)
		params := d[schemaDescFixed+nameLen : schemaDescFixed+nameLen+paramLen]
		if !c.Type.ID.Valid() {
			return nil, corruptf(at+8, "column %d: unknown logical type %d", c.ID, c.Type.ID)
		}
		if err := parseTypeParams(&c.Type, params); err != nil {
			return nil, corruptf(at+schemaDescFixed+int64(nameLen), "column %d (%q): %v", c.ID, c.Name, err)
		}
		s.Columns = append(s.Columns, c)
		p += dlen
	}
	// §7: the payload is the column descriptors, each carrying its own
	// padding, so bytes after the last one belong to nothing. The reference
	// refuses them; accepting them would let two readers disagree.
	if p != len(payload) {
		return nil, corruptf(poff+int64(p), "schema descriptors end after %d bytes, payload has %d", p, len(payload))
	}
	if err := s.Validate(); err != nil {
		return nil, corruptf(poff, "%v", err)
	}
	return s, nil
}

func parseTypeParams(t *Type, p []byte) error {
	want := 0
	switch t.ID {
	case TypeDecimal64:
		want = 8
		if len(p) == want {
			t.Precision = le.Uint16(p[0:])
			t.Scale = int16(le.Uint16(p[2:]))
		}
	case TypeTimestamp64:
		if len(p) < 8 {
			return fmt.Errorf("timestamp64 parameters are %d bytes, want at least 8", len(p))
		}
		t.Unit, t.TZMode = TimeUnit(p[0]), TimezoneMode(p[1])
		nl := uint64(le.Uint32(p[4:]))
		want = 8 + pad8(int(min(nl, 1<<32)))
		if len(p) == want {
			t.TZName = string(p[8 : 8+nl])
		}
	case TypeCategorical:
		want = 8
		if len(p) == want {
			if p[0] > 1 {
				return fmt.Errorf("categorical ordered flag %d, want 0 or 1", p[0])
			}
			t.Ordered = p[0] == 1
		}
	case TypeFixedBinary:
		want = 8
		if len(p) == want {
			t.Width = le.Uint32(p[0:])
		}
	}
	if len(p) != want {
		return fmt.Errorf("%s type parameters are %d bytes, want %d", t.ID, len(p), want)
	}
	return t.validate()
}
