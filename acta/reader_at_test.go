package acta

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r     *bytes.Reader
	bytes int64
	reads int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.bytes += int64(len(p))
	c.reads++
	return c.r.ReadAt(p, off)
}

// sameBlocks reads every block through a and b and requires equal batches
// (every value bit: the fixtures' NaN payloads compare as bits through
// reflect on the typed arrays' uint64 views below).
func sameBlocks(t *testing.T, a, b *Reader) {
	t.Helper()
	if !reflect.DeepEqual(a.Blocks(), b.Blocks()) {
		t.Fatalf("blocks %+v, want %+v", b.Blocks(), a.Blocks())
	}
	if !bytes.Equal(a.Head(), b.Head()) || a.HeadSize() != int64(len(a.Head())) {
		t.Fatalf("heads differ (%d and %d bytes)", len(a.Head()), len(b.Head()))
	}
	for i := range a.Blocks() {
		x, err := a.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.ReadBlock(i)
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if !reflect.DeepEqual(floatBits(x), floatBits(y)) {
			t.Fatalf("block %d differs", i)
		}
	}
}

// floatBits makes a batch comparable with DeepEqual: float columns become
// their bit patterns (NaN != NaN otherwise).
func floatBits(b *Batch) []any {
	out := make([]any, len(b.Columns))
	for i, c := range b.Columns {
		if f, ok := c.(*FixedArray[float64]); ok {
			bits := make([]uint64, len(f.Values))
			for k, v := range f.Values {
				bits[k] = math.Float64bits(v)
			}
			out[i] = bits
			continue
		}
		out[i] = c
	}
	return out
}

// Every fixture and a multi-block file of ours read through an io.ReaderAt
// (OpenReaderAt) and through a known block list (OpenKnown) exactly as
// through Open; OpenKnown reads nothing before a block is read, and then
// exactly that block's frame.
func TestReaderAtMatchesOpen(t *testing.T) {
	paths := []string{}
	for _, n := range []string{"minimal.acta", "ts_sorted.acta", "date32.acta", "no_primary.acta", "timezone.acta", "nyc_taxi_3_rows.acta"} {
		paths = append(paths, fixture(n))
	}
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 3, 50, 7, 400)
	paths = append(paths, fx.path)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ra, err := OpenReaderAt("mem:"+p, bytes.NewReader(data), int64(len(data)), 0, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			sameBlocks(t, f, ra)
			// A read-ahead shorter than a frame header: discovery reads
			// headers and trailers apart, with the same result.
			small := &countingReaderAt{r: bytes.NewReader(data)}
			ra2, err := OpenReaderAt("mem:"+p, small, int64(len(data)), 60, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			sameBlocks(t, f, ra2)
			if ra.Path() != "mem:"+p || ra.Close() != nil {
				t.Fatalf("path %q", ra.Path())
			}
			c := &countingReaderAt{r: bytes.NewReader(data)}
			k, err := OpenKnown("known:"+p, c, int64(len(data)), f.Head(), f.Blocks(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if c.reads != 0 {
				t.Fatalf("OpenKnown read %d bytes", c.bytes)
			}
			if len(f.Blocks()) > 0 {
				last := len(f.Blocks()) - 1
				if _, err := k.ReadBlock(last); err != nil {
					t.Fatal(err)
				}
				if c.bytes != f.Blocks()[last].Bytes || c.reads != 1 {
					t.Fatalf("reading block %d read %d bytes in %d reads, want its %d-byte frame in one", last, c.bytes, c.reads, f.Blocks()[last].Bytes)
				}
			}
			sameBlocks(t, f, k)
			if _, err := k.Refresh(); err == nil {
				t.Fatal("Refresh of a reader over an io.ReaderAt succeeded")
			}
		})
	}
}

