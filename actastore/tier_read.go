package actastore

import (
	"context"
)

// Reads of files that exist only in the bucket go through the reader
// cache like local ones (readers.go: tier.openRemote opens them), block by
// block; this file counts what a Select fetched and lets a caller read
// local files only.

// readStats is what one Select read from the object store.
type readStats struct {
	bucketBytes  int64 // frame bytes of the blocks fetched
	bucketBlocks int64
	// localOnly skips files that exist only in the bucket (WithLocalOnly).
	localOnly bool
}

func (st *readStats) fetched(n int64) {
	if st != nil {
		st.bucketBytes += n
		st.bucketBlocks++
	}
}

type localOnlyKey struct{}

// WithLocalOnly returns a context whose Selects read the head and the
// local files only, skipping files whose local copy is gone: what a query
// instance asks a writer for (the rest it reads from the bucket itself).
func WithLocalOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, localOnlyKey{}, true)
}

func localOnly(ctx context.Context) bool {
	v, _ := ctx.Value(localOnlyKey{}).(bool)
	return v
}

// observeQuery records a finished Select's bucket reads.
func (t *tier) observeQuery(st *readStats) {
	if t == nil {
		return
	}
	t.m.queryBytes.Observe(float64(st.bucketBytes))
	t.m.queryBlocks.Add(float64(st.bucketBlocks))
}
