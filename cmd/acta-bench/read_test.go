package main

import (
	"bytes"
	"strings"
	"testing"
)

// An answer read again into the same answerBuf reuses its memory: the
// timed reads of a query do not grow the heap (the untimed first one did).
func TestAnswerBufReusesMemory(t *testing.T) {
	var ab answerBuf
	big := bytes.Repeat([]byte("x"), 1<<20)
	first, err := ab.read(bytes.NewReader(big))
	if err != nil || !bytes.Equal(first, big) {
		t.Fatalf("first read: %d bytes, %v; want %d bytes", len(first), err, len(big))
	}
	allocs := testing.AllocsPerRun(10, func() {
		b, err := ab.read(bytes.NewReader(big))
		if err != nil || len(b) != len(big) {
			t.Fatalf("read again: %d bytes, %v", len(b), err)
		}
	})
	if allocs > 1 { // the bytes.Reader
		t.Errorf("reading the same size again allocated %.0f times, want at most 1", allocs)
	}
	small, err := ab.read(strings.NewReader("de"))
	if err != nil || string(small) != "de" {
		t.Errorf("a shorter answer read back as %q (%v), want \"de\"", small, err)
	}
}
