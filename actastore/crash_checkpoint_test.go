package actastore

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The checkpoint crash test is the mixed crash test (every kind in each
// request) with heads that keep their samples for a while and a WAL that
// is checkpointed every few KiB, so kills land while checkpoints are
// written, renamed, replace each other and are dropped after flushes.

func checkpointCrashOptions() Options {
	o := mixedOptions()
	o.BlockRows, o.MaxHeadAge, o.WALCheckpointBytes = 1<<16, 400*time.Millisecond, 8<<10
	return o
}

func TestCrashCheckpointChild(t *testing.T) {
	if os.Getenv(crashEnvDir) != "" {
		checkpointTick = 5 * time.Millisecond
	}
	commitChild(t, checkpointCrashOptions(), mixedBatch)
}

func TestCrashKill9Checkpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is slow")
	}
	rounds := crashRounds("ACTASTORE_CRASH_ROUNDS", 24)
	dir := t.TempDir()
	keepOnFailure(t, dir)
	r := rand.New(rand.NewPCG(crashSeed(), 11))
	var prev mixedState
	total, withCkpt := 0, 0
	for round := 0; round < rounds; round++ {
		acked := runChild(t, "TestCrashCheckpointChild", dir, round, time.Duration(50+r.IntN(400))*time.Millisecond)
		maxAck := -1
		for n := range acked {
			maxAck = max(maxAck, n)
		}
		total += len(acked)
		if c, _, _ := listCheckpoints(filepath.Join(dir, walDirName)); len(c) > 0 {
			withCkpt++
		}
		snapshotKilled(t, dir)
		opts := checkpointCrashOptions()
		opts.MaxHeadAge, opts.MaintenanceInterval, opts.WALCheckpointBytes = time.Hour, -1, -1
		opts.Logger = slog.New(slog.DiscardHandler)
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := readMixed(t, s)
		checkRound(t, round, got, prev, acked, maxAck, func(n int) *Batch { return mixedBatch(round, n) })
		if maxAck >= 0 {
			for i := 0; i < mixedSeries; i++ {
				k := mixedLabels(i).String()
				if id := fmt.Sprintf("r%dn%ds%d", round, maxAck, i); !got.exs[k][id] {
					t.Fatalf("round %d: exemplar %s of the newest acknowledged batch lost: %v", round, id, got.exs[k])
				}
			}
		}
		prev = got
		if round%2 == 0 {
			if err := s.Close(); err != nil {
				t.Fatalf("round %d: close: %v", round, err)
			}
		} else {
			s.abandon()
		}
		validateEvery(t, dir)
	}
	if withCkpt < rounds/3 {
		t.Errorf("only %d of %d kills left a checkpoint behind", withCkpt, rounds)
	}
	t.Logf("%d rounds, %d mixed batches acknowledged, %d kills with a checkpoint", rounds, total, withCkpt)
}
