package config

import (
	"fmt"
	"sort"
	"strings"
)

// removedKeys maps each key that no longer exists to what to write
// instead. A config naming one fails to load with that advice rather than
// the bare "unknown key" strict decoding would give.
var removedKeys = map[string]string{
	"otlp.convert_delta_to_cumulative": "otlp.delta_temporality: reject | convert | native " +
		"(convert_delta_to_cumulative: true is delta_temporality: convert; false is reject, the default)",
}

// checkRemoved reports every removed key in data, with its line and
// successor.
func checkRemoved(data []byte) error {
	var msgs []string
	lines := keyLines(data)
	nums := make([]int, 0, len(lines))
	for n := range lines {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	seen := map[string]bool{}
	for _, n := range nums {
		key := lines[n]
		if next, ok := removedKeys[key]; ok && !seen[key] {
			seen[key] = true
			msgs = append(msgs, fmt.Sprintf("%s: removed; use %s (line %d)", key, next, n))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
}
