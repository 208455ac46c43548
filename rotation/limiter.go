package rotation

import (
	"sync"
	"time"
)

// Limiter paces background I/O to a byte rate, so compaction shares the
// disk and CPU with ingestion instead of competing with it in bursts. It
// is a simple debt counter: Take(n) sleeps until n bytes fit the rate.
type Limiter struct {
	rate  float64 // bytes per second; <= 0: unlimited
	stop  <-chan struct{}
	mu    sync.Mutex
	next  time.Time // when the debt taken so far is paid
	sleep func(time.Duration, <-chan struct{})
}

// NewLimiter paces to bytesPerSec (<= 0: unlimited). Sleeps end early when
// stop closes (the store is closing).
func NewLimiter(bytesPerSec int64, stop <-chan struct{}) *Limiter {
	return &Limiter{rate: float64(bytesPerSec), stop: stop, sleep: sleepOrStop}
}

// Take accounts n bytes, sleeping as long as the rate requires.
func (l *Limiter) Take(n int64) {
	if l == nil || l.rate <= 0 || n <= 0 {
		return
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	wait := l.next.Sub(now)
	l.mu.Unlock()
	if wait > 0 {
		l.sleep(wait, l.stop)
	}
}

func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}
