package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func payload(i int) []byte {
	return []byte(fmt.Sprintf("record-%d-%s", i, bytes.Repeat([]byte{'x'}, i%37)))
}

func writeN(t *testing.T, dir string, n int, segSize int64) {
	t.Helper()
	l, err := Open(dir, Options{SegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		pos, err := l.Append(payload(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(pos); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, dir string) ([][]byte, ReplayStats, error) {
	t.Helper()
	var got [][]byte
	st, err := Replay(dir, func(_ int, p []byte) error {
		got = append(got, append([]byte(nil), p...))
		return nil
	})
	return got, st, err
}

func TestRoundTripAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, 500, 1024)
	segs, _ := Segments(dir)
	if len(segs) < 5 {
		t.Fatalf("want several segments, got %v", segs)
	}
	got, st, err := readAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 500 || st.Records != 500 {
		t.Fatalf("got %d records", len(got))
	}
	for i, p := range got {
		if !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d = %q", i, p)
		}
	}
	// A reopened log appends to a new segment after the last.
	l, err := Open(dir, Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if l.Current() != segs[len(segs)-1]+1 {
		t.Fatalf("current %d after %v", l.Current(), segs)
	}
	l.Close()
}

// TestTornTailIsCut: damage at the end of the last segment is cut, and
// the cut is durable. A zero tail (preallocated space) is trimmed and
// counted apart from torn bytes; a torn record followed by zeros is torn.
func TestTornTailIsCut(t *testing.T) {
	zeros := func(d []byte) []byte { return append(d, make([]byte, 4096)...) }
	last := int64(headerSize + len(payload(99)))
	cases := map[string]struct {
		damage          func(data []byte) []byte
		records         int
		torn, zeroBytes int64
	}{
		"cut mid payload":       {func(d []byte) []byte { return d[:len(d)-3] }, 99, last - 3, 0},
		"cut mid header":        {func(d []byte) []byte { return d[:len(d)-int(last)+3] }, 99, 3, 0},
		"zero tail":             {zeros, 100, 0, 4096},
		"garbled last":          {func(d []byte) []byte { d[len(d)-1] ^= 0xff; return d }, 99, last, 0},
		"cut mid payload+zeros": {func(d []byte) []byte { return zeros(d[:len(d)-3]) }, 99, last - 3 + 4096, 0},
		"cut mid header+zeros":  {func(d []byte) []byte { return zeros(d[:len(d)-int(last)+3]) }, 99, 3 + 4096, 0},
		"garbled last+zeros":    {func(d []byte) []byte { d[len(d)-1] ^= 0xff; return zeros(d) }, 99, last + 4096, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeN(t, dir, 100, 1<<20)
			path := filepath.Join(dir, SegmentName(0))
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, c.damage(bytes.Clone(data)), 0o644); err != nil {
				t.Fatal(err)
			}
			got, st, err := readAll(t, dir)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if len(got) != c.records || st.TornBytes != c.torn || st.ZeroBytes != c.zeroBytes {
				t.Fatalf("got %d records, %d torn bytes, %d zero bytes; want %d, %d, %d", len(got), st.TornBytes, st.ZeroBytes, c.records, c.torn, c.zeroBytes)
			}
			for i, p := range got {
				if !bytes.Equal(p, payload(i)) {
					t.Fatalf("record %d = %q", i, p)
				}
			}
			after, _ := os.ReadFile(path)
			if want := data[:len(data)-int(last)*(100-c.records)]; !bytes.Equal(after, want) {
				t.Fatalf("segment holds %d bytes after the cut, want the %d of its good records", len(after), len(want))
			}
			// The cut is durable: a second replay is clean.
			got2, st2, err := readAll(t, dir)
			if err != nil || len(got2) != len(got) || st2.TornBytes != 0 || st2.ZeroBytes != 0 {
				t.Fatalf("second replay: %d records, torn %d, zero %d, %v", len(got2), st2.TornBytes, st2.ZeroBytes, err)
			}
		})
	}
}

func TestCorruptionBeforeTailIsReported(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, 300, 2048)
	// Flip a byte in the middle of the first segment.
	path := filepath.Join(dir, SegmentName(0))
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0x55
	os.WriteFile(path, data, 0o644)
	_, _, err := readAll(t, dir)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != 0 || ce.Offset <= 0 {
		t.Fatalf("want corruption in segment 0, got %v", err)
	}
	// Damage inside the last segment followed by good records is
	// corruption too, not a torn tail.
	dir2 := t.TempDir()
	writeN(t, dir2, 50, 1<<20)
	path = filepath.Join(dir2, SegmentName(0))
	data, _ = os.ReadFile(path)
	data[20] ^= 0x55
	os.WriteFile(path, data, 0o644)
	_, _, err = readAll(t, dir2)
	if !IsCorruption(err) {
		t.Fatalf("want corruption, got %v", err)
	}
}

func TestGroupCommitConcurrent(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				pos, err := l.Append([]byte(fmt.Sprintf("g%d-%d", g, i)))
				if err == nil {
					err = l.Sync(pos)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	l.Close()
	got, _, err := readAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1600 {
		t.Fatalf("got %d records", len(got))
	}
	seen := map[string]bool{}
	for _, p := range got {
		seen[string(p)] = true
	}
	if len(seen) != 1600 {
		t.Fatalf("got %d distinct", len(seen))
	}
}

func TestTruncateBefore(t *testing.T) {
	dir := t.TempDir()
	l, _ := Open(dir, Options{SegmentSize: 100})
	for i := 0; i < 20; i++ {
		l.Append(payload(i))
	}
	cur := l.Current()
	if err := l.TruncateBefore(cur); err != nil {
		t.Fatal(err)
	}
	segs, _ := Segments(dir)
	if len(segs) != 1 || segs[0] != cur {
		t.Fatalf("segments %v, current %d", segs, cur)
	}
	l.Close()
}
