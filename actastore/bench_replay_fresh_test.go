package actastore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkReplayFreshProcess: Open after kill -9 with 2,000 series ×
// 2,880 samples in the head, timed in a fresh process, as a restart runs:
// every page the replay fills is new to the process. On a VM a page
// fault can cost microseconds, which BenchmarkReplayFullHead, opening
// again and again in one process that reuses its heap, does not see.
// acta-bench's kill -9 load (two senders, one sample a series an entry);
// the WAL only, and a checkpoint two thirds in with the rest after it
// (the most WAL a checkpoint leaves: checkpointGrowth). Reports the Open
// (ms) and the child's resident memory after it (MB).
func BenchmarkReplayFreshProcess(b *testing.B) {
	b.Run("wal-only", func(b *testing.B) { benchReplayFresh(b, -1) })
	b.Run("checkpoint-at-2/3", func(b *testing.B) { benchReplayFresh(b, replayBenchSteps*2/3) })
}

const replayFreshEnvDir = "ACTASTORE_REPLAY_FRESH_DIR"

func replayFreshOptions() Options {
	return Options{BlockRows: 1 << 20, MaxHeadAge: 24 * time.Hour, MaintenanceInterval: -1,
		MaxHeadBytes: 16 << 30, WALCheckpointBytes: -1, Logger: quiet}
}

func benchReplayFresh(b *testing.B, ckptAt int) {
	src := b.TempDir()
	s := openT(b, src, replayFreshOptions())
	fillReplayTwoSenders(b, s, func(step int) {
		if step == ckptAt {
			if err := s.checkpoint(); err != nil {
				b.Fatal(err)
			}
		}
	})
	s.abandon()
	var openNs, rssKB float64
	for range b.N {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "data")
		if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
			b.Fatalf("copy the data dir: %v: %s", err, out)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestReplayFreshChild$")
		// The server's runtime.gogc default.
		cmd.Env = append(os.Environ(), replayFreshEnvDir+"="+dir, "GOGC=50")
		b.StartTimer()
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("child: %v: %s", err, out)
		}
		var ns, kb, n int64
		line := out[bytes.Index(out, []byte("replay-fresh ")):]
		if _, err := fmt.Sscanf(string(line), "replay-fresh %d %d %d", &ns, &kb, &n); err != nil || n != replayBenchSeries*replayBenchSteps {
			b.Fatalf("child reported %q (%v), want %d head samples", line, err, replayBenchSeries*replayBenchSteps)
		}
		openNs += float64(ns)
		rssKB += float64(kb)
	}
	b.ReportMetric(openNs/float64(b.N)/1e6, "ms/open")
	b.ReportMetric(rssKB/float64(b.N)/1024, "MB-RSS")
}

// TestReplayFreshChild is BenchmarkReplayFreshProcess's child: it opens
// the data dir, prints how long Open took (ns), its resident memory then
// (KiB) and the head samples, and stops as after kill -9.
func TestReplayFreshChild(t *testing.T) {
	dir := os.Getenv(replayFreshEnvDir)
	if dir == "" {
		t.Skip("only run as BenchmarkReplayFreshProcess's child")
	}
	start := time.Now()
	s, err := Open(dir, replayFreshOptions())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	var kb int64
	if i := bytes.Index(status, []byte("VmRSS:")); err == nil && i >= 0 {
		fmt.Sscanf(string(status[i+len("VmRSS:"):]), "%d", &kb)
	}
	fmt.Printf("replay-fresh %d %d %d\n", took.Nanoseconds(), kb, s.Stats().HeadSamples)
	s.abandon()
}
