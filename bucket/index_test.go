package bucket

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
)

func testRecords() ([][]byte, []Record) {
	files := []File{
		{FileID: FileID{Kind: KindFloat, Ref: 0xdeadbeef00000001, Start: 1750000000000}, CRC: 0x01020304, Size: 4096, MinT: 1750000000123, MaxT: 1750086399999, ModTime: 17},
		{FileID: FileID{Kind: KindHistogram, Ref: 1, Start: -86400000}, CRC: 0xffffffff, Size: 1 << 40, MinT: math.MinInt64, MaxT: math.MaxInt64},
	}
	lsets := []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "node", "instance", "10.0.0.1:9100"),
		labels.FromStrings("__name__", "ünïcode", "le", "+Inf"),
	}
	var enc [][]byte
	var want []Record
	for i, l := range lsets {
		enc = append(enc, AppendSeries(nil, uint64(i+1), l))
		want = append(want, Record{Type: RecSeries, Ref: uint64(i + 1), Labels: l})
	}
	for _, f := range files {
		enc = append(enc, AppendFile(nil, f))
		want = append(want, Record{Type: RecFile, File: f})
		enc = append(enc, AppendRemove(nil, f.FileID, f.CRC))
		want = append(want, Record{Type: RecRemove, File: File{FileID: f.FileID, CRC: f.CRC}})
	}
	return enc, want
}

func TestRecordsRoundTrip(t *testing.T) {
	enc, want := testRecords()
	var b labels.ScratchBuilder
	for i, p := range enc {
		got, err := DecodeRecord(&b, p)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want[i])
		}
		// Every cut is refused, never read past.
		for n := 0; n < len(p); n++ {
			if _, err := DecodeRecord(&b, p[:n]); !errors.Is(err, ErrRecord) {
				t.Fatalf("record %d cut to %d bytes: %v", i, n, err)
			}
		}
		if _, err := DecodeRecord(&b, append(append([]byte(nil), p...), 0)); !errors.Is(err, ErrRecord) {
			t.Fatalf("record %d with a trailing byte: %v", i, err)
		}
	}
	bad := map[string][]byte{
		"type":        {0x7f},
		"kind":        append([]byte{RecRemove, 9}, make([]byte, 13)...),
		"unsorted":    append([]byte{RecSeries, 1, 0, 0, 0, 0, 0, 0, 0, 2}, "\x01b\x011\x01a\x012"...),
		"empty value": AppendSeries(nil, 1, labels.New(labels.Label{Name: "a", Value: ""})),
		"no labels":   AppendSeries(nil, 1, labels.EmptyLabels()),
		"bounds":      AppendFile(nil, File{MinT: 5, MaxT: 4}),
	}
	for name, p := range bad {
		if _, err := DecodeRecord(&b, p); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v, want ErrRecord", name, err)
		}
	}
}

