package bucket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
)

// Index records: what an index object (index.go) and the store's local
// manifest of uploaded files hold, one record each (docs/format/bucket.md):
//
//	series  0x01 | ref u64 LE | labels
//	file    0x02 | kind u8 | ref u64 LE | start varint | crc u32 LE | size uvarint
//	             | min varint | max varint | modtime varint
//	remove  0x03 | kind u8 | ref u64 LE | start varint | crc u32 LE
//
// labels is a uvarint count, then each name and value as a uvarint length
// and UTF-8 bytes, names ascending. Times are ms since the epoch; modtime
// is the uploaded local file's mtime (ns), written by the manifest only (0
// in the bucket). Record types are frozen; a reader refuses unknown ones.

// Record types.
const (
	RecSeries byte = 0x01
	RecFile   byte = 0x02
	RecRemove byte = 0x03
)

// FileID names a series file: its kind, series ref and start (ms).
type FileID struct {
	Kind  Kind
	Ref   uint64
	Start int64
}

// File is one uploaded series file.
type File struct {
	FileID
	CRC        uint32 // CRC-32C (Castagnoli) of the whole object
	Size       int64  // bytes
	MinT, MaxT int64  // ms, over its blocks
	ModTime    int64  // ns, the local file's mtime when uploaded; 0 in the bucket
}

// Record is one decoded index record: Type says which fields are set.
type Record struct {
	Type   byte
	Ref    uint64        // RecSeries
	Labels labels.Labels // RecSeries
	File   File          // RecFile; RecRemove sets FileID and CRC only
}

// ErrRecord marks an index record that does not decode.
var ErrRecord = errors.New("bucket: bad index record")

// AppendSeries appends a series record.
func AppendSeries(dst []byte, ref uint64, lset labels.Labels) []byte {
	dst = append(dst, RecSeries)
	dst = binary.LittleEndian.AppendUint64(dst, ref)
	dst = binary.AppendUvarint(dst, uint64(lset.Len()))
	lset.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	return dst
}

// AppendFile appends a file record.
func AppendFile(dst []byte, f File) []byte {
	dst = append(dst, RecFile, byte(f.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, f.Ref)
	dst = binary.AppendVarint(dst, f.Start)
	dst = binary.LittleEndian.AppendUint32(dst, f.CRC)
	dst = binary.AppendUvarint(dst, uint64(f.Size))
	dst = binary.AppendVarint(dst, f.MinT)
	dst = binary.AppendVarint(dst, f.MaxT)
	return binary.AppendVarint(dst, f.ModTime)
}

// AppendRemove appends a remove record: file id with crc leaves the index.
func AppendRemove(dst []byte, id FileID, crc uint32) []byte {
	dst = append(dst, RecRemove, byte(id.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, id.Ref)
	dst = binary.AppendVarint(dst, id.Start)
	return binary.LittleEndian.AppendUint32(dst, crc)
}

// DecodeRecord decodes one whole record. b is scratch space for labels.
func DecodeRecord(b *labels.ScratchBuilder, p []byte) (Record, error) {
	if len(p) == 0 {
		return Record{}, fmt.Errorf("%w: empty", ErrRecord)
	}
	d := decoder{p: p[1:]}
	r := Record{Type: p[0]}
	switch p[0] {
	case RecSeries:
		r.Ref = d.u64()
		n := d.uvarint()
		if n == 0 || n > uint64(len(d.p))/2 { // every label takes two length bytes at least
			d.fail("label count %d", n)
		}
		b.Reset()
		prev := ""
		for i := uint64(0); i < n && d.err == nil; i++ {
			name, value := d.str(), d.str()
			if d.err == nil && (name == "" || value == "" || (i > 0 && name <= prev) || !utf8.ValidString(name) || !utf8.ValidString(value)) {
				d.fail("label %d (%q=%q): want non-empty UTF-8, names strictly ascending", i, name, value)
			}
			b.Add(name, value)
			prev = name
		}
		if d.err == nil {
			r.Labels = b.Labels()
		}
	case RecFile:
		r.File.Kind = d.kind()
		r.File.Ref = d.u64()
		r.File.Start = d.varint()
		r.File.CRC = d.u32()
		size := d.uvarint()
		if size > 1<<62 {
			d.fail("size %d", size)
		}
		r.File.Size = int64(size)
		r.File.MinT, r.File.MaxT = d.varint(), d.varint()
		r.File.ModTime = d.varint()
		if d.err == nil && r.File.MinT > r.File.MaxT {
			d.fail("bounds [%d, %d]", r.File.MinT, r.File.MaxT)
		}
	case RecRemove:
		r.File.Kind = d.kind()
		r.File.Ref = d.u64()
		r.File.Start = d.varint()
		r.File.CRC = d.u32()
	default:
		return Record{}, fmt.Errorf("%w: unknown type %#x", ErrRecord, p[0])
	}
	if d.err == nil && len(d.p) != 0 {
		d.fail("%d trailing bytes", len(d.p))
	}
	if d.err != nil {
		return Record{}, fmt.Errorf("%w: type %#x: %v", ErrRecord, p[0], d.err)
	}
	return r, nil
}

// decoder reads fields with a sticky error: the first failure stops the
// rest from reading anything.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if len(d.p) < n {
		d.fail("cut short: %d bytes left, want %d", len(d.p), n)
		return false
	}
	return true
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.p)
	d.p = d.p[8:]
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.p)
	d.p = d.p[4:]
	return v
}

func (d *decoder) kind() Kind {
	if !d.need(1) {
		return 0
	}
	k := Kind(d.p[0])
	d.p = d.p[1:]
	if !k.valid() {
		d.fail("unknown kind %d", k)
	}
	return k
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.p)) {
		d.fail("string of %d bytes, %d left", n, len(d.p))
		return ""
	}
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}
