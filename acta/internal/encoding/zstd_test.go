package encoding

import (
	"bytes"
	"errors"
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
