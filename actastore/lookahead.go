package actastore

import "sync/atomic"

// lookahead loads the items of a list in order with up to n loads running
// ahead of the reader. A Select over many series whose files are in an
// object store waits on one ranged GET after another; loading the next
// few series meanwhile hides that latency. It holds at most n loaded
// items the reader has not taken yet.
//
// Loads run on at most n worker goroutines that take one item after
// another while any is queued and exit when none is, so an abandoned
// lookahead leaves no goroutine behind. A worker keeps its stack from one
// item to the next: a goroutine per item grew a fresh stack through the
// Acta and zstd decoders for every series (runtime.copystack was ~6 % of a
// 10,000-series read).
type lookahead[T any] struct {
	n       int
	load    func(i int) T
	slots   []chan T // by index; nil until started, and again once taken
	next    int      // the next index to start
	queue   chan lookaheadTask[T]
	running atomic.Int32 // workers
}

type lookaheadTask[T any] struct {
	i  int
	ch chan T
}

func newLookahead[T any](total, n int, load func(int) T) *lookahead[T] {
	// At most n items are started and not taken, so at most n are queued.
	return &lookahead[T]{n: n, load: load, slots: make([]chan T, total), queue: make(chan lookaheadTask[T], n)}
}

// get returns item i (each i once, in increasing order), starting the
// loads up to i+n-1.
func (l *lookahead[T]) get(i int) T {
	for l.next < len(l.slots) && l.next < i+l.n {
		ch := make(chan T, 1) // a load never blocks, even if nobody takes it
		l.slots[l.next] = ch
		l.queue <- lookaheadTask[T]{l.next, ch}
		l.next++
		if l.running.Load() < int32(l.n) {
			l.running.Add(1)
			go l.work()
		}
	}
	v := <-l.slots[i]
	l.slots[i] = nil
	return v
}

// work loads queued items until the queue is empty. A task queued while
// the last worker is leaving is seen by it (it checks the queue after it
// stopped counting itself) or by a worker get starts.
func (l *lookahead[T]) work() {
	for {
		select {
		case t := <-l.queue:
			t.ch <- l.load(t.i)
			continue
		default:
		}
		l.running.Add(-1)
		if len(l.queue) == 0 {
			return
		}
		if l.running.Add(1) > int32(l.n) {
			l.running.Add(-1)
			return
		}
	}
}
