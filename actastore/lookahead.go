package actastore

// lookahead loads the items of a list in order with up to n loads running
// ahead of the reader. A Select over many series whose files are in an
// object store waits on one ranged GET after another; loading the next
// few series meanwhile hides that latency. It holds at most n loaded
// items the reader has not taken yet.
type lookahead[T any] struct {
	n     int
	load  func(i int) T
	slots []chan T // by index; nil until started, and again once taken
	next  int      // the next index to start
}

func newLookahead[T any](total, n int, load func(int) T) *lookahead[T] {
	return &lookahead[T]{n: n, load: load, slots: make([]chan T, total)}
}

// get returns item i (each i once, in increasing order), starting the
// loads up to i+n-1.
func (l *lookahead[T]) get(i int) T {
	for l.next < len(l.slots) && l.next < i+l.n {
		ch := make(chan T, 1) // a load never blocks, even if nobody takes it
		l.slots[l.next] = ch
		go func(j int) { ch <- l.load(j) }(l.next)
		l.next++
	}
	v := <-l.slots[i]
	l.slots[i] = nil
	return v
}
