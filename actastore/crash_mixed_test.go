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
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/rotation"
)

// The mixed crash test is the crash test with every kind in each request:
// floats, native histograms, exemplars and metadata, committed together,
// while flushes, rotation, compaction of sealed files of both kinds and WAL
// truncation run all the time. Every acknowledged item of every kind must
// be back after each kill -9, nothing never sent may appear, and every file
// must validate.

const (
	mixedSeries     = 12
	mixedHistSeries = 4 // series 0..3 also carry histograms
)

func mixedOptions() Options {
	return Options{BlockRows: 16, MaxHeadAge: 5 * time.Millisecond, WALSegmentSize: 16 << 10, MaxOpenFiles: 8,
		Rotation: rotation.Policy{Period: time.Hour}, MaintenanceInterval: 20 * time.Millisecond,
		Compaction: CompactionOptions{BlockRows: 1024}}
}

func mixedLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "crash_mixed", "series", strconv.Itoa(i))
}

// mixedHist is a valid integer histogram derived from r.
func mixedHist(r *rand.Rand, t int64) HistogramSample {
	a, b, zc := uint64(r.IntN(50)), uint64(r.IntN(50)), uint64(r.IntN(5))
	h := &histogram.Histogram{Schema: int32(r.IntN(3)), ZeroThreshold: 1e-128, ZeroCount: zc, Count: a + b + zc,
		Sum: r.Float64() * 100, PositiveSpans: []histogram.Span{{Offset: int32(r.IntN(3)), Length: 2}},
		PositiveBuckets: []int64{int64(a), int64(b) - int64(a)}}
	return HistogramSample{T: t, H: h}
}

// mixedBatch is batch n of a round, a deterministic function of both.
func mixedBatch(round, n int) *Batch {
	r := rand.New(rand.NewPCG(uint64(round)+1000, uint64(n)))
	base := int64(round)*1_000_000_000 + int64(n)*10
	b := &Batch{}
	for i := 0; i < mixedSeries; i++ {
		k := 1 + r.IntN(3)
		smps := make([]Sample, k)
		for j := range smps {
			v := r.NormFloat64()
			if r.IntN(20) == 0 {
				v = staleNaN
			}
			smps[j] = Sample{T: base + int64(j), V: v}
		}
		var hs []HistogramSample
		if i < mixedHistSeries {
			hs = []HistogramSample{mixedHist(r, base+5)}
		}
		ex := []Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprintf("r%dn%ds%d", round, n, i)), Value: float64(n), T: base}}
		b.Add(mixedLabels(i), smps, hs, ex)
	}
	b.AddMetadata(NamedMetadata{Name: "crash_mixed", Metadata: Metadata{Type: model.MetricTypeGauge, Help: fmt.Sprintf("round %d batch %d", round, n)}})
	return b
}

func TestCrashMixedChild(t *testing.T) {
	commitChild(t, mixedOptions(), mixedBatch)
}

// mixedState is what a reopened store returns of every kind.
type mixedState struct {
	floats map[string]map[int64]uint64 // series -> t -> value bits
	hists  map[string]map[int64]string // series -> t -> histfile record
	exs    map[string]map[string]bool  // series -> exemplar trace_id
	help   string
}

func readMixed(t *testing.T, s *Store) mixedState {
	t.Helper()
	st := mixedState{floats: map[string]map[int64]uint64{}, hists: map[string]map[int64]string{}, exs: map[string]map[string]bool{}}
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "crash_mixed"))
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
	es, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "crash_mixed"))
	if err != nil {
		t.Fatal(err)
	}
	for _, se := range es {
		m := map[string]bool{}
		for _, e := range se.Exemplars {
			m[e.Labels.Get("trace_id")] = true
		}
		st.exs[se.Labels.String()] = m
	}
	md, err := s.Metadata(context.Background(), "crash_mixed")
	if err != nil {
		t.Fatal(err)
	}
	if len(md) == 1 {
		st.help = md[0].Help
	}
	return st
}

