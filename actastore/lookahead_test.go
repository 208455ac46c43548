package actastore

import (
	"sync/atomic"
	"testing"
	"time"
)

// Items come back in order, each loaded once, with at most n loads ahead
// of the reader.
func TestLookahead(t *testing.T) {
	var running, most atomic.Int32
	var loads atomic.Int32
	la := newLookahead(50, 4, func(i int) int {
		loads.Add(1)
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		return i * i
	})
	for i := 0; i < 50; i++ {
		if got := la.get(i); got != i*i {
			t.Fatalf("item %d: %d", i, got)
		}
		if started := la.next; started > i+4 {
			t.Fatalf("%d loads started with the reader at %d", started, i)
		}
	}
	if loads.Load() != 50 || most.Load() > 4 || most.Load() < 2 {
		t.Fatalf("%d loads, at most %d at once", loads.Load(), most.Load())
	}
}

// A lookahead its reader abandons half-way leaves no worker behind: the
// workers exit once the queue is empty, so a SeriesSet that is neither
// drained nor closed costs nothing after its loads finish.
func TestLookaheadAbandonedLeavesNoWorker(t *testing.T) {
	var loads atomic.Int32
	la := newLookahead(100, 4, func(i int) int { loads.Add(1); return i })
	for i := range 10 {
		if got := la.get(i); got != i {
			t.Fatalf("item %d: %d", i, got)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for la.running.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still running after the reader left", la.running.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// Started: the 10 taken and the 3 loaded ahead of the last get.
	if n := loads.Load(); n != 13 {
		t.Fatalf("%d loads, want 13", n)
	}
}
