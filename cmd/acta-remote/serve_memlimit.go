package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/acta-remote/acta-remote/config"
)

// setMemoryLimit gives the Go runtime the memory budget as its soft limit
// (GOMEMLIMIT), so garbage is collected before it can push the process past
// storage.memory_budget instead of being left to double the live heap (the
// default GOGC lets the heap grow to twice what is live). 90 % of the budget
// leaves room for what the runtime does not count (stacks of idle threads,
// fragmentation). An operator's GOMEMLIMIT in the environment wins; without
// a budget nothing changes.
func setMemoryLimit(cfg *config.Config, log *slog.Logger) {
	b := int64(cfg.Storage.MemoryBudget)
	if b <= 0 {
		return
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Info("GOMEMLIMIT from the environment kept", "GOMEMLIMIT", v, "storage.memory_budget", b)
		return
	}
	limit := b / 10 * 9
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set from storage.memory_budget", "bytes", limit)
}
