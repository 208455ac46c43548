package actastore

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// The crash test re-executes the test binary as a child that appends
// batches to a store and prints "ack N" once Append(batch N) returned. The
// parent kills it with SIGKILL at a random moment, reopens the store and
// checks that every acknowledged sample is there exactly once, that nothing
// appears that was never sent, and that every series file passes full
// validation. Flushes are forced to run constantly (tiny blocks, tiny head
// age, tiny WAL segments) so kills land mid-flush and mid-truncation.

const (
	crashEnvDir   = "ACTASTORE_CRASH_DIR"
	crashEnvRound = "ACTASTORE_CRASH_ROUND"
	crashSeries   = 40
)

func crashOptions() Options {
	return Options{BlockRows: 16, MaxHeadAge: 5 * time.Millisecond, WALSegmentSize: 16 << 10, MaxOpenFiles: 8}
}

// crashBatch is batch n of a round: a deterministic function of both, so
// the parent can rebuild what the child sent.
func crashBatch(round, n int) []SeriesSamples {
	r := rand.New(rand.NewPCG(uint64(round), uint64(n)))
	base := int64(round)*1_000_000_000 + int64(n)*10
	batch := make([]SeriesSamples, 0, crashSeries)
	for i := 0; i < crashSeries; i++ {
		k := 1 + r.IntN(3)
		smps := make([]Sample, k)
		for j := range smps {
			v := r.NormFloat64()
			if r.IntN(20) == 0 {
				v = staleNaN
			}
			smps[j] = Sample{T: base + int64(j), V: v}
		}
		batch = append(batch, SeriesSamples{Labels: crashLabels(i), Samples: smps})
	}
	return batch
}

func crashLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "crash_metric", "series", strconv.Itoa(i))
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("only run as the crash test's child")
	}
	round, _ := strconv.Atoi(os.Getenv(crashEnvRound))
	s, err := Open(dir, crashOptions())
	if err != nil {
		testkit.Fail(err)
	}
	testkit.Ready()
	// Two appenders: group commit and interleaving.
	testkit.Acknowledge(2, 0, func(n int) error {
		res, err := s.Append(context.Background(), crashBatch(round, n))
		if err == nil && res.SamplesRejected != 0 {
			err = fmt.Errorf("%d samples rejected: %v", res.SamplesRejected, res.Errors)
		}
		return err
	})
}

type countingHandler struct {
	slog.Handler
	repairs *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "incomplete final frame") || strings.Contains(r.Message, "interrupted while being created") || strings.Contains(r.Message, "torn WAL tail") {
		h.repairs.Add(1)
	}
	return nil
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is slow")
	}
	rounds := crashRounds("ACTASTORE_CRASH_ROUNDS", 24)
	dir := t.TempDir()
	keepOnFailure(t, dir)
	r := rand.New(rand.NewPCG(crashSeed(), 42))
	// baseline: what a previous reopen returned; it must all survive.
	baseline := map[string]map[int64]uint64{}
	var repairs atomic.Int64
	totalAcked := 0
	for round := 0; round < rounds; round++ {
		acked := runCrashChild(t, dir, round, time.Duration(20+r.IntN(250))*time.Millisecond)
		maxAck := -1
		for n := range acked {
			maxAck = max(maxAck, n)
		}
		totalAcked += len(acked)
		if round%3 == 1 {
			// A kill leaves whole write(2)s behind; a power cut can leave
			// half a frame. Fake one: append the first half of a file's last
			// frame again, as an interrupted append of a new block would.
			tearRandomSeriesFile(t, dir, r)
		}

		snapshotKilled(t, dir)
		opts := crashOptions()
		opts.MaxHeadAge = time.Hour
		opts.Logger = slog.New(countingHandler{Handler: slog.DiscardHandler, repairs: &repairs})
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := selectAll(t, s, math.MinInt64, math.MaxInt64) // also checks strictly increasing timestamps
		gotBits := map[string]map[int64]uint64{}
		for k, smps := range got {
			m := map[int64]uint64{}
			for _, smp := range smps {
				m[smp.T] = math.Float64bits(smp.V)
			}
			gotBits[k] = m
		}
		mustHave := func(what string, k string, ts int64, bits uint64) {
			if g, ok := gotBits[k][ts]; !ok || g != bits {
				t.Fatalf("round %d: %s sample %s@%d lost (present %v)", round, what, k, ts, ok)
			}
		}
		for k, m := range baseline {
			for ts, bits := range m {
				mustHave("earlier", k, ts, bits)
			}
		}
		// Everything acknowledged is there; anything new was at least sent.
		sent := map[string]map[int64]uint64{}
		for n := 0; n <= maxAck+2; n++ {
			for _, ss := range crashBatch(round, n) {
				k := ss.Labels.String()
				if sent[k] == nil {
					sent[k] = map[int64]uint64{}
				}
				for _, smp := range ss.Samples {
					sent[k][smp.T] = math.Float64bits(smp.V)
					if acked[n] {
						mustHave(fmt.Sprintf("acked batch %d", n), k, smp.T, math.Float64bits(smp.V))
					}
				}
			}
		}
		for k, m := range gotBits {
			for ts, bits := range m {
				if b, ok := baseline[k][ts]; ok && b == bits {
					continue
				}
				if b, ok := sent[k][ts]; !ok || b != bits {
					t.Fatalf("round %d: sample %s@%d was never sent", round, k, ts)
				}
			}
		}
		baseline = gotBits
		if round%2 == 0 {
			if err := s.Close(); err != nil {
				t.Fatalf("round %d: close: %v", round, err)
			}
		} else {
			s.abandon() // the next child opens after an unclean stop too
		}
		validateAll(t, dir)
	}
	t.Logf("%d rounds, %d batches acknowledged, %d torn files/WAL tails repaired", rounds, totalAcked, repairs.Load())
}

