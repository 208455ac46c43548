package acta

import (
	"bytes"
	"fmt"
)

// prologue is the decoded 64-byte file prologue (spec §5).
type prologue struct {
	Features uint64
	FileID   [16]byte
}

func (p prologue) rowIDs() bool { return p.Features&featureRowIDs != 0 }

// appendPrologue appends the 64-byte prologue for p to dst.
func appendPrologue(dst []byte, p prologue) []byte {
	var b [prologueSize]byte
	copy(b[0:8], prologueMagic[:])
	le.PutUint16(b[8:], formatMajor)
	le.PutUint16(b[10:], formatMinor)
	le.PutUint32(b[12:], prologueSize)
	le.PutUint64(b[prologueFeatureOff:], p.Features)
	copy(b[prologueFileIDOff:], p.FileID[:])
	le.PutUint64(b[40:], schemaFrameOffset)
	le.PutUint32(b[prologueCRCOffset:], crc(b[:prologueCRCOffset]))
	return append(dst, b[:]...)
}

// parsePrologue decodes and checks the prologue. Per §2.1 the version pair
// is inspected first, so a well-formed file of another version is reported
// as ErrUnsupportedVersion rather than as corruption. A short b is an
// incomplete file: corrupt at offset len(b).
func parsePrologue(b []byte) (prologue, error) {
	var p prologue
	if len(b) < prologueSize {
		if !bytes.HasPrefix(prologueMagic[:], b[:min(len(b), 8)]) {
			return p, corruptf(0, "not an Acta file: bad prologue magic % x", b[:min(len(b), 8)])
		}
		return p, corruptf(int64(len(b)), "file ends inside the %d-byte prologue after %d bytes", prologueSize, len(b))
	}
	if !bytes.Equal(b[:8], prologueMagic[:]) {
		return p, corruptf(0, "not an Acta file: bad prologue magic % x", b[:8])
	}
	major, minor := le.Uint16(b[8:]), le.Uint16(b[10:])
	if got, want := le.Uint32(b[prologueCRCOffset:]), crc(b[:prologueCRCOffset]); got != want {
		return p, corruptf(prologueCRCOffset, "prologue CRC32C %#08x, computed %#08x", got, want)
	}
	if major != formatMajor || minor != formatMinor {
		return p, fmt.Errorf("%w: file is v%d.%d, this reader implements v%d.%d only",
			ErrUnsupportedVersion, major, minor, formatMajor, formatMinor)
	}
	if n := le.Uint32(b[12:]); n != prologueSize {
		return p, corruptf(12, "prologue size %d, want %d", n, prologueSize)
	}
	p.Features = le.Uint64(b[prologueFeatureOff:])
	if unknown := p.Features &^ featureRowIDs; unknown != 0 {
		return p, corruptf(prologueFeatureOff, "unknown feature bits %#x", unknown)
	}
	copy(p.FileID[:], b[prologueFileIDOff:])
	if off := le.Uint64(b[40:]); off != schemaFrameOffset {
		return p, corruptf(40, "schema frame offset %d, want %d", off, schemaFrameOffset)
	}
	return p, nil
}
