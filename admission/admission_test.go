package admission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAcquire(t *testing.T) {
	sem := make(chan struct{}, 1)
	if err := Acquire(context.Background(), sem, 0, "x.max_concurrent"); err != nil {
		t.Fatalf("free slot: %v", err)
	}
	// Full, no wait: refused at once, naming the key.
	err := Acquire(context.Background(), sem, 0, "x.max_concurrent")
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "all 1 request slots are busy (config x.max_concurrent)") {
		t.Fatalf("full, no wait: %v", err)
	}
	// Full with a wait: refused after it.
	start := time.Now()
	err = Acquire(context.Background(), sem, 20*time.Millisecond, "x.max_concurrent")
	if !errors.Is(err, ErrBusy) || time.Since(start) < 20*time.Millisecond || !strings.Contains(err.Error(), "stayed busy for 20ms") {
		t.Fatalf("full, 20ms wait: %v after %s", err, time.Since(start))
	}
	// A cancelled request stops waiting with its context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Acquire(ctx, sem, time.Minute, "x.max_concurrent"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) {
		t.Fatalf("cancelled: %v", err)
	}
	// A slot freed while waiting is taken.
	go func() { time.Sleep(10 * time.Millisecond); <-sem }()
	if err := Acquire(context.Background(), sem, time.Minute, "x.max_concurrent"); err != nil {
		t.Fatalf("slot freed while waiting: %v", err)
	}
}
