package acta

import (
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"testing"
)

func TestLimitsRefuseBeforeAllocating(t *testing.T) {
	const n = 200000
	path := filepath.Join(t.TempDir(), "big.acta")
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = int64(i)
	}
	writeTS(t, path, WriterOptions{RowBlockTarget: n}, ts)

	// A payload above the limit is refused at discovery.
	if _, err := OpenWithLimits(path, Limits{MaxPayloadBytes: 1 << 20}); !errors.Is(err, ErrLimit) {
		t.Fatalf("payload limit: %v", err)
	}
	if _, err := OpenWithLimits(path, Limits{MaxRowsPerBlock: n - 1}); !errors.Is(err, ErrLimit) {
		t.Fatalf("row limit: %v", err)
	}
	if _, err := OpenWithLimits(path, Limits{MaxStreamBytes: n*8 - 1}); !errors.Is(err, ErrLimit) {
		t.Fatalf("stream limit: %v", err)
	}

	// The decoded-bytes limit stops the decode before the arrays exist:
	// allocation stays near the frame read, far below the 3.2 MB decode.
	r, err := OpenWithLimits(path, Limits{MaxDecodedBlockBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	frame := r.Blocks()[0].Bytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = r.ReadBlock(0)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("decoded limit: %v", err)
	}
	if got := int64(after.TotalAlloc - before.TotalAlloc); got > frame+(128<<10) {
		t.Fatalf("allocated %d bytes for a refused decode of a %d-byte frame", got, frame)
	}

	// Per-scan limits accumulate over blocks and report the block.
	path2 := filepath.Join(t.TempDir(), "blocks.acta")
	writeTS(t, path2, WriterOptions{}, []int64{1, 2}, []int64{3, 4}, []int64{5, 6})
	r2, err := OpenWithLimits(path2, Limits{MaxRowsPerScan: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	sc, _ := r2.Scan(ScanOptions{})
	var rows int
	var lastErr error
	for {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			lastErr = err
			continue
		}
		rows += b.Rows
	}
	if rows != 4 || !errors.Is(lastErr, ErrLimit) {
		t.Fatalf("rows %d, err %v", rows, lastErr)
	}
	// ReadBlock never inherits a scan's cumulative state.
	if _, err := r2.ReadBlock(2); err != nil {
		t.Fatal(err)
	}
}
