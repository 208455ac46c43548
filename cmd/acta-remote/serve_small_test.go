package main

import (
	"testing"
	"time"
)

func TestFlushZstdMinRows(t *testing.T) {
	for codec, want := range map[string]int{"auto": 128, "zstd": 0, "none": 0} {
		if got := flushZstdMinRows(codec); got != want {
			t.Errorf("flushZstdMinRows(%q) = %d, want %d", codec, got, want)
		}
	}
}

func TestDescribeAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * time.Second:  "1m30s old",
		0:                 "0s old",
		-33 * time.Minute: "33m0s in the future",
	} {
		if got := describeAge(d); got != want {
			t.Errorf("describeAge(%v) = %q, want %q", d, got, want)
		}
	}
}