// runCrashChild runs one child for about d, kills it and returns the set
// of acknowledged batch numbers.
func runCrashChild(t *testing.T, dir string, round int, d time.Duration) map[int]bool {
	return runChild(t, "TestCrashChild", dir, round, d)
}

// crashRounds is the number of rounds a crash test runs: def, or what the
// environment variable env says (a longer soak, or a quick look).
func crashRounds(env string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil {
		return n
	}
	return def
}

// crashSeed seeds a crash test's kill timings: 42, or
// $ACTASTORE_CRASH_SEED, so that a soak's loops each kill at other moments.
func crashSeed() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("ACTASTORE_CRASH_SEED"), 10, 64); err == nil {
		return n
	}
	return 42
}

// keepOnFailure: with $ACTASTORE_CRASH_KEEP set, a failed crash test
// copies its data directory there, as the check found it and as the last
// kill left it (snapshotKilled, before the reopen repaired anything), for
// a post-mortem of a failure a soak found once in many runs.
func keepOnFailure(t *testing.T, dir string) {
	keep := os.Getenv("ACTASTORE_CRASH_KEEP")
	if keep == "" {
		return
	}
	t.Cleanup(func() { // runs before TempDir's removal
		if !t.Failed() {
			return
		}
		to := filepath.Join(keep, fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()))
		copyDir(t, dir, to)
		if _, err := os.Stat(dir + ".killed"); err == nil {
			copyDir(t, dir+".killed", to+".killed")
		}
		t.Logf("data directory kept in %s, as the last kill left it in %s.killed", to, to)
	})
}

// snapshotKilled copies dir to dir.killed when $ACTASTORE_CRASH_KEEP is set.
func snapshotKilled(t *testing.T, dir string) {
	if os.Getenv("ACTASTORE_CRASH_KEEP") == "" {
		return
	}
	if err := os.RemoveAll(dir + ".killed"); err != nil {
		t.Fatal(err)
	}
	copyDir(t, dir, dir+".killed")
}

// runChild runs the child test child on dir for round for about d, kills
// it and returns the set of acknowledged batch numbers.
func runChild(t *testing.T, child, dir string, round int, d time.Duration) map[int]bool {
	t.Helper()
	acked := map[int]bool{}
	env := []string{crashEnvDir + "=" + dir, crashEnvRound + "=" + strconv.Itoa(round)}
	for _, n := range testkit.RunAndKill(t, child, env, d) {
		acked[n] = true
	}
	return acked
}

// commitChild is the body of a crash test's child process: it opens the
// store at the parent's directory with opts, then commits batch(round, n)
// for n = 0, 1, ..., acknowledging each to the parent once Commit returns
// it all stored (testkit.Acknowledge), until the parent kills it.
func commitChild(t *testing.T, opts Options, batch func(round, n int) *Batch) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("only run as a crash test's child")
	}
	round, _ := strconv.Atoi(os.Getenv(crashEnvRound))
	s, err := Open(dir, opts)
	if err != nil {
		testkit.Fail(err)
	}
	testkit.Ready()
	testkit.Acknowledge(2, 0, func(n int) error {
		res, err := s.Commit(context.Background(), batch(round, n))
		if err == nil && res.Rejected() != 0 {
			err = fmt.Errorf("rejected: %+v", res)
		}
		return err
	})
}

// tearRandomSeriesFile leaves a random series file with half of a new
// final frame, as a power cut during a block append would: it appends a
// real block (of samples never sent) and cuts the file in its middle.
func tearRandomSeriesFile(t *testing.T, dir string, r *rand.Rand) {
	t.Helper()
	// Only a series with samples in the WAL can be mid-append (the WAL
	// keeps them until the file is synced), so tear one of those.
	inWAL := map[uint64]bool{}
	_, err := wal.Replay(filepath.Join(dir, walDirName), func(_ int, p []byte) error {
		if p[0] == recSamples {
			_, err := decodeSamplesRecord(floats, p, nil, func(ref uint64, _ []Sample) error { inWAL[ref] = true; return nil })
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(filepath.Join(dir, seriesDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if ref, _, ok := parseSeriesFileName(d.Name()); ok && inWAL[ref] {
				files = append(files, p)
			}
		}
		return nil
	})
	if len(files) == 0 {
		return
	}
	p := files[r.IntN(len(files))]
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := acta.OpenWriter(p, acta.WriterOptions{})
	if err != nil {
		t.Logf("skip tearing %s: %v", p, err)
		return
	}
	ts := []int64{math.MaxInt64 - 10, math.MaxInt64 - 5}
	b := &acta.Batch{Schema: w.Schema(), Rows: 2, Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: []float64{1, 2}}}}
	if err := w.Append(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fi2, _ := os.Stat(p)
	if err := os.Truncate(p, fi.Size()+(fi2.Size()-fi.Size())/2); err != nil {
		t.Fatal(err)
	}
}
