package acta

import (
	"bytes"
	"math"
)

// framePrefix is the decoded 48-byte generic frame prefix (spec §6.1).
type framePrefix struct {
	Type       uint16
	HeaderLen  uint32
	PayloadLen uint64
	Seq        uint64
	HeaderCRC  uint32
}

// total is the whole frame length, 48 + header + payload + 32. Callers
// check payloadLen against limits first, so this cannot overflow.
func (p framePrefix) total() int64 {
	return int64(frameOverhead) + int64(p.HeaderLen) + int64(p.PayloadLen)
}

// putPrefix writes the prefix for p into b[0:48].
func putPrefix(b []byte, p framePrefix) {
	copy(b[0:8], frameMagic[:])
	le.PutUint16(b[8:], p.Type)
	le.PutUint16(b[10:], frameVersion)
	le.PutUint32(b[12:], 0)
	le.PutUint32(b[16:], p.HeaderLen)
	le.PutUint32(b[20:], 0)
	le.PutUint64(b[24:], p.PayloadLen)
	le.PutUint64(b[32:], p.Seq)
	le.PutUint32(b[40:], p.HeaderCRC)
	le.PutUint32(b[44:], crc(b[:44]))
}

// putTrailer writes the 32-byte trailer into b. body is the prefix, header
// and payload exactly as stored (§6.2).
func putTrailer(b []byte, body []byte, seq uint64) {
	le.PutUint64(b[0:], uint64(len(body)+trailerSize))
	le.PutUint64(b[8:], seq)
	le.PutUint32(b[16:], crc(body))
	copy(b[24:32], commitMagic[:])
	le.PutUint32(b[20:], trailerCRC(b))
}

// trailerCRC covers trailer bytes [0,20) then [24,32), skipping only itself.
func trailerCRC(t []byte) uint32 {
	c := crc32Update(0, t[:20])
	return crc32Update(c, t[24:32])
}

// parsePrefix checks a 48-byte prefix found at file offset off. The prefix
// CRC is checked before either length is trusted (§6.1).
func parsePrefix(b []byte, off int64, l *Limits) (framePrefix, error) {
	var p framePrefix
	if !bytes.Equal(b[:8], frameMagic[:]) {
		return p, corruptf(off, "bad frame magic % x", b[:8])
	}
	if got, want := le.Uint32(b[44:]), crc(b[:44]); got != want {
		return p, corruptf(off+44, "frame prefix CRC32C %#08x, computed %#08x", got, want)
	}
	p.Type = le.Uint16(b[8:])
	p.HeaderLen = le.Uint32(b[16:])
	p.PayloadLen = le.Uint64(b[24:])
	p.Seq = le.Uint64(b[32:])
	p.HeaderCRC = le.Uint32(b[40:])
	if p.Type != frameSchema && p.Type != frameData {
		return p, corruptf(off+8, "frame type %d is not schema (1) or data (2) in v0.2", p.Type)
	}
	if v := le.Uint16(b[10:]); v != frameVersion {
		return p, corruptf(off+10, "frame version %d, want %d", v, frameVersion)
	}
	if f := le.Uint32(b[12:]); f != 0 {
		return p, corruptf(off+12, "frame flags %#x must be zero in v0.2", f)
	}
	if p.HeaderLen%frameAlign != 0 {
		return p, corruptf(off+16, "header length %d is not a multiple of 8", p.HeaderLen)
	}
	if p.PayloadLen%frameAlign != 0 {
		return p, corruptf(off+24, "payload length %d is not a multiple of 8", p.PayloadLen)
	}
	if int64(p.HeaderLen) > l.MaxHeaderBytes {
		return p, limitf(off+16, "frame header length %d exceeds limit %d", p.HeaderLen, l.MaxHeaderBytes)
	}
	if p.PayloadLen > uint64(math.MaxInt64-frameOverhead-math.MaxUint32) {
		return p, corruptf(off+24, "payload length %d overflows a file offset", p.PayloadLen)
	}
	if int64(p.PayloadLen) > l.MaxPayloadBytes {
		return p, limitf(off+24, "frame payload length %d exceeds limit %d", p.PayloadLen, l.MaxPayloadBytes)
	}
	return p, nil
}

// checkTrailer checks the trailer t of a frame at off whose prefix is p.
// The body CRC is checked separately (it needs the whole body).
func checkTrailer(t []byte, off int64, p framePrefix) error {
	toff := off + p.total() - trailerSize
	if !bytes.Equal(t[24:32], commitMagic[:]) {
		return corruptf(toff+24, "bad commit magic % x", t[24:32])
	}
	if got, want := le.Uint32(t[20:]), trailerCRC(t); got != want {
		return corruptf(toff+20, "trailer CRC32C %#08x, computed %#08x", got, want)
	}
	if n := le.Uint64(t[0:]); n != uint64(p.total()) {
		return corruptf(toff, "trailer frame length %d, prefix says %d", n, p.total())
	}
	if s := le.Uint64(t[8:]); s != p.Seq {
		return corruptf(toff+8, "trailer sequence %d, prefix says %d", s, p.Seq)
	}
	return nil
}
