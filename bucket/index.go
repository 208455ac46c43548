package bucket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
)

// An index object (docs/format/bucket.md): a fixed header, the records
// (each a uvarint length and the record) compressed with Zstandard, and a
// CRC-32C of everything before it. Frozen.
//
//	off  len  field
//	0    8    magic "ACTABIDX"
//	8    2    version, 1 (u16 LE)
//	10   1    type: 1 full, 2 delta
//	11   1    codec: 0 none, 1 zstd
//	12   8    seq (u64 LE): the object's sequence number
//	20   8    record count (u64 LE)
//	28   8    raw body length (u64 LE), before compression
//	36   N    body
//	36+N 4    CRC-32C (Castagnoli, u32 LE) of bytes [0, 36+N)
const (
	indexMagic      = "ACTABIDX"
	indexVersion    = 1
	indexHeaderSize = 36
	typeFull        = 1
	typeDelta       = 2
	codecNone       = 0
	codecZstd       = 1
	zstdWindow      = 1 << 20 // writers use it; readers refuse larger windows
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC-32C (Castagnoli) of b, the checksum of every object.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32C continues a CRC-32C over more bytes.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// ErrIndex marks an index object that does not decode: damaged, cut
// short, or beyond a limit. The error names the key.
var ErrIndex = errors.New("bucket: bad index object")

// IndexObject is one decoded index object.
type IndexObject struct {
	Seq     uint64
	Full    bool
	Records []Record
}

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
)

func encoder() *zstd.Encoder {
	zstdOnce.Do(func() {
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(zstdWindow))
	})
	return zstdEnc
}

// EncodeIndex builds an index object from encoded records (AppendSeries,
// AppendFile, AppendRemove output, one record per element).
func EncodeIndex(seq uint64, full bool, recs [][]byte) []byte {
	var raw []byte
	for _, r := range recs {
		raw = binary.AppendUvarint(raw, uint64(len(r)))
		raw = append(raw, r...)
	}
	out := make([]byte, indexHeaderSize, indexHeaderSize+len(raw)/2+64)
	copy(out, indexMagic)
	binary.LittleEndian.PutUint16(out[8:], indexVersion)
	out[10] = typeDelta
	if full {
		out[10] = typeFull
	}
	binary.LittleEndian.PutUint64(out[12:], seq)
	binary.LittleEndian.PutUint64(out[20:], uint64(len(recs)))
	binary.LittleEndian.PutUint64(out[28:], uint64(len(raw)))
	if len(raw) >= 256 {
		out[11] = codecZstd
		out = encoder().EncodeAll(raw, out)
	} else {
		out[11] = codecNone
		out = append(out, raw...)
	}
	return binary.LittleEndian.AppendUint32(out, CRC32C(out))
}

// DecodeIndex decodes an index object read from key. maxRaw bounds the
// decompressed body (bytes), checked before anything is allocated.
func DecodeIndex(key string, obj []byte, maxRaw int64) (*IndexObject, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrIndex, key, fmt.Sprintf(format, args...))
	}
	if len(obj) < indexHeaderSize+4 {
		return nil, bad("%d bytes, shorter than a header and checksum", len(obj))
	}
	if string(obj[:8]) != indexMagic {
		return nil, bad("magic % x, want %q", obj[:8], indexMagic)
	}
	body, sum := obj[:len(obj)-4], binary.LittleEndian.Uint32(obj[len(obj)-4:])
	if got := CRC32C(body); got != sum {
		return nil, bad("CRC-32C %#08x, trailer says %#08x (damaged or cut short)", got, sum)
	}
	if v := binary.LittleEndian.Uint16(obj[8:]); v != indexVersion {
		return nil, bad("version %d, want %d", v, indexVersion)
	}
	typ, codec := obj[10], obj[11]
	if typ != typeFull && typ != typeDelta {
		return nil, bad("type %d", typ)
	}
	out := &IndexObject{Seq: binary.LittleEndian.Uint64(obj[12:]), Full: typ == typeFull}
	count := binary.LittleEndian.Uint64(obj[20:])
	rawLen := binary.LittleEndian.Uint64(obj[28:])
	if rawLen > uint64(maxRaw) {
		return nil, bad("body of %d bytes, limit %d", rawLen, maxRaw)
	}
	if count > rawLen/2 { // a record takes a length byte and a type byte at least
		return nil, bad("%d records in a %d-byte body", count, rawLen)
	}
	stored := body[indexHeaderSize:]
	var raw []byte
	switch codec {
	case codecNone:
		raw = stored
	case codecZstd:
		// The output is bounded by the declared length (itself bounded by
		// maxRaw) plus the window; a frame asking for more fails.
		dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(rawLen+zstdWindow), zstd.WithDecoderMaxWindow(zstdWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, bad("zstd: %v", err)
		}
		raw, err = dec.DecodeAll(stored, make([]byte, 0, rawLen))
		dec.Close()
		if err != nil {
			return nil, bad("zstd: %v", err)
		}
	default:
		return nil, bad("codec %d", codec)
	}
	if uint64(len(raw)) != rawLen {
		return nil, bad("body is %d bytes, header says %d", len(raw), rawLen)
	}
	out.Records = make([]Record, 0, count)
	var b labels.ScratchBuilder
	for i := uint64(0); i < count; i++ {
		n, k := binary.Uvarint(raw)
		if k <= 0 || n > uint64(len(raw)-k) {
			return nil, bad("record %d: length cut short", i)
		}
		r, err := DecodeRecord(&b, raw[k:k+int(n)])
		if err != nil {
			return nil, bad("record %d: %v", i, err)
		}
		out.Records = append(out.Records, r)
		raw = raw[k+int(n):]
	}
	if len(raw) != 0 {
		return nil, bad("%d bytes after the last record", len(raw))
	}
	return out, nil
}
