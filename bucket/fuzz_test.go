package bucket

import (
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
)

// Index objects come from the bucket: outside bytes. Whatever decodes must
// re-encode to an object that decodes to the same records, and decoding
// never allocates beyond the bound it is given.
func FuzzDecodeIndex(f *testing.F) {
	enc, _ := testRecords()
	f.Add(EncodeIndex(1, true, enc))
	f.Add(EncodeIndex(2, false, enc[:2]))
	var many [][]byte
	for i := 0; i < 40; i++ {
		many = append(many, enc...)
	}
	f.Add(EncodeIndex(3, true, many))
	f.Add(EncodeIndex(4, false, nil))
	f.Fuzz(func(t *testing.T, obj []byte) {
		io, err := DecodeIndex("fuzz", obj, 1<<20)
		if err != nil {
			return
		}
		var recs [][]byte
		for _, r := range io.Records {
			switch r.Type {
			case RecSeries:
				recs = append(recs, AppendSeries(nil, r.Ref, r.Labels))
			case RecFile:
				recs = append(recs, AppendFile(nil, r.File))
			case RecRemove:
				recs = append(recs, AppendRemove(nil, r.File.FileID, r.File.CRC))
			}
		}
		again, err := DecodeIndex("fuzz", EncodeIndex(io.Seq, io.Full, recs), 1<<20)
		if err != nil {
			t.Fatalf("re-encoded object does not decode: %v", err)
		}
		if again.Seq != io.Seq || again.Full != io.Full || len(again.Records) != len(io.Records) {
			t.Fatal("re-encoded object differs")
		}
		for i := range io.Records {
			a, b := io.Records[i], again.Records[i]
			if a.Type != b.Type || a.Ref != b.Ref || a.File != b.File || !labels.Equal(a.Labels, b.Labels) {
				t.Fatalf("record %d differs: %+v and %+v", i, a, b)
			}
		}
	})
}

// Block index cache entries are local files, but a damaged one must be
// refused, never trusted: the same round-trip property.
func FuzzDecodeBlockIndex(f *testing.F) {
	f.Add(encodeBlockIndex("p/w/series/ab/x.acta", 1219, 0xabc, []byte("head"), []acta.BlockInfo{
		{Seq: 1, Offset: 4, Bytes: 400, Rows: 7, BaseRowID: 1<<64 - 1, Min: -3, Max: 99, Sorted: true},
		{Seq: 2, Offset: 404, Bytes: 815, Rows: 1, BaseRowID: 1<<64 - 1, Min: 100, Max: 100}}))
	f.Add(encodeBlockIndex("", 0, 0, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, size, crc, head, blocks, err := decodeBlockIndex(b)
		if err != nil {
			return
		}
		k2, s2, c2, h2, b2, err := decodeBlockIndex(encodeBlockIndex(key, size, crc, head, blocks))
		if err != nil || k2 != key || s2 != size || c2 != crc || string(h2) != string(head) || !reflect.DeepEqual(b2, blocks) && len(blocks) > 0 {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// Records behind the checksum: every record decoder reached by bytes that
// pass it. What decodes re-encodes to the same record.
func FuzzDecodeRecord(f *testing.F) {
	enc, _ := testRecords()
	for _, p := range enc {
		f.Add(p)
	}
	var b labels.ScratchBuilder
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := DecodeRecord(&b, p)
		if err != nil {
			return
		}
		var again []byte
		switch r.Type {
		case RecSeries:
			again = AppendSeries(nil, r.Ref, r.Labels)
		case RecFile:
			again = AppendFile(nil, r.File)
		case RecRemove:
			again = AppendRemove(nil, r.File.FileID, r.File.CRC)
		}
		r2, err := DecodeRecord(&b, again)
		if err != nil || r2.Type != r.Type || r2.Ref != r.Ref || r2.File != r.File || !labels.Equal(r2.Labels, r.Labels) {
			t.Fatalf("round trip of %+v: %+v, %v", r, r2, err)
		}
	})
}
