// Package admission bounds how many requests an endpoint decodes at once.
// Every receiver (remote write, remote read, OTLP HTTP and gRPC) takes a
// slot before reading a body and refuses, retryably, when none frees up in
// time.
package admission

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy: every request slot of the endpoint stayed taken; the sender
// should retry later (429 + Retry-After, gRPC UNAVAILABLE).
var ErrBusy = errors.New("too many concurrent requests")

// Acquire takes one of sem's slots, waiting at most wait (0: not at all).
// A request that finds every slot busy for that long is refused with
// ErrBusy (429 + Retry-After) instead of queueing without bound: a queue
// holds its body's memory and the client's connection, and a sender that is
// told to back off retries with the same data. key names the config key
// that sets the slot count, so the answer says what to raise.
func Acquire(ctx context.Context, sem chan struct{}, wait time.Duration, key string) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if wait <= 0 {
		return fmt.Errorf("%w: all %d request slots are busy (config %s)", ErrBusy, cap(sem), key)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: all %d request slots stayed busy for %s (config %s)", ErrBusy, cap(sem), wait, key)
	case <-ctx.Done():
		return fmt.Errorf("waiting for a request slot: %w", ctx.Err())
	}
}
