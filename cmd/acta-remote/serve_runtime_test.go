package main

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/acta-remote/acta-remote/config"
)

// runtime.gogc becomes the GC target; a GOGC in the environment wins.
func TestSetGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	cfg := config.Default()
	if cfg.Runtime.GOGC != 50 {
		t.Fatalf("default runtime.gogc %d, want 50", cfg.Runtime.GOGC)
	}
	t.Setenv("GOGC", "")
	cfg.Runtime.GOGC = 37
	setGCPercent(cfg, slog.New(slog.DiscardHandler))
	if got := debug.SetGCPercent(100); got != 37 {
		t.Fatalf("GC percent %d after runtime.gogc 37", got)
	}
	t.Setenv("GOGC", "80")
	setGCPercent(cfg, slog.New(slog.DiscardHandler))
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC=80 in the environment, want it left (100)", got)
	}
}
