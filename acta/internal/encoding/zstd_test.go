package encoding

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestZstdKeptOnlyWhenItSaves(t *testing.T) {
	xs := make([]int64, 1000)
	for i := range xs {
		xs[i] = int64(i % 7)
	}
	col := roundTrip(t, Options{Codec: CodecZstd}, testColumn{name: "compressible", class: ClassSigned, width: 8, rows: len(xs), vals: int64Vals(xs...)})
	s := col.Streams[0]
	if s.Codec != CodecZstd || s.RawLen != 8000 || len(s.Data) >= 8000-zstdMinSaving {
		t.Fatalf("stream codec %d raw %d stored %d, want zstd saving >= 8", s.Codec, s.RawLen, len(s.Data))
	}
	// Eight bytes cannot shrink by eight.
	col = roundTrip(t, Options{Codec: CodecZstd}, testColumn{name: "tiny", class: ClassSigned, width: 8, rows: 1, vals: int64Vals(5)})
	if s := col.Streams[0]; s.Codec != CodecNone || len(s.Data) != 8 {
		t.Fatalf("tiny stream %+v, want uncompressed", s)
	}
}

func TestZstdDecodeRejects(t *testing.T) {
	z := sharedZstdEncoder(3)
	src := make([]byte, 4096)
	frame := z.encode(nil, src)
	cases := []struct {
		name   string
		data   []byte
		rawLen uint64
		budget int64
		want   error
	}{
		{"declared too short", frame, 4095, 1 << 20, ErrCorrupt},
		{"declared too long", frame, 4097, 1 << 20, ErrCorrupt},
		{"beyond any ratio", frame[:4], 1 << 30, 1 << 40, ErrCorrupt},
		{"garbage", []byte("not a zstd frame at all"), 10, 1 << 20, ErrCorrupt},
		{"truncated", frame[:len(frame)-2], 4096, 1 << 20, ErrCorrupt},
		{"budget", frame, 4096, 100, ErrLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zstdDecode(tc.data, tc.rawLen, &Budget{Remaining: tc.budget})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	out, err := zstdDecode(frame, 4096, nil)
	if err != nil || len(out) != 4096 {
		t.Fatalf("good frame: %d bytes, %v", len(out), err)
	}
}

// TestZstdWithoutContentSize covers frames that do not declare their size
// (streaming writers): they decode through the exact-size path, and a frame
// longer or shorter than declared is corrupt, also after pooled reuse.
func TestZstdWithoutContentSize(t *testing.T) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.Repeat([]byte("acta"), 100000) // several blocks: the writer cannot know the size up front
	w.Write(src)
	w.Close()
	frame := buf.Bytes()
	var h zstd.Header
	if err := h.Decode(frame); err != nil || h.HasFCS {
		t.Fatalf("test frame declares its size (%v)", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := zstdDecode(frame, uint64(len(src))-1, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("longer than declared: %v", err)
		}
		if _, err := zstdDecode(frame, uint64(len(src))+1, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("shorter than declared: %v", err)
		}
		out, err := zstdDecode(frame, uint64(len(src)), nil)
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("exact: %v", err)
		}
	}
}

func TestZstdSkipsStreamsTooSmallToSave(t *testing.T) {
	// 17 zero bytes compress to a 10+ byte frame: never 8 bytes saved.
	z := sharedZstdEncoder(3)
	if n := len(z.encode(nil, make([]byte, 17))); n < zstdMinFrame {
		t.Fatalf("a zstd frame of %d bytes is below the assumed minimum %d", n, zstdMinFrame)
	}
}

// skippableFrame is a standard zstd skippable frame (magic 0x184D2A5?,
// little-endian size, content), which §10's "standard frames" include.
func skippableFrame(content ...byte) []byte {
	f := []byte{0x5a, 0x2a, 0x4d, 0x18, byte(len(content)), 0, 0, 0}
	return append(f, content...)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestZstdStoredBytesConsumedExactly: the stored bytes of a zstd stream
// must be whole frames (§10; libzstd and the reference refuse trailing
// bytes). Frames with and without a content size, behind a leading
// skippable frame or not, with 1 to 16 bytes after the last frame are
// corrupt; skippable frames anywhere and several frames are accepted.
func TestZstdStoredBytesConsumedExactly(t *testing.T) {
	src := bytes.Repeat([]byte("acta"), 1000)
	withSize := sharedZstdEncoder(3).encode(nil, src)
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf)
	w.Write(src)
	w.Close()
	noSize := append([]byte(nil), buf.Bytes()...)
	for name, frame := range map[string][]byte{"content size": withSize, "no content size": noSize} {
		for lead, prefix := range map[string][]byte{"": nil, "skippable first, ": skippableFrame(1, 2, 3)} {
			good := func(what string, b []byte) {
				t.Helper()
				out, err := zstdDecode(b, uint64(len(src)), nil)
				if err != nil || !bytes.Equal(out, src) {
					t.Errorf("%s, %s%s: %v, want the %d bytes", name, lead, what, err, len(src))
				}
			}
			bad := func(what string, b []byte) {
				t.Helper()
				if _, err := zstdDecode(b, uint64(len(src)), nil); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s, %s%s: %v, want ErrCorrupt", name, lead, what, err)
				}
			}
			good("alone", cat(prefix, frame))
			good("skippable frame after", cat(prefix, frame, skippableFrame(9, 9)))
			good("empty skippable frame after", cat(prefix, frame, skippableFrame()))
			for n := 1; n <= 16; n++ {
				bad(fmt.Sprintf("%d zero bytes after", n), cat(prefix, frame, make([]byte, n)))
				bad(fmt.Sprintf("%d 0xff bytes after", n), cat(prefix, frame, bytes.Repeat([]byte{0xff}, n)))
			}
			bad("a lone frame magic after", cat(prefix, frame, []byte{0x28, 0xb5, 0x2f, 0xfd}))
			bad("a truncated skippable frame after", cat(prefix, frame, skippableFrame(1, 2, 3)[:9]))
			bad("garbage after a skippable frame", cat(prefix, frame, skippableFrame(), []byte("acta")))
		}
	}
	// Several frames, a skippable one between them: one stream.
	z := sharedZstdEncoder(3)
	two := cat(z.encode(nil, src[:1500]), skippableFrame(7), z.encode(nil, src[1500:]))
	if out, err := zstdDecode(two, uint64(len(src)), nil); err != nil || !bytes.Equal(out, src) {
		t.Fatalf("two frames: %v", err)
	}
	if _, err := zstdDecode(cat(two, []byte{0}), uint64(len(src)), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("two frames and a byte: %v, want ErrCorrupt", err)
	}
	// Only skippable frames: zero bytes of content.
	if out, err := zstdDecode(skippableFrame(1), 0, nil); err != nil || len(out) != 0 {
		t.Fatalf("skippable frame alone: %d bytes, %v", len(out), err)
	}
}