// checkRound requires of what a reopened store returned (got): everything
// an earlier reopen returned (prev) is still there; every float and
// histogram of an acknowledged batch is back bit for bit; nothing is back
// that neither prev nor batch(n), n <= maxAck+2 (the child may have
// committed a batch or two it did not live to acknowledge), held. It
// returns the help texts of those batches' metadata.
func checkRound(t *testing.T, round int, got, prev mixedState, acked map[int]bool, maxAck int, batch func(n int) *Batch) map[string]bool {
	t.Helper()
	for k, m := range prev.floats {
		for ts, bits := range m {
			if got.floats[k][ts] != bits {
				t.Fatalf("round %d: earlier float %s@%d lost", round, k, ts)
			}
		}
	}
	for k, m := range prev.hists {
		for ts, rec := range m {
			if got.hists[k][ts] != rec {
				t.Fatalf("round %d: earlier histogram %s@%d lost", round, k, ts)
			}
		}
	}
	sentF := map[string]map[int64]uint64{}
	sentH := map[string]map[int64]string{}
	helps := map[string]bool{}
	for n := 0; n <= maxAck+2; n++ {
		b := batch(n)
		for _, md := range b.Metadata {
			helps[md.Help] = true
		}
		for _, d := range b.Series {
			k := d.Labels.String()
			if sentF[k] == nil {
				sentF[k], sentH[k] = map[int64]uint64{}, map[int64]string{}
			}
			for _, smp := range d.Samples {
				sentF[k][smp.T] = math.Float64bits(smp.V)
				if acked[n] && got.floats[k][smp.T] != math.Float64bits(smp.V) {
					bits, present := got.floats[k][smp.T]
					t.Fatalf("round %d: acked float of batch %d %s@%d lost (sent %#x; read back %#x, present %v; %d samples of the series read)",
						round, n, k, smp.T, math.Float64bits(smp.V), bits, present, len(got.floats[k]))
				}
			}
			for _, h := range d.Histograms {
				rec := string(histfile.AppendRecord(nil, h))
				sentH[k][h.T] = rec
				if acked[n] && got.hists[k][h.T] != rec {
					t.Fatalf("round %d: acked histogram of batch %d %s@%d lost", round, n, k, h.T)
				}
			}
		}
	}
	for k, m := range got.floats {
		for ts, bits := range m {
			if prev.floats[k][ts] != bits && sentF[k][ts] != bits {
				t.Fatalf("round %d: float %s@%d was never sent", round, k, ts)
			}
		}
	}
	for k, m := range got.hists {
		for ts, rec := range m {
			if prev.hists[k][ts] != rec && sentH[k][ts] != rec {
				t.Fatalf("round %d: histogram %s@%d was never sent", round, k, ts)
			}
		}
	}
	return helps
}

func TestCrashKill9Mixed(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is slow")
	}
	rounds := crashRounds("ACTASTORE_CRASH_ROUNDS", 20)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	var prev mixedState
	total := 0
	for round := 0; round < rounds; round++ {
		acked := runChild(t, "TestCrashMixedChild", dir, round, time.Duration(50+r.IntN(300))*time.Millisecond)
		maxAck := -1
		for n := range acked {
			maxAck = max(maxAck, n)
		}
		total += len(acked)
		opts := mixedOptions()
		opts.MaxHeadAge, opts.MaintenanceInterval = time.Hour, -1
		opts.Logger = slog.New(slog.DiscardHandler)
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := readMixed(t, s)
		helps := checkRound(t, round, got, prev, acked, maxAck, func(n int) *Batch { return mixedBatch(round, n) })
		if maxAck >= 0 {
			// The newest acknowledged exemplar of every series is kept (the
			// store keeps the newest 32), and the metadata is one a batch of
			// this round carried.
			for i := 0; i < mixedSeries; i++ {
				k := mixedLabels(i).String()
				if id := fmt.Sprintf("r%dn%ds%d", round, maxAck, i); !got.exs[k][id] {
					t.Fatalf("round %d: exemplar %s of the newest acknowledged batch lost: %v", round, id, got.exs[k])
				}
			}
			if !helps[got.help] {
				t.Fatalf("round %d: metadata %q is none this round sent", round, got.help)
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
	// Compaction ran under the kills: sealed files of both kinds were
	// rewritten into single sorted blocks.
	compacted := map[string]int{}
	for _, kd := range []string{seriesDirName, histDirName} {
		filepath.WalkDir(filepath.Join(dir, kd), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if _, start, ok := parseSeriesFileName(d.Name()); ok && start < int64(rounds-2)*1_000_000_000 {
				if ok, _ := rotation.IsCompact(p, 1024); ok {
					compacted[kd]++
				}
			}
			return nil
		})
	}
	if compacted[seriesDirName] == 0 || compacted[histDirName] == 0 {
		t.Errorf("no sealed file compacted under the kills: %v", compacted)
	}
	t.Logf("%d rounds, %d mixed batches acknowledged; sealed files compact: %v", rounds, total, compacted)
}
