package main

import "testing"

func TestFlushZstdMinRows(t *testing.T) {
	for codec, want := range map[string]int{"auto": 128, "zstd": 0, "none": 0} {
		if got := flushZstdMinRows(codec); got != want {
			t.Errorf("flushZstdMinRows(%q) = %d, want %d", codec, got, want)
		}
	}
}