// A known block list that does not describe the bytes is refused at
// OpenKnown when it cannot be a chain of frames, and at ReadBlock (as
// ErrCorrupt naming the reader's name) when its frame disagrees: never
// other data.
func TestOpenKnownRefusesWrongLists(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 5, 9, 12)
	r, err := Open(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head, good := r.Head(), r.Blocks()
	size := int64(len(fx.data))
	edit := func(f func(bs []BlockInfo)) []BlockInfo {
		bs := append([]BlockInfo(nil), good...)
		f(bs)
		return bs
	}
	atOpen := map[string]struct {
		head   []byte
		size   int64
		blocks []BlockInfo
	}{
		"sequence":    {head, size, edit(func(bs []BlockInfo) { bs[1].Seq = 7 })},
		"offset":      {head, size, edit(func(bs []BlockInfo) { bs[1].Offset += 8 })},
		"length":      {head, size, edit(func(bs []BlockInfo) { bs[0].Bytes = 10 })},
		"past end":    {head, size - 1, good},
		"rows":        {head, size, edit(func(bs []BlockInfo) { bs[2].Rows = 0 })},
		"row IDs":     {head, size, edit(func(bs []BlockInfo) { bs[2].BaseRowID = 3 })},
		"bounds":      {head, size, edit(func(bs []BlockInfo) { bs[0].Min, bs[0].Max = 9, 1 })},
		"short head":  {head[:len(head)-1], size, good},
		"head flip":   {append(append([]byte(nil), head[:70]...), append([]byte{head[70] ^ 1}, head[71:]...)...), size, good},
		"long head":   {append(append([]byte(nil), head...), 0), size, good},
		"size < head": {head, int64(len(head)) - 1, nil},
	}
	for name, c := range atOpen {
		_, err := OpenKnown("obj", bytes.NewReader(fx.data), c.size, c.head, c.blocks, Limits{})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: OpenKnown: %v, want ErrCorrupt", name, err)
		}
	}
	atRead := map[string][]BlockInfo{
		"rows":   edit(func(bs []BlockInfo) { bs[1].Rows++ }),
		"min":    edit(func(bs []BlockInfo) { bs[1].Min-- }),
		"max":    edit(func(bs []BlockInfo) { bs[1].Max++ }),
		"sorted": edit(func(bs []BlockInfo) { bs[1].Sorted = !bs[1].Sorted }),
	}
	for name, bs := range atRead {
		k, err := OpenKnown("bucket/key.acta", bytes.NewReader(fx.data), size, head, bs, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := k.ReadBlock(0); err != nil {
			t.Fatalf("%s: block 0: %v", name, err)
		}
		_, err = k.ReadBlock(1)
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Path != "bucket/key.acta" || ce.Offset != good[1].Offset {
			t.Errorf("%s: ReadBlock: %v, want corruption of bucket/key.acta at %d", name, err, good[1].Offset)
		}
	}
}

// Damaged bytes behind a reader over an io.ReaderAt are detected by the
// frame checks, with the reader's name: a flipped byte in a block, a
// truncated object.
func TestReaderAtDetectsDamage(t *testing.T) {
	fx := writeSalvageFixture(t, t.TempDir(), WriterOptions{}, 5, 9)
	head := fx.data[:fx.blocks[0].Offset]
	for i := fx.blocks[1].Offset; i < fx.end(1); i++ {
		mut := append([]byte(nil), fx.data...)
		mut[i] ^= 0x20
		k, err := OpenKnown("b/k", bytes.NewReader(mut), int64(len(mut)), head, fx.blocks, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.ReadBlock(1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v, want ErrCorrupt", i, err)
		}
		if _, err := k.ReadBlock(0); err != nil {
			t.Fatalf("flip at %d hurt block 0: %v", i, err)
		}
	}
	cut := fx.data[:fx.end(1)-5]
	k, err := OpenKnown("b/k", bytes.NewReader(cut), int64(len(fx.data)), head, fx.blocks, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.ReadBlock(1); err == nil {
		t.Fatal("a truncated object was read")
	}
	r, err := OpenReaderAt("b/k", bytes.NewReader(cut), int64(len(cut)), 100, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Blocks()); n != 1 || !r.IncompleteTail() {
		t.Fatalf("truncated object: %d blocks, incomplete tail %v; want 1 and true", n, r.IncompleteTail())
	}
}
