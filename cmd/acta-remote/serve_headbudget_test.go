package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/config"
)

// TestServeHeadBudget fills the head past storage.max_head_samples (no size
// flush: block_rows is far larger): writes get 503 + Retry-After naming the key, reads
// keep working, and once the age flush drains the head, writes are accepted
// again without anyone intervening. Nothing acknowledged is lost.
func TestServeHeadBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Listen = freeAddr(t)
	cfg.OTLP.GRPC.Enabled = false
	cfg.Storage.MaxHeadSamples = 20_000
	cfg.Storage.BlockRows = 100_000
	cfg.Storage.MaxHeadAge = 2 * time.Second
	srv := serveInProcess(t, cfg)
	url := "http://" + cfg.Listen
	client := &http.Client{Timeout: 30 * time.Second}
	tp := newBPTemplate()

	var acked []int64
	why := map[string]int{}
	next := int64(0)
	send := func() int {
		next++
		ts := bpTS0 + next*1000
		code, kind := bpPost(client, url, tp.body(ts))
		if code == http.StatusNoContent {
			acked = append(acked, ts)
		}
		if kind != "" {
			why[kind]++
		}
		return code
	}
	// 1000 samples a request: the 22nd finds the head over 20,000.
	var firstShed int
	for i := 1; i <= 40; i++ {
		c := send()
		if c == codeShed {
			firstShed = i
			break
		}
		if c != http.StatusNoContent {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	if firstShed == 0 || why["storage.max_head_samples"] == 0 {
		t.Fatalf("nothing shed by the head budget after 40,000 samples (limit 20,000): %v", why)
	}
	if n, err := bpReadSeries(url, "bp", "5"); err != nil || n != len(acked) {
		t.Errorf("read while the head is over budget: %d samples, %v; want %d", n, err, len(acked))
	}
	start := time.Now()
	for send() != http.StatusNoContent {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("writes still refused 30 s after the head went over budget: %v", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("first shed at request %d (%d samples acknowledged); accepted again after %s (max_head_age 2s); shed %v",
		firstShed, (firstShed-1)*bpSeries, time.Since(start).Round(time.Millisecond), why)
	bpCheck(t, "after the head drained", url, slices.Sorted(slices.Values(acked)))
	srv.stop(t)
}
