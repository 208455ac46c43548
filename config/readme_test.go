package config

import (
	"os"
	"strings"
	"testing"
)

// Every key of the embedded default config is documented in the README's
// config reference (as a `dotted.key` cell), so docs and defaults move together.
func TestREADMEDocumentsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("no README next to the module: %v", err)
	}
	keys := keyLines(DefaultYAML)
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		isParent := false
		for _, other := range keys {
			if strings.HasPrefix(other, k+".") {
				isParent = true
				break
			}
		}
		if !isParent && !strings.Contains(string(readme), "| `"+k+"` |") {
			t.Errorf("README config reference lacks `%s`", k)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d keys found in default.yaml", len(seen))
	}
}
