package config

import "fmt"

// MaxHeadSamples is the head's item limit the store runs with
// (storage.max_head_samples).
func (c *Config) MaxHeadSamples() int64 { return c.Storage.MaxHeadSamples }

// MaxHeadBytes is the head's memory limit the store runs with: storage.
// max_head_bytes, lowered to fit half of storage.memory_budget less the
// read caches' share (ReadCacheBytes) when a budget is set (the other half
// is for requests in flight, which Validate checks).
func (c *Config) MaxHeadBytes() int64 {
	n := int64(c.Storage.MaxHeadBytes)
	if b := int64(c.Storage.MemoryBudget); b > 0 {
		chunks, readers := c.ReadCacheBytes()
		if fit := b/2 - chunks - readers; n == 0 || n > fit {
			n = fit
		}
	}
	return n
}

// Read caches' bounds the server runs with: the store's defaults (XOR
// chunks kept of series files, block indexes of open readers), which a
// storage.memory_budget below 1 GiB lowers to an eighth and a sixteenth
// of it, taken from the head's half.
const (
	defaultKeptChunkBytes   = 128 << 20
	defaultReaderIndexBytes = 64 << 20
)

// ReadCacheBytes bounds, in bytes, the store's kept XOR chunks and its
// open readers' block indexes (actastore.Options.MaxChunkCacheBytes and
// MaxReaderBytes): 0, 0 (the store's defaults, 128 MiB and 64 MiB)
// without a storage.memory_budget; with one, those or an eighth and a
// sixteenth of it, whichever is less.
func (c *Config) ReadCacheBytes() (chunks, readers int64) {
	b := int64(c.Storage.MemoryBudget)
	if b <= 0 {
		return 0, 0
	}
	return min(defaultKeptChunkBytes, b/8), min(defaultReaderIndexBytes, b/16)
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