// Index objects round-trip (with and without compression), and any
// damage — every byte flipped, every cut — is ErrIndex naming the key;
// the decoded size is bounded before decompressing.
func TestIndexObject(t *testing.T) {
	enc, want := testRecords()
	var many [][]byte
	for i := 0; i < 50; i++ {
		many = append(many, enc...)
	}
	for _, c := range []struct {
		recs [][]byte
		full bool
	}{{enc[:1], false}, {many, true}, {nil, true}} {
		obj := EncodeIndex(7, c.full, c.recs)
		got, err := DecodeIndex("k", obj, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != 7 || got.Full != c.full || len(got.Records) != len(c.recs) {
			t.Fatalf("got seq %d full %v %d records", got.Seq, got.Full, len(got.Records))
		}
		for i := range got.Records {
			if !reflect.DeepEqual(got.Records[i], want[i%len(want)]) {
				t.Fatalf("record %d differs", i)
			}
		}
	}
	obj := EncodeIndex(3, false, many)
	if obj[11] != codecZstd {
		t.Fatalf("a %d-record body was not compressed", len(many))
	}
	for i := range obj {
		mut := append([]byte(nil), obj...)
		mut[i] ^= 0x10
		if _, err := DecodeIndex("s3://b/k", mut, 1<<20); !errors.Is(err, ErrIndex) {
			t.Fatalf("flip at %d: %v", i, err)
		}
	}
	for n := 0; n < len(obj); n += 7 {
		if _, err := DecodeIndex("s3://b/k", obj[:n], 1<<20); !errors.Is(err, ErrIndex) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	if _, err := DecodeIndex("s3://b/k", obj, 100); !errors.Is(err, ErrIndex) {
		t.Fatalf("over the size limit: %v", err)
	}
}

// State applies records in order: a re-upload replaces a file and returns
// the old one; a remove of another CRC is ignored; Records rebuilds the
// same state.
func TestStateApply(t *testing.T) {
	st := NewState()
	l := labels.FromStrings("__name__", "x")
	st.Apply(Record{Type: RecSeries, Ref: 9, Labels: l})
	f1 := File{FileID: FileID{Ref: 9, Start: 100}, CRC: 1, Size: 10, MinT: 100, MaxT: 200}
	if _, ok := st.Apply(Record{Type: RecFile, File: f1}); ok {
		t.Fatal("a new file replaced something")
	}
	f2 := f1
	f2.CRC, f2.Size = 2, 12
	if old, ok := st.Apply(Record{Type: RecFile, File: f2}); !ok || old.CRC != 1 {
		t.Fatalf("re-upload: %v %v", old, ok)
	}
	if _, ok := st.Apply(Record{Type: RecRemove, File: File{FileID: f1.FileID, CRC: 1}}); ok || len(st.Files) != 1 {
		t.Fatal("a remove of the replaced CRC removed the new file")
	}
	again := NewState()
	var b labels.ScratchBuilder
	for _, p := range st.Records() {
		r, err := DecodeRecord(&b, p)
		if err != nil {
			t.Fatal(err)
		}
		again.Apply(r)
	}
	if !reflect.DeepEqual(again.Files, st.Files) || !labels.Equal(again.Series[9], l) {
		t.Fatalf("rebuilt %+v, want %+v", again, st)
	}
	if gone, ok := st.Apply(Record{Type: RecRemove, File: File{FileID: f1.FileID, CRC: 2}}); !ok || gone.Size != 12 || len(st.Files) != 0 {
		t.Fatal("remove")
	}
}

func TestKeys(t *testing.T) {
	for _, l := range []Layout{{}, {Prefix: "metrics/prod"}} {
		key := l.FileKey("writer-1", KindHistogram, 0xab00000000000001, -5, 0x0000beef)
		k, ref, start, crc, ok := l.ParseFileKey("writer-1", key)
		if !ok || k != KindHistogram || ref != 0xab00000000000001 || start != -5 || crc != 0xbeef {
			t.Fatalf("%s: %v %x %d %x %v", key, k, ref, start, crc, ok)
		}
		if _, _, _, _, ok := l.ParseFileKey("writer-2", key); ok {
			t.Fatal("parsed another instance's key")
		}
		seq, full, ok := parseIndexName(filepath.Base(l.IndexKey("w", 42, true)))
		if !ok || seq != 42 || !full {
			t.Fatal("index key")
		}
	}
	if want := "metrics/prod/w/series/ab/ab00000000000001-1750000000000-0000beef.acta"; (Layout{Prefix: "metrics/prod"}).FileKey("w", KindFloat, 0xab00000000000001, 1750000000000, 0xbeef) != want {
		t.Fatal("file key layout changed")
	}
	for _, bad := range []string{"", "-a", "a/b", "a b", string(make([]byte, 129))} {
		if ValidInstance(bad) == nil {
			t.Errorf("instance %q accepted", bad)
		}
	}
	for _, bad := range []string{"/a", "a/", "a//b", "a/../b"} {
		if ValidPrefix(bad) == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}

// The block index cache keeps entries across reopening, is bounded in
// bytes (least recently used out first), and drops an entry whose file is
// damaged or describes another object.
func TestIndexCache(t *testing.T) {
	dir := t.TempDir()
	head := []byte("prologue and schema")
	blocks := []acta.BlockInfo{{Seq: 1, Offset: 19, Bytes: 400, Rows: 7, BaseRowID: math.MaxUint64, Min: -3, Max: 99, Sorted: true},
		{Seq: 2, Offset: 419, Bytes: 800, Rows: 1, BaseRowID: math.MaxUint64, Min: 100, Max: 100}}
	c, err := OpenIndexCache(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put("a/b.acta", 1219, 0xabc, head, blocks); err != nil {
		t.Fatal(err)
	}
	h, bs, ok := c.Get("a/b.acta", 1219, 0xabc)
	if !ok || string(h) != string(head) || !reflect.DeepEqual(bs, blocks) {
		t.Fatalf("get: %v %q %+v", ok, h, bs)
	}
	if _, _, ok := c.Get("a/b.acta", 1219, 0xabd); ok {
		t.Fatal("an entry for another CRC was returned")
	}
	if _, _, ok := c.Get("a/b.acta", 1219, 0xabc); ok {
		t.Fatal("the mismatched entry was kept")
	}
	c.Put("a/b.acta", 1219, 0xabc, head, blocks)
	c2, err := OpenIndexCache(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c2.Get("a/b.acta", 1219, 0xabc); !ok {
		t.Fatal("lost across reopening")
	}
	// Damage the entry: dropped, not returned.
	path := filepath.Join(dir, entryName("a/b.acta"))
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, _, ok := c2.Get("a/b.acta", 1219, 0xabc); ok {
		t.Fatal("a damaged entry was returned")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a damaged entry was kept on disk")
	}
	// The bound: room for three entries.
	one := int64(len(encodeBlockIndex("k1", 1, 1, head, blocks[:1])))
	small, _ := OpenIndexCache(t.TempDir(), 3*one, nil)
	for _, k := range []string{"k1", "k2", "k3"} {
		small.Put(k, 1, 1, head, blocks[:1])
	}
	small.Get("k1", 1, 1) // k2 is now the least recently used
	small.Put("k4", 1, 1, head, blocks[:1])
	if n, b := small.Stats(); n != 3 || b != 3*one {
		t.Fatalf("%d entries, %d bytes; want 3 and %d", n, b, 3*one)
	}
	for k, want := range map[string]bool{"k1": true, "k2": false, "k3": true, "k4": true} {
		if _, _, ok := small.Get(k, 1, 1); ok != want {
			t.Errorf("%s cached %v, want %v", k, ok, want)
		}
	}
}
