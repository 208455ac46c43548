package encoding

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Zstandard (spec §10): every stream is an independent standard frame with
// no dictionary. Encoders are shared per level and one decoder serves every
// stream, because building either costs far more than compressing one small
// stream.

// zstdEncoder wraps one shared klauspost encoder; EncodeAll is safe for
// concurrent use.
type zstdEncoder struct{ enc *zstd.Encoder }

var zstdEncoders struct {
	sync.Mutex
	byLevel map[int]*zstdEncoder
}

// sharedZstdEncoder returns the process-wide encoder for a zstd level (0
// means 3). Frames carry no checksum: each Acta stream has its own CRC32C,
// so the 4-byte frame checksum would only cost space.
func sharedZstdEncoder(level int) *zstdEncoder {
	if level == 0 {
		level = 3
	}
	zstdEncoders.Lock()
	defer zstdEncoders.Unlock()
	if z := zstdEncoders.byLevel[level]; z != nil {
		return z
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic("BUG: zstd encoder options rejected: " + err.Error())
	}
	if zstdEncoders.byLevel == nil {
		zstdEncoders.byLevel = map[int]*zstdEncoder{}
	}
	z := &zstdEncoder{enc: enc}
	zstdEncoders.byLevel[level] = z
	return z
}

// encode appends the compressed frame of src to dst.
func (z *zstdEncoder) encode(dst, src []byte) []byte {
	if len(src) == 0 {
		return dst // never kept: it cannot save 8 bytes
	}
	return z.enc.EncodeAll(src, dst)
}

// zstdMaxRatio bounds how far a zstd frame can expand: an RLE block of 4
// bytes (3 header + 1) produces at most 128 KiB. A declared length beyond
// that is a lie the input cannot justify.
const zstdMaxRatio = 128 << 10 / 4

// zstdDecoder is shared by every stream (DecodeAll is safe for concurrent
// use). WithDecodeAllCapLimit makes DecodeAll stop at the destination's
// capacity, which zstdDecode sets to the declared length: a frame stating a
// larger content size is refused before anything is allocated. A frame
// that states none and decodes past the declared length is refused one
// block later, after the buffer has grown once: such a corrupt stream costs
// at most about 2.25 times its declared length for a moment
// (TestZstdOverlongFrameBound), which the budget has already bounded.
// DecodeAll writes into that one buffer and keeps no separate window, so a
// frame's window size costs no memory and any window is accepted, as
// libzstd's one-shot decompression (the reference reader's) accepts it.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderMaxMemory(1<<40),
		zstd.WithDecoderMaxWindow(1<<40),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic("BUG: zstd decoder options rejected: " + err.Error())
	}
	return dec
})

// zstdDecode decompresses one stream to exactly rawLen bytes, charging the
// budget before allocating them.
//
// The stored bytes must be consumed exactly by whole frames (§10: standard
// frames; libzstd and the reference reader refuse anything after the last
// one). DecodeAll walks every frame of its input and fails on bytes that do
// not start one, so trailing bytes are corrupt, while skippable frames,
// which are standard frames, are accepted anywhere.
func zstdDecode(src []byte, rawLen uint64, budget *Budget) ([]byte, error) {
	if rawLen > uint64(len(src))*zstdMaxRatio {
		return nil, corruptf("zstd stream of %d bytes cannot expand to %d", len(src), rawLen)
	}
	if rawLen > 1<<40 {
		return nil, fmt.Errorf("%w: zstd stream declares %d bytes", ErrLimit, rawLen)
	}
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, corruptf("zstd frame header: %v", err)
	}
	if h.HasFCS && h.FrameContentSize > rawLen {
		return nil, corruptf("zstd frame holds %d bytes, stream declares %d", h.FrameContentSize, rawLen)
	}
	if err := budget.Charge(int64(rawLen)); err != nil {
		return nil, err
	}
	out, err := zstdDecoder().DecodeAll(src, make([]byte, 0, rawLen))
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, corruptf("zstd stream decodes past its declared %d bytes", rawLen)
	case err != nil:
		return nil, corruptf("zstd: %v", err)
	case uint64(len(out)) != rawLen:
		return nil, corruptf("zstd stream decodes to %d bytes, declares %d", len(out), rawLen)
	}
	return out, nil
}
