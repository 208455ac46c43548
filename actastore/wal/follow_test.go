package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollower: each Read delivers only records completed since the last
// one; a record still being written is neither delivered nor cut; deleted
// segments are skipped; damage before the last segment's end is corruption.
func TestFollower(t *testing.T) {
	dir := t.TempDir()
	seg := func(i int) string { return filepath.Join(dir, SegmentName(i)) }
	write := func(path string, b []byte) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	fl := NewFollower(dir)
	read := func(want ...string) {
		t.Helper()
		var got []string
		if err := fl.Read(func(_ int, p []byte) error { got = append(got, string(p)); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}
	read() // no directory yet
	write(seg(0), AppendRecord(AppendRecord(nil, []byte("a")), []byte("b")))
	read("a", "b")
	read()
	rec := AppendRecord(nil, []byte("cc"))
	write(seg(0), rec[:5]) // half a record: being written
	read()
	if fi, _ := os.Stat(seg(0)); fi.Size() != 18+5 {
		t.Fatalf("segment is %d bytes: the follower changed it", fi.Size())
	}
	write(seg(0), rec[5:])
	read("cc")
	write(seg(1), AppendRecord(nil, []byte("d")))
	os.Remove(seg(0))
	read("d")

	// Garbage in a segment that is no longer the last one is corruption.
	write(seg(1), []byte{9, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	write(seg(2), AppendRecord(nil, []byte("e")))
	err := fl.Read(func(int, []byte) error { return nil })
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != 1 {
		t.Fatalf("got %v, want corruption in segment 1", err)
	}
}

// TestFollowerZeroTail: a follower of a live, preallocated log stops at the
// zero tail without reporting it (and without cutting it), picks up the
// records written into it later, and takes a zero tail left in a segment
// that is no longer the last (a crashed writer) for the end of its records.
func TestFollowerZeroTail(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	fl := NewFollower(dir)
	read := func(want ...string) {
		t.Helper()
		var got []string
		if err := fl.Read(func(_ int, p []byte) error { got = append(got, string(p)); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	appendSync := func(ps ...string) {
		t.Helper()
		var bs [][]byte
		for _, p := range ps {
			bs = append(bs, []byte(p))
		}
		pos, err := l.Append(bs...)
		if err == nil {
			err = l.Sync(pos)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	appendSync("a", "b")
	l.mu.Lock()
	l.waitPrepLocked()
	l.mu.Unlock()
	seg0 := filepath.Join(dir, SegmentName(0))
	size := fileSize(t, seg0)
	if size < prepMin {
		t.Fatalf("segment is %d bytes: not preallocated", size)
	}
	read("a", "b")
	read()
	appendSync("c")
	read("c")
	if got := fileSize(t, seg0); got < size {
		t.Fatalf("segment shrank from %d to %d bytes under the follower", size, got)
	}
	crash(t, l)
	// A writer that opens without replaying leaves segment 0 with its
	// zero tail before the new last segment.
	l, err = Open(dir, Options{Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendSync("d")
	read("d")
	if got := fileSize(t, seg0); got < size {
		t.Fatalf("the follower cut segment 0 to %d bytes", got)
	}
}
