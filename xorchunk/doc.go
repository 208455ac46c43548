// Package xorchunk encodes float samples into Prometheus XOR chunks
// (chunkenc.EncXOR), byte for byte what chunkenc's xorAppender writes, but
// with a 64-bit accumulator instead of chunkenc's bit-at-a-time bstream: the
// streamed remote-read answer re-encodes every sample it sends, and
// chunkenc's writeBit was most of that cost. Its Decoder reads them back
// as chunkenc's iterator does, with the same accumulator and without the
// interface calls: a plain read decodes every sample it answers with.
//
// The format (Prometheus tsdb/docs/format/chunks.md, tsdb/chunkenc/xor.go),
// bits written most significant first:
//
//	uint16 big-endian  number of samples
//	sample 0           varint(t), then the 64 value bits
//	sample 1           uvarint(t1 - t0), then the value as an XOR delta
//	sample n >= 2      delta of delta of t, then the value as an XOR delta
//
//	delta of delta d (t_n - t_n-1) - (t_n-1 - t_n-2), two's complement:
//	  d == 0                    '0'
//	  -8191 <= d <= 8192        '10'   + 14 bits
//	  -65535 <= d <= 65536      '110'  + 17 bits
//	  -524287 <= d <= 524288    '1110' + 20 bits
//	  otherwise                 '1111' + 64 bits
//
//	XOR delta x = bits(v_n) ^ bits(v_n-1):
//	  x == 0                    '0'
//	  leading/trailing zeros of x within the previous window
//	                            '10' + the window's bits of x
//	  otherwise                 '11' + 5 bits leading zeros (at most 31)
//	                                 + 6 bits significant bits (64 as 0)
//	                                 + the significant bits
//
// The last byte is padded with zero bits. Nothing is validated: like
// chunkenc, the encoder takes any timestamps (equal, decreasing) and any
// value bits (NaN payloads, -0, infinities) and writes what chunkenc would.
// FuzzEncoder holds the byte identity against chunkenc, FuzzDecoder the
// sample identity.
package xorchunk
