package encoding

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Zstandard (spec §10): every stream is an independent standard frame with
// no dictionary. Encoders are shared per level and decoders per memory cap,
// because building either costs far more than compressing one small stream.

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

// Decoders are kept per power-of-two memory cap so a frame can never make
// one decode grow past twice its declared length.
var zstdDecoders [64]struct {
	once sync.Once
	dec  *zstd.Decoder
}

func zstdDecoderFor(rawLen uint64) *zstd.Decoder {
	slot := bits.Len64(rawLen)
	if slot < 20 {
		slot = 20 // 1 MiB: small caps buy nothing
	}
	d := &zstdDecoders[slot]
	d.once.Do(func() {
		cap := uint64(1) << uint(slot)
		window := cap
		if window > 1<<30 {
			window = 1 << 30
		}
		dec, err := zstd.NewReader(nil,
			zstd.WithDecoderMaxMemory(cap),
			zstd.WithDecoderMaxWindow(window),
			zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic("BUG: zstd decoder options rejected: " + err.Error())
		}
		d.dec = dec
	})
	return d.dec
}

// streamDecoders decode the rare frame that does not declare its content
// size, reading into an exactly sized buffer so it cannot grow.
var streamDecoders = sync.Pool{New: func() any {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(8<<20))
	if err != nil {
		panic("BUG: zstd decoder options rejected: " + err.Error())
	}
	return dec
}}

// zstdDecode decompresses one stream to exactly rawLen bytes, charging the
// budget before allocating them.
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
	dst := make([]byte, 0, rawLen)
	var out []byte
	var err error
	if h.HasFCS {
		out, err = zstdDecoderFor(rawLen).DecodeAll(src, dst)
	} else {
		out, err = decodeStreaming(src, dst[:rawLen])
	}
	if err != nil {
		return nil, corruptf("zstd: %v", err)
	}
	if uint64(len(out)) != rawLen {
		return nil, corruptf("zstd stream decodes to %d bytes, declares %d", len(out), rawLen)
	}
	return out, nil
}

func decodeStreaming(src, dst []byte) ([]byte, error) {
	dec := streamDecoders.Get().(*zstd.Decoder)
	defer streamDecoders.Put(dec)
	if err := dec.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	n, err := io.ReadFull(dec, dst)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return dst[:n], nil // the length check names the shortfall
		}
		return nil, err
	}
	var one [1]byte
	if m, _ := dec.Read(one[:]); m != 0 {
		return nil, errors.New("frame decodes past the declared length")
	}
	return dst, nil
}
