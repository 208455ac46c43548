package actastore

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/internal/testkit"
	"github.com/acta-remote/acta-remote/rotation"
)

// The rotation crash test kills (SIGKILL) a child that ingests with hourly
// rotation while maintenance runs back to back (retention by age and
// unpaced compaction every few ms), so kills land mid-compaction (a .tmp
// left behind), mid-retention and mid-flush. After each kill the parent
// reopens the store and checks: every acknowledged sample inside retention
// is in the series files exactly once with its exact bits, nothing appears
// that was never sent, no temporary file survives Open, every file
// validates.

const (
	rotCrashEnvDir   = "ACTASTORE_ROTCRASH_DIR"
	rotCrashEnvStart = "ACTASTORE_ROTCRASH_START"
	rotCrashSeries   = 8
	rotCrashStep     = int64(60000) // one batch = one minute of data time
	rotCrashKeep     = 3 * time.Hour
)

func rotCrashOptions(clk *fakeClock) Options {
	return Options{
		BlockRows: 16, MaxHeadAge: 5 * time.Millisecond, WALSegmentSize: 16 << 10, MaxOpenFiles: 4,
		Now: clk.Now, Logger: quiet, MaintenanceInterval: 2 * time.Millisecond,
		Rotation:   rotation.Policy{Period: time.Hour},
		Retention:  rotation.Retention{MaxAge: rotCrashKeep},
		Compaction: CompactionOptions{BlockRows: 4096},
	}
}

func rotCrashT(n int) int64 { return day0 + int64(n)*rotCrashStep }

// rotCrashValue is a function of series and timestamp only, so a batch
// resent by a later round is an exact duplicate.
func rotCrashValue(i int, t int64) float64 {
	if (t/rotCrashStep+int64(i))%17 == 0 {
		return staleNaN
	}
	return float64(t%100003)*0.25 + float64(i)
}

// rotCrashBatch is batch n: one sample per series, and every 7th batch an
// out-of-order sample for series 0 two periods back (off the minute grid).
func rotCrashBatch(n int) []SeriesSamples {
	t := rotCrashT(n)
	b := make([]SeriesSamples, rotCrashSeries)
	for i := range b {
		b[i] = SeriesSamples{Labels: rotCrashLabels(i), Samples: []Sample{{T: t, V: rotCrashValue(i, t)}}}
	}
	if n%7 == 0 && n > 200 {
		old := t - 2*hour + 7
		b[0].Samples = append([]Sample{{T: old, V: rotCrashValue(0, old)}}, b[0].Samples...)
	}
	return b
}

func rotCrashLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "rot_crash", "series", strconv.Itoa(i))
}

func TestRotationCrashChild(t *testing.T) {
	dir := os.Getenv(rotCrashEnvDir)
	if dir == "" {
		t.Skip("only run as the rotation crash test's child")
	}
	start, _ := strconv.Atoi(os.Getenv(rotCrashEnvStart))
	clk := &fakeClock{}
	clk.Set(rotCrashT(start))
	opts := rotCrashOptions(clk)
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	s, err := Open(dir, opts)
	if err != nil {
		testkit.Fail(err)
	}
	testkit.Ready()
	testkit.Acknowledge(1, start, func(n int) error { // one appender: batches in order
		res, err := s.Append(ctx, rotCrashBatch(n))
		if err == nil && res.SamplesRejected != 0 {
			err = fmt.Errorf("%d samples rejected: %v", res.SamplesRejected, res.Errors)
		}
		if err == nil {
			clk.Set(rotCrashT(n)) // data time drives head age, rotation and retention
		}
		return err
	})
}

func TestRotationCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is slow")
	}
	rounds := crashRounds("ACTASTORE_ROTCRASH_ROUNDS", 20)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	next, tmps, compacted := 0, 0, 0
	// The batch after each round's last acknowledged one may or may not
	// have reached the WAL before the kill; the next child starts after
	// it (resending it could write its out-of-order sample twice, which
	// the store documents as undetected), so it may be absent, never
	// doubled.
	skipped := map[int]bool{}
	for round := 0; round < rounds; round++ {
		maxAck := runRotCrashChild(t, dir, next, time.Duration(150+r.IntN(600))*time.Millisecond)
		if maxAck < next {
			t.Fatalf("round %d: nothing acknowledged", round)
		}
		tmps += countTmp(t, dir)
		clk := &fakeClock{}
		clk.Set(rotCrashT(maxAck))
		opts := rotCrashOptions(clk)
		opts.MaintenanceInterval = -1
		opts.MaxHeadAge = time.Hour
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		if n := countTmp(t, dir); n != 0 {
			t.Fatalf("round %d: %d temporary files after Open", round, n)
		}
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
		// The child's clock never passed batch maxAck+1: nothing at or
		// after that time minus the retention may be gone.
		keepFrom := rotCrashT(maxAck+1) - rotCrashKeep.Milliseconds()
		for i := 0; i < rotCrashSeries; i++ {
			counts := map[int64]int{}
			ms := s.reg.byRef.get(refOf(t, s, rotCrashLabels(i)))
			for _, st := range ms.floats.files() {
				p := seriesFilePath(dir, ms.ref, st)
				_, _, _, err := readFile(floats, nil, p, math.MinInt64, math.MaxInt64, func(run []Sample) error {
					for _, smp := range run {
						ts := smp.T
						if math.Float64bits(smp.V) != math.Float64bits(rotCrashValue(i, ts)) {
							return fmt.Errorf("series %d sample at %d has value %v, never sent", i, ts, smp.V)
						}
						// On the minute grid, or series 0's out-of-order samples (grid + 7 ms).
						if off := (ts - day0) % rotCrashStep; off != 0 && (i != 0 || off != 7) {
							return fmt.Errorf("series %d timestamp %d never sent", i, ts)
						}
						counts[ts]++
					}
					return nil
				})
				if err != nil {
					t.Fatalf("round %d: %s: %v", round, p, err)
				}
			}
			for n := 0; n <= maxAck; n++ {
				for _, ss := range rotCrashBatch(n)[i : i+1] {
					for _, smp := range ss.Samples {
						if smp.T < keepFrom {
							continue
						}
						if c := counts[smp.T]; c != 1 && !(skipped[n] && c == 0) {
							t.Fatalf("round %d: series %d acked sample at %d (batch %d) stored %d times", round, i, smp.T, n, c)
						}
					}
				}
			}
		}
		st := s.rm
		if round%2 == 0 {
			if _, err := s.Maintain(); err != nil {
				t.Fatal(err)
			}
			compacted += int(testutil.ToFloat64(st.Compactions.WithLabelValues("done")))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			s.abandon()
		}
		validateAll(t, dir)
		skipped[maxAck+1] = true
		next = maxAck + 2
	}
	files := validateAll(t, dir)
	// Retention ran in the children: of the hourly files of the data time
	// covered, only the last few hours' are left.
	t.Logf("%d rounds, %d batches (%d h of data time); %d compaction temp files left by kills (swept at Open); parent passes compacted %d files; %d files left, all valid",
		rounds, next, int64(next)*rotCrashStep/hour, tmps, compacted, files)
	if files > rotCrashSeries*(int(rotCrashKeep/time.Hour)+3) {
		t.Errorf("%d files left: retention did not keep up", files)
	}
}

// countTmp counts compaction temporary files under the series directory.
func countTmp(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, seriesDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, tmpSuffix) {
			n++
		}
		return nil
	})
	return n
}

// runRotCrashChild runs the child from batch start for about d, kills it,
// and returns the last acknowledged batch (start-1 if none was).
func runRotCrashChild(t *testing.T, dir string, start int, d time.Duration) int {
	t.Helper()
	env := []string{rotCrashEnvDir + "=" + dir, rotCrashEnvStart + "=" + strconv.Itoa(start)}
	acks := testkit.RunAndKill(t, "TestRotationCrashChild", env, d)
	if len(acks) == 0 {
		return start - 1
	}
	return acks[len(acks)-1]
}
