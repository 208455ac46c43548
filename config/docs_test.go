package config

import (
	"os"
	"strings"
	"testing"
)

// Every key of the embedded default config is documented in the reference
// table of docs/configuration.md (as a `dotted.key` cell), so docs and
// defaults move together.
func TestDocsDocumentEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Skipf("no docs/configuration.md next to the module: %v", err)
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
		if !isParent && !strings.Contains(string(doc), "| `"+k+"` |") {
			t.Errorf("docs/configuration.md reference lacks `%s`", k)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d keys found in default.yaml", len(seen))
	}
}
