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

// setGCPercent sets the garbage collector's target from runtime.gogc
// (Prometheus's runtime.gogc, default 75 there; VictoriaMetrics runs at 30):
// with Go's 100 the heap may hold as much garbage as live data, and a store's
// live data is mostly its series and heads. An operator's GOGC in the
// environment wins.
func setGCPercent(cfg *config.Config, log *slog.Logger) {
	if v := os.Getenv("GOGC"); v != "" {
		log.Info("GOGC from the environment kept", "GOGC", v, "runtime.gogc", cfg.Runtime.GOGC)
		return
	}
	if cfg.Runtime.GOGC > 0 {
		debug.SetGCPercent(cfg.Runtime.GOGC)
	}
}
