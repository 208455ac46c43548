package actastore

import (
	"fmt"
	"sync/atomic"
)

// headState is the accounting of the head — what every series' tracks
// buffer between the WAL and their files — and the queue of series whose
// head is full. Its counters are atomics; the tracks themselves are
// guarded by their series' mu.
type headState struct {
	series  atomic.Int64 // series with a non-empty head of any kind
	samples atomic.Int64 // unflushed items of every kind
	bytes   atomic.Int64 // what they cost in memory (kind.size)

	maxSamples int64 // Options.MaxHeadSamples; 0: unlimited
	maxBytes   int64 // Options.MaxHeadBytes; 0: unlimited

	// oldestSince is the arrival (unix ns) of the oldest head sample as of
	// the flusher's last scan; 0 when the head was empty.
	oldestSince atomic.Int64

	flushCh    chan *memSeries // series whose head reached BlockRows
	flushes    atomic.Int64
	flushedSmp atomic.Int64
}

// admit refuses a commit while the head holds more than its budget:
// flushing has fallen behind, and the sender should retry later.
func (h *headState) admit() error {
	if h.maxSamples > 0 {
		if n := h.samples.Load(); n > h.maxSamples {
			return fmt.Errorf("%w: %d samples wait in the head for flushing, limit %d", ErrOverloaded, n, h.maxSamples)
		}
	}
	if h.maxBytes > 0 {
		if n := h.bytes.Load(); n > h.maxBytes {
			return fmt.Errorf("%w: the head holds %d bytes waiting for flushing, limit %d", ErrOverloaded, n, h.maxBytes)
		}
	}
	return nil
}

// added accounts items that went into heads.
func (h *headState) added(n, bytes int64) {
	h.samples.Add(n)
	h.bytes.Add(bytes)
}

// queue asks the flusher for a size-triggered flush of ms. When the queue
// is full the flusher's periodic scan finds the series by size anyway.
func (h *headState) queue(ms *memSeries) {
	select {
	case h.flushCh <- ms:
	default:
	}
}

// hasHeadLocked reports whether the series has a non-empty head of any
// kind (mu held).
func (ms *memSeries) hasHeadLocked() bool {
	if ms.floats.head.len() > 0 {
		return true
	}
	h := ms.hists()
	return h != nil && h.head.len() > 0
}

// headSinceLocked is when the series' oldest head sample of any kind
// arrived (unix ns), 0 without one (mu held).
func (ms *memSeries) headSinceLocked() int64 {
	since := int64(0)
	if ms.floats.head.len() > 0 {
		since = ms.floats.headSince
	}
	if h := ms.hists(); h != nil && h.head.len() > 0 && (since == 0 || h.headSince < since) {
		since = h.headSince
	}
	return since
}
