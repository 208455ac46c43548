package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReplayMappedAsReplay: the mapped replay gives the same records, in
// the same segments, and cuts a torn tail the same way.
func TestReplayMappedAsReplay(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, 500, 4<<10)
	segs, _ := Segments(dir)
	last := filepath.Join(dir, SegmentName(segs[len(segs)-1]))
	f, _ := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{200, 0, 0, 0, 1, 2, 3}) // a record cut short
	f.Close()
	var got [][]byte
	st, release, err := ReplayMapped(dir, func(seg int, p []byte) error {
		got = append(got, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.TornBytes != 7 || len(got) != 500 {
		t.Fatalf("replayed %d records, torn bytes %d; want 500 and 7", len(got), st.TornBytes)
	}
	for i, p := range got {
		if !bytes.Equal(p, payload(i)) {
			t.Fatalf("record %d: %q", i, p)
		}
	}
	release()
	again, _, err := readAll(t, dir)
	if err != nil || len(again) != 500 {
		t.Fatalf("after the mapped replay: %d records, %v", len(again), err)
	}
}

// TestFileWriter: a committed record file reads back whole, mapped; an
// aborted one leaves nothing; a damaged one is corruption naming it.
func TestFileWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "records")
	w, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := w.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	size, err := w.Commit()
	if fi, _ := os.Stat(path); err != nil || fi == nil || fi.Size() != size {
		t.Fatalf("commit: %v, size %d, file %v", err, size, fi)
	}
	m, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := m.Records(func(p []byte) error {
		if !bytes.Equal(p, payload(n)) {
			t.Fatalf("record %d: %q", n, p)
		}
		n++
		return nil
	}); err != nil || n != 100 {
		t.Fatalf("read %d records: %v", n, err)
	}
	m.Unmap()

	w2, _ := CreateFile(filepath.Join(dir, "aborted"))
	w2.Append(payload(1))
	w2.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("after an abort the directory holds %d files, want 1", len(ents))
	}

	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o644)
	m, _ = Map(path)
	defer m.Unmap()
	var ce *CorruptionError
	if err := m.Records(func([]byte) error { return nil }); !errors.As(err, &ce) || ce.Dir != path {
		t.Fatalf("damaged file: %v", err)
	}
}