// TestZstdLargeWindowCostsNothing: a frame may declare a window far larger
// than its content (streaming compressors do; libzstd's one-shot decoder
// accepts any). Decoding reads it without allocating the window. The frame
// is built by hand because encoders shrink the window to a known content:
// magic, a descriptor without content size, a 1 GiB window (log 30), one
// raw last block.
func TestZstdLargeWindowCostsNothing(t *testing.T) {
	src := bytes.Repeat([]byte("window"), 200)
	n := len(src)
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3,
		byte(1 | n<<3), byte(n >> 5), byte(n >> 13)}
	frame = append(frame, src...)
	var h zstd.Header
	if err := h.Decode(frame); err != nil || h.WindowSize != 1<<30 || h.HasFCS {
		t.Fatalf("test frame: window %d, content size %v (%v)", h.WindowSize, h.HasFCS, err)
	}
	zstdDecode(frame, uint64(n), nil) // warm the shared decoder
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := zstdDecode(frame, uint64(n), nil)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("decode: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("a %d-byte window cost %d bytes of allocation", h.WindowSize, grew)
	}
	// The same frame declaring less content than it holds is refused.
	if _, err := zstdDecode(frame, uint64(n-1), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("declared one byte short: %v", err)
	}
}

// TestZstdOverlongFrameBound measures what a corrupt stream costs whose
// frame states no content size and decodes far past the declared length:
// it is refused, having allocated at most 2.5 times the declared length
// plus a block (the buffer grows once before the cap check refuses it).
func TestZstdOverlongFrameBound(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf, zstd.WithSingleSegment(false))
	w.Write(src)
	w.Close()
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("test frame states its content size (%v)", err)
	}
	for _, declared := range []uint64{1 << 20, 16 << 20} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := zstdDecode(buf.Bytes(), declared, nil)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("declared %d: %v, want ErrCorrupt", declared, err)
		}
		grew := after.TotalAlloc - before.TotalAlloc
		if limit := declared*5/2 + 1<<20; grew > limit {
			t.Fatalf("declared %d: allocated %d bytes, limit %d", declared, grew, limit)
		}
		t.Logf("declared %d: allocated %.2f times that", declared, float64(grew)/float64(declared))
	}
}
