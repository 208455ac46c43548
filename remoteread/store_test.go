package remoteread

import (
	"testing"

	"github.com/acta-remote/acta-remote/actastore"
)

// openStore opens a real actastore.Store in a temp dir, with a small block
// size so the round trips cross head, flushed blocks and the WAL.
func openStore(t testing.TB) store { return openStoreOpts(t, actastore.Options{BlockRows: 64}) }

func openStoreOpts(t testing.TB, opts actastore.Options) store {
	t.Helper()
	st, err := actastore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}
