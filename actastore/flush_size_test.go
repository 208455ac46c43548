package actastore

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// Many series each holding what a live scrape leaves before MaxHeadAge are
// not a replay: past a sixteenth of MaxHeadBytes, but under
// headFlushSeriesBytes a series, nothing is flushed (at 1,000,000 series
// the flat threshold had the flusher writing blocks of ten samples). Past
// half of MaxHeadBytes, or of MaxHeadSamples, the largest heads go anyway,
// before writes are refused.
func TestFlushLargestSpareManySmallHeads(t *testing.T) {
	const series, rows = 800, 20
	smps := make([]Sample, rows)
	for j := range smps {
		smps[j] = Sample{T: int64(1000 + 15000*j), V: float64(j % 3)}
	}
	w := want{}
	for i := range series {
		w.add(seriesLabels(i), smps...)
	}
	fill := func(t *testing.T, opts Options) *Store {
		opts.MaxHeadAge, opts.Logger = time.Hour, quiet
		s := openT(t, t.TempDir(), opts)
		for i := range series {
			mustAppend(t, s, []SeriesSamples{{Labels: seriesLabels(i), Samples: smps}})
		}
		return s
	}
	// flushed waits until the background flusher (the only caller of
	// flushLargest here) brought the head to done: under the trigger, with
	// some series flushed (each run flushes down to half the trigger, and
	// the fill may go on after one). It checks that the counter holds one
	// flush per series emptied and that every sample is still read.
	flushed := func(t *testing.T, s *Store, done func() bool) {
		// The counter follows each flush: wait for it as well.
		counted := func() bool {
			return testutil.ToFloat64(s.m.sizeFlushes) == float64(series-s.hd.series.Load())
		}
		deadline := time.Now().Add(10 * time.Second)
		for !done() || !counted() {
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !done() {
			t.Fatalf("head still %d bytes, %d samples after 10 s", s.hd.bytes.Load(), s.hd.samples.Load())
		}
		gone := series - s.hd.series.Load()
		if gone == 0 || gone == series {
			t.Errorf("%d of %d series flushed, want some", gone, series)
		}
		if got := testutil.ToFloat64(s.m.sizeFlushes); got != float64(gone) {
			t.Errorf("%v size flushes counted, %d series flushed", got, gone)
		}
		checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	}

	t.Run("spared", func(t *testing.T) {
		s := fill(t, Options{MaxHeadBytes: 1 << 20})
		defer s.Close()
		before := s.hd.bytes.Load()
		if flat := int64(1<<20) / headFlushShare; before <= flat || before >= series*headFlushSeriesBytes {
			t.Fatalf("head %d bytes: want above the flat threshold %d and under %d", before, flat, series*headFlushSeriesBytes)
		}
		if got, want := s.headFlushBytes(), int64(series*headFlushSeriesBytes); got != want {
			t.Fatalf("threshold %d bytes, want %d (%d series × %d)", got, want, series, headFlushSeriesBytes)
		}
		s.flushLargest()
		if after := s.hd.bytes.Load(); after != before {
			t.Errorf("head %d bytes after flushLargest, want %d untouched", after, before)
		}
		if got := testutil.ToFloat64(s.m.sizeFlushes); got != 0 {
			t.Errorf("%v size flushes, want 0", got)
		}
		if got := s.hd.series.Load(); got != series {
			t.Errorf("%d series with a head, want %d", got, series)
		}
	})

	t.Run("past half of MaxHeadBytes", func(t *testing.T) {
		// The heads (about 160 bytes each, 128,000 in all) pass half of it
		// and stay under it, where writes would be refused.
		const maxBytes = 160 << 10
		s := fill(t, Options{MaxHeadBytes: maxBytes})
		defer s.Close()
		if got := s.headFlushBytes(); s.hd.series.Load() == series && got != maxBytes/2 {
			t.Fatalf("threshold %d bytes, want half of MaxHeadBytes, %d", got, maxBytes/2)
		}
		flushed(t, s, func() bool { return s.hd.bytes.Load() <= maxBytes/2 && s.hd.series.Load() < series })
	})

	t.Run("past half of MaxHeadSamples", func(t *testing.T) {
		// 16,000 samples: past half of it, under it; the bytes are far
		// under their threshold (800 × 512).
		const maxSamples = 20_000
		s := fill(t, Options{MaxHeadBytes: 1 << 20, MaxHeadSamples: maxSamples})
		defer s.Close()
		flushed(t, s, func() bool { return s.hd.samples.Load() <= maxSamples/2 && s.hd.series.Load() < series })
		if b := s.hd.bytes.Load(); b > series*headFlushSeriesBytes {
			t.Errorf("head %d bytes", b)
		}
	})
}
