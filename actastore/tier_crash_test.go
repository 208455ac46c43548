package actastore

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/rotation"
)

// The tier crash test is the crash test with a minute of data time per
// batch, hourly files and tiers of 3 h and 12 h, so that kills land in
// tier merges, compactions choosing value types, compactions of idle
// newest files and the flush rewrites of those when a value does not fit.
// After each kill -9: every acknowledged sample is back, nothing never
// sent appears, every file validates, no timestamp is in two files, every
// sample is below its next file's start, and no merge marker or temporary
// file is left once the store is open.

const (
	tierCrashSeries = 10
	tierCrashHists  = 2 // series 0 and 1 also carry histograms
)

func tierCrashOptions() Options {
	return Options{BlockRows: 16, MaxHeadAge: 5 * time.Millisecond, WALSegmentSize: 16 << 10, MaxOpenFiles: 8,
		Rotation: rotation.Policy{Period: time.Hour}, MaintenanceInterval: 10 * time.Millisecond,
		Compaction: CompactionOptions{BlockRows: 1024, Tiers: rotation.Tiers{3 * time.Hour, 12 * time.Hour}}}
}

func tierCrashLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "crash_tier", "series", strconv.Itoa(i))
}

// tierCrashBatch is batch n of a round. Series 0-3 are integer counters,
// 4-5 two-decimal gauges, 6-9 intermittent (written in 10 of every 40
// batches, so their newest file goes idle and is compacted) with now and
// then a stale marker, a fraction or noise that the type of their
// compacted files cannot hold.
func tierCrashBatch(round, n int) *Batch {
	r := rand.New(rand.NewPCG(uint64(round)+77, uint64(n)))
	ts := int64(round)*1_000_000_000 + int64(n)*60_000
	b := &Batch{}
	for i := range tierCrashSeries {
		var v float64
		switch {
		case i < 4:
			v = float64(n*100 + r.IntN(50))
		case i < 6:
			v = float64(r.IntN(10000)) / 100
		default:
			if n%40 >= 10 {
				continue
			}
			v = float64(n)
			switch r.IntN(12) {
			case 0:
				v = staleNaN
			case 1:
				v += 0.5
			case 2:
				v = r.NormFloat64()
			}
		}
		var hs []HistogramSample
		if i < tierCrashHists {
			hs = []HistogramSample{mixedHist(r, ts+1)}
		}
		b.Add(tierCrashLabels(i), []Sample{{T: ts, V: v}}, hs, nil)
	}
	return b
}

func TestCrashTierChild(t *testing.T) {
	opts := tierCrashOptions()
	opts.Logger = slog.New(slog.DiscardHandler)
	commitChild(t, opts, tierCrashBatch)
}

// checkTierFiles checks the file rules for both kinds (checkFiles does
// floats with values; histograms are checked for the same sequence rules).
func checkTierFiles(t *testing.T, dir string) (typed, merged int) {
	t.Helper()
	checkFiles(t, dir, false)
	root := filepath.Join(dir, histDirName)
	perRef := map[uint64][]int64{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if ref, st, ok := parseSeriesFileName(d.Name()); ok {
				perRef[ref] = append(perRef[ref], st)
			}
		}
		return nil
	})
	for ref, starts := range perRef {
		slices.Sort(starts)
		seen := map[int64]bool{}
		for i, st := range starts {
			p := histFilePath(dir, ref, st)
			_, _, _, err := readFile(histograms, nil, p, math.MinInt64, math.MaxInt64, func(run []HistogramSample) error {
				for _, h := range run {
					if seen[h.T] {
						t.Errorf("%s: histogram at %d is in two files", p, h.T)
					}
					seen[h.T] = true
					if i < len(starts)-1 && h.T >= starts[i+1] {
						t.Errorf("%s: histogram at %d at or after the next file's start", p, h.T)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	filepath.WalkDir(filepath.Join(dir, seriesDirName), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if r, err := acta.Open(p); err == nil {
			if c := r.Schema().Columns[1].Type.ID; c == acta.TypeInt64 || c == acta.TypeDecimal64 {
				typed++
			}
			for _, b := range r.Blocks() {
				if b.Max-b.Min >= 2*hour {
					merged++ // spans more than a rotation period's file
					break
				}
			}
			r.Close()
		}
		return nil
	})
	return typed, merged
}

func TestCrashKill9Tiers(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is slow")
	}
	rounds := crashRounds("ACTASTORE_CRASH_ROUNDS", 20)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(16, 16))
	var prev mixedState
	total := 0
	var finished atomic.Int64
	for round := range rounds {
		acked := runChild(t, "TestCrashTierChild", dir, round, time.Duration(100+r.IntN(400))*time.Millisecond)
		maxAck := -1
		for n := range acked {
			maxAck = max(maxAck, n)
		}
		total += len(acked)
		opts := tierCrashOptions()
		opts.MaxHeadAge, opts.MaintenanceInterval = time.Hour, -1
		opts.Logger = slog.New(markerHandler{Handler: slog.DiscardHandler, n: &finished})
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := readMixedNamed(t, s, "crash_tier")
		checkRound(t, round, got, prev, acked, maxAck, func(n int) *Batch { return tierCrashBatch(round, n) })
		prev = got
		if round%2 == 0 {
			if err := s.Close(); err != nil {
				t.Fatalf("round %d: close: %v", round, err)
			}
		} else {
			s.abandon()
		}
		validateEvery(t, dir)
		typed, merged := checkTierFiles(t, dir)
		if t.Failed() {
			t.Fatalf("round %d: file rules broken", round)
		}
		if round == rounds-1 {
			if typed == 0 || merged == 0 {
				t.Errorf("no typed (%d) or merged (%d) files after %d rounds under kills", typed, merged, rounds)
			}
			t.Logf("%d rounds, %d batches acknowledged; %d float files typed, %d spanning merged periods; %d merges a kill interrupted after their commit, finished at open",
				rounds, total, typed, merged, finished.Load())
		}
	}
}

// markerHandler counts the merges Open finished.
type markerHandler struct {
	slog.Handler
	n *atomic.Int64
}

func (h markerHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h markerHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "finished a tier merge interrupted by a crash" {
		h.n.Add(1)
	}
	return nil
}

// readMixedNamed is readMixed's floats and histograms for another name.
func readMixedNamed(t *testing.T, s *Store, name string) mixedState {
	t.Helper()
	st := mixedState{floats: map[string]map[int64]uint64{}, hists: map[string]map[int64]string{}}
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	for set.Next() {
		k := set.At().Labels().String()
		st.floats[k], st.hists[k] = map[int64]uint64{}, map[int64]string{}
		it := set.At().Iterator()
		prev := int64(math.MinInt64)
		for it.Next() {
			ts, v := it.At()
			if ts <= prev {
				t.Fatalf("%s: timestamps not increasing at %d", k, ts)
			}
			prev = ts
			st.floats[k][ts] = math.Float64bits(v)
		}
		hit := set.At().(HistogramSeries).HistogramIterator()
		for hit.Next() {
			h := hit.At()
			st.hists[k][h.T] = string(histfile.AppendRecord(nil, h))
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return st
}
