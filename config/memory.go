package config

import "fmt"

// MaxHeadSamples is the head's item limit the store runs with
// (storage.max_head_samples).
func (c *Config) MaxHeadSamples() int64 { return c.Storage.MaxHeadSamples }

// MaxHeadBytes is the head's memory limit the store runs with: storage.
// max_head_bytes, lowered to half of storage.memory_budget when a budget is
// set (the other half is for requests in flight, which Validate checks).
func (c *Config) MaxHeadBytes() int64 {
	n := int64(c.Storage.MaxHeadBytes)
	if b := int64(c.Storage.MemoryBudget); b > 0 {
		if fit := b / 2; n == 0 || n > fit {
			n = fit
		}
	}
	return n
}

// requestBytes is the worst case of request buffers in flight: each
// endpoint's concurrent requests holding a full body and a full decoded
// copy.
func (c *Config) requestBytes() (int64, string) {
	w, r, o := c.RemoteWrite, c.RemoteRead, c.OTLP
	rw := int64(w.MaxConcurrent) * int64(w.MaxBodyBytes+w.MaxDecodedBytes)
	rr := int64(r.MaxConcurrent) * int64(r.MaxBodyBytes+r.MaxDecodedBytes)
	ot := int64(o.MaxConcurrent) * int64(o.MaxBodyBytes+o.MaxDecompressedBytes)
	return rw + rr + ot, fmt.Sprintf("remote_write %d x (%d + %d) + remote_read %d x (%d + %d) + otlp %d x (%d + %d)",
		w.MaxConcurrent, w.MaxBodyBytes, w.MaxDecodedBytes, r.MaxConcurrent, r.MaxBodyBytes, r.MaxDecodedBytes,
		o.MaxConcurrent, o.MaxBodyBytes, o.MaxDecompressedBytes)
}
