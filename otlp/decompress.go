package otlp

import (
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// codec is a request Content-Encoding we accept. gzip is what the
// Collector's otlphttp exporter sends by default; zstd is its other common
// choice.
type codec int

const (
	codecIdentity codec = iota
	codecGzip
	codecZstd
)

func (c codec) String() string {
	return [...]string{"identity", "gzip", "zstd"}[c]
}

// codecFor parses Content-Encoding; ok is false for anything else.
func codecFor(header string) (c codec, ok bool) {
	switch strings.ToLower(strings.TrimSpace(header)) {
	case "", "identity":
		return codecIdentity, true
	case "gzip", "x-gzip":
		return codecGzip, true
	case "zstd":
		return codecZstd, true
	}
	return 0, false
}

// decompressor returns a reader of src's decoded bytes and a release
// function to call once it is drained. Decoders are pooled: a zstd decoder
// costs megabytes to build.
func (r *Receiver) decompressor(c codec, src io.Reader) (io.Reader, func(), error) {
	switch c {
	case codecGzip:
		zr, _ := r.gzips.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(src)
		} else {
			err = zr.Reset(src)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read gzip body: %w", err)
		}
		return zr, func() { r.gzips.Put(zr) }, nil
	case codecZstd:
		zd, _ := r.zstds.Get().(*zstd.Decoder)
		if zd == nil {
			var err error
			// The window cap refuses frames that would need more memory
			// than the decompressed cap allows anyway.
			zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(r.cfg.MaxDecompressedBytes)))
			if err != nil {
				return nil, nil, fmt.Errorf("cannot create zstd decoder: %w", err)
			}
		}
		if err := zd.Reset(src); err != nil {
			r.zstds.Put(zd)
			return nil, nil, fmt.Errorf("cannot read zstd body: %w", err)
		}
		return zd, func() { _ = zd.Reset(nil); r.zstds.Put(zd) }, nil
	}
	return src, func() {}, nil
}
