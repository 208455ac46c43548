package acta

import (
	"encoding/binary"
	"hash/crc32"
	"unicode/utf8"
)

// Wire constants of Acta v0.2. FROZEN: every value below is written into
// files; changing one makes every existing file unreadable. Offsets are
// relative to the start of the structure named in the comment.
const (
	// §5 prologue: magic(8) major(2) minor(2) size(4) features(8) fileID(16)
	// schemaOffset(8) reserved(12) crc(4) over [0,60).
	prologueSize       = 64
	formatMajor        = 0
	formatMinor        = 2
	schemaFrameOffset  = 64 // §5: the schema frame always follows the prologue
	featureRowIDs      = 1 << 0
	prologueCRCOffset  = 60
	prologueFileIDOff  = 24
	prologueFeatureOff = 16

	// §6.1 prefix: magic(8) type(2) version(2) flags(4) headerLen(4)
	// reserved(4) payloadLen(8) seq(8) headerCRC(4) prefixCRC(4) over [0,44).
	prefixSize    = 48
	trailerSize   = 32 // §6.2: total(8) seq(8) bodyCRC(4) trailerCRC(4) commit magic(8)
	frameOverhead = prefixSize + trailerSize
	frameVersion  = 0
	frameAlign    = 8

	// §4 frame types.
	frameSchema     = 1
	frameData       = 2
	frameCheckpoint = 3 // reserved for a later minor version; invalid in v0.2

	// §7 schema frame header (24 bytes) and column descriptor (24 fixed bytes).
	schemaHeaderSize  = 24
	schemaDescFixed   = 24
	schemaColNullable = 1 << 0

	// §8 block header (64 bytes), column descriptor (32) and stream descriptor (48).
	blockHeaderSize = 64
	colDescSize     = 32
	streamDescSize  = 48
	blockRowIDs     = 1 << 0
	blockTSSorted   = 1 << 1
	colImplicit     = 1 << 0 // §8.1: validity is implicit (all valid or all null)
	colHasStats     = 1 << 1 // §8.1: min/max statistics present
	statsNone       = 0
	statsMinMax     = 1
	noRowID         = ^uint64(0) // §2 UINT64_MAX: base row ID unavailable
	maxStreamKind   = 8
	maxTransform    = 6
	maxLayout       = 3
)

var (
	prologueMagic = [8]byte{'A', 'C', 'T', 'A', 0x0d, 0x0a, 0x1a, 0x0a}
	frameMagic    = [8]byte{'A', 'C', 'T', 'A', 'F', 'R', 'M', '\n'}
	commitMagic   = [8]byte{'A', 'C', 'T', 'A', 'E', 'N', 'D', '\n'}
)

// castagnoli is built once: crc32 picks its hardware path by comparing
// table pointers, so a table made per call would fall back to software.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var le = binary.LittleEndian

// pad8 rounds n up to a multiple of eight.
func pad8(n int) int { return (n + 7) &^ 7 }

func crc32Update(c uint32, b []byte) uint32 { return crc32.Update(c, castagnoli, b) }

func validUTF8(b []byte) bool { return utf8.Valid(b) }
