package encoding

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzDecode from valid
// encodings of the edge cases. Run with ACTA_WRITE_SEEDS=1 after changing
// an encoder.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("ACTA_WRITE_SEEDS") == "" {
		t.Skip("set ACTA_WRITE_SEEDS=1 to regenerate")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, seed := range columnSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
