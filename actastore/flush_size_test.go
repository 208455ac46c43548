package actastore

import (
	"math"
	"testing"
	"time"
)

// A replay of history fills heads that reach neither BlockRows nor the
// head age: once the head holds more than an eighth of MaxHeadBytes, the
// largest heads are flushed until it holds half of that.
func TestFlushLargestHeads(t *testing.T) {
	dir := t.TempDir()
	// Float heads are XOR-compressed (headbuf.go): these 101,000 samples
	// cost about 180 KB.
	const budget = 1 << 20
	s := openT(t, dir, Options{MaxHeadBytes: budget, MaxHeadAge: time.Hour, Logger: quiet})
	defer s.Close()
	w := want{}
	const n = 100
	for i := range n {
		l := seriesLabels(i)
		smps := make([]Sample, 20*(i+1)) // series i holds 20(i+1) samples
		for j := range smps {
			smps[j] = Sample{T: int64(1000 + 15000*j), V: float64(j)}
		}
		mustAppend(t, s, []SeriesSamples{{Labels: l, Samples: smps}})
		w.add(l, smps...)
	}
	before := s.hd.bytes.Load()
	limit := int64(budget / headFlushShare)
	if before <= limit {
		t.Fatalf("the test holds %d head bytes, not above %d", before, limit)
	}
	s.flushLargest()
	after := s.hd.bytes.Load()
	if after > limit/2 || after == 0 {
		t.Fatalf("head %d bytes after flushing, want in (0, %d]", after, limit/2)
	}
	// The largest went: every head left is smaller than every head flushed.
	maxLeft, minGone := 0, math.MaxInt
	for i := range n {
		ms := seriesOf(s, seriesLabels(i))
		ms.mu.Lock()
		left := ms.floats.head.len()
		ms.mu.Unlock()
		if left > 0 {
			maxLeft = max(maxLeft, left)
		} else {
			minGone = min(minGone, 20*(i+1))
		}
	}
	if maxLeft >= minGone {
		t.Errorf("a head of %d samples stayed while one of %d was flushed", maxLeft, minGone)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	t.Logf("head %d -> %d bytes (limit %d), flushed series of %d samples and more", before, after, limit, minGone)
}

// The flusher does it on its own.
func TestFlushLargestInBackground(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxHeadBytes: 4 << 20, MaxHeadAge: time.Hour, Logger: quiet})
	defer s.Close()
	smps := make([]Sample, 3000)
	for j := range smps {
		smps[j] = Sample{T: int64(1000 + 15000*j), V: float64(j)}
	}
	for i := range 20 {
		mustAppend(t, s, []SeriesSamples{{Labels: seriesLabels(i), Samples: smps}})
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.hd.bytes.Load() > (4<<20)/headFlushShare/2 {
		if time.Now().After(deadline) {
			t.Fatalf("head still %d bytes after 10 s", s.hd.bytes.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
