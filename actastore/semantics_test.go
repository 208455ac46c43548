package actastore

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// seriesBytes is the apparent size of every series file under dir.
func seriesBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(filepath.Join(dir, seriesDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// A sample whose timestamp is stored — in the head, being flushed or in a
// file, sealed and compacted or not, before or after a restart — is a
// duplicate when its bits are the same (counted as written, nothing written
// again) and ErrDuplicateSample otherwise, and reads keep the original.
func TestDuplicatesAgainstEverythingStored(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{}
	clk.Set(day0 + 3*hour)
	opts := Options{MaintenanceInterval: -1, Now: clk.Now, Rotation: rotation.Policy{Period: time.Hour},
		Compaction: CompactionOptions{BlockRows: 1024}}
	s := openT(t, dir, opts)
	ls := labels.FromStrings("__name__", "m")
	v := func(i int) float64 {
		if i == 3 {
			return staleNaN
		}
		if i == 4 {
			return math.Copysign(0, -1)
		}
		return float64(i) + 0.5
	}
	var all []Sample
	for i := 0; i < 24; i++ {
		// One sample every 10 minutes: files for 00:00, 01:00, 02:00, 03:00.
		all = append(all, Sample{T: day0 + int64(i)*10*60_000, V: v(i)})
	}
	// Flushed two samples at a time: every hour's file holds three blocks,
	// which compaction rewrites into one for the sealed hours.
	for i := 0; i < len(all); i += 2 {
		mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: all[i : i+2]}})
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Maintain(); err != nil || res.Compacted != 3 {
		t.Fatalf("compaction of the sealed hours: %+v %v", res, err)
	}
	// A newer sample, still in the head.
	head := Sample{T: day0 + 4*hour + 60_000, V: 42}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{head}}})
	all = append(all, head)

	check := func(what string, s *Store) {
		t.Helper()
		before := seriesBytes(t, dir)
		headBefore := s.Stats().HeadSamples
		for i, smp := range all {
			// The exact resend: written, nothing stored again.
			res, err := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{smp}}})
			if err != nil || res.SamplesWritten != 1 || res.SamplesRejected != 0 {
				t.Fatalf("%s: resend of sample %d: %+v %v", what, i, res, err)
			}
			// Another value at a stored timestamp: refused, at any age.
			res, err = s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: smp.T, V: 1e9}}}})
			if err != nil || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrDuplicateSample) {
				t.Fatalf("%s: conflict at sample %d: %+v %v", what, i, res, err)
			}
		}
		if st := s.Stats(); st.HeadSamples != headBefore {
			t.Fatalf("%s: resends reached the head: %+v", what, st)
		}
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
		if after := seriesBytes(t, dir); what != "live" && after != before {
			t.Fatalf("%s: series files grew from %d to %d bytes: something was written twice", what, before, after)
		}
		w := want{}
		w.add(ls, all...)
		checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	}
	check("live", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	check("after a clean restart", s)
	s.abandon()
	s = openT(t, dir, opts)
	defer s.Close()
	check("after a crash", s)
}

// Timestamps beyond MaxFuture or below MinTimestamp are ErrOutOfBounds, and
// never poison a series under an out-of-order window: normal samples keep
// being accepted after a nanosecond timestamp sent as milliseconds.
func TestTimeBounds(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(day0)
	s := openT(t, t.TempDir(), Options{MaintenanceInterval: -1, Now: clk.Now, MaxFuture: 10 * time.Minute,
		OutOfOrderWindow: time.Hour})
	defer s.Close()
	ls := labels.FromStrings("__name__", "m")
	bad := []int64{day0 + 11*60_000, day0 + 24*hour, day0 * 1_000_000, math.MaxInt64, math.MinInt64, -1000}
	for _, ts := range bad {
		res, err := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: ts, V: 1}}}})
		if err != nil || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrOutOfBounds) {
			t.Fatalf("sample at %d: %+v %v", ts, res, err)
		}
		var b Batch
		b.Add(ls, nil, []HistogramSample{mixedHistAt(ts)}, []Exemplar{{Labels: labels.FromStrings("trace_id", "x"), T: ts, Value: 1}})
		r, err := s.Commit(ctx, &b)
		if err != nil || r.Histograms.Rejected != 1 || r.Exemplars.Rejected != 1 || r.Reasons[ReasonOutOfBounds] != 2 {
			t.Fatalf("histogram and exemplar at %d: %+v %v", ts, r, err)
		}
	}
	if !strings.Contains(errOf(t, s, ls, day0+11*60_000).Error(), "more than 10m0s ahead") {
		t.Fatal("the message does not say why")
	}
	// Normal samples of the series, in order and a bit out of order, are
	// still accepted: the refused ones moved nothing.
	for _, ts := range []int64{day0 - 30*60_000, day0, day0 - 5*60_000, day0 + 60_000} {
		res, err := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: ts, V: 2}}}})
		if err != nil || res.SamplesRejected != 0 {
			t.Fatalf("normal sample at %d after the bad ones: %+v %v", ts, res, err)
		}
	}
	// A series none of whose samples can be stored is not created: it is
	// neither listed nor counted against max_series.
	phantom := labels.FromStrings("__name__", "only_future")
	if res, err := s.Append(ctx, []SeriesSamples{{Labels: phantom, Samples: []Sample{{T: day0 + 24*hour, V: 1}}}}); err != nil || res.SamplesRejected != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if got, err := s.Series(ctx, labels.MustNewMatcher(labels.MatchEqual, "__name__", "only_future")); err != nil || len(got) != 0 {
		t.Fatalf("a series with nothing stored was created: %v %v", got, err)
	}
	// The floor is configurable.
	s2 := openT(t, t.TempDir(), Options{MaintenanceInterval: -1, MinTimestamp: math.MinInt64})
	defer s2.Close()
	if res, err := s2.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: -1000, V: 1}}}}); err != nil || res.SamplesWritten != 1 {
		t.Fatalf("negative timestamp with no floor: %+v %v", res, err)
	}
}

func errOf(t *testing.T, s *Store, ls labels.Labels, ts int64) error {
	t.Helper()
	res, _ := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: ts, V: 1}}}})
	if len(res.Errors) == 0 {
		t.Fatalf("no error for a sample at %d", ts)
	}
	return res.Errors[0]
}

// A label set that is a permutation of a valid one is stored under its
// canonical series (and counted); duplicate or empty names stay invalid.
func TestLabelOrder(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaintenanceInterval: -1})
	defer s.Close()
	var b labels.ScratchBuilder
	b.Add("__name__", "up")
	b.Add("Host", "a") // "Host" < "__name__": sent out of order, as some clients do
	unsorted := b.Labels()
	if res, err := s.Append(ctx, []SeriesSamples{{Labels: unsorted, Samples: []Sample{{T: 1000, V: 1}}}}); err != nil || res.SamplesWritten != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	var bb Batch
	bb.Series = append(bb.Series, SeriesData{LabelPairs: pairsOf("__name__", "up", "Host", "a"), Samples: []Sample{{T: 2000, V: 2}}})
	if res, err := s.Commit(ctx, &bb); err != nil || res.Samples.Written != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	w := want{}
	w.add(labels.FromStrings("Host", "a", "__name__", "up"), Sample{1000, 1}, Sample{2000, 2})
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if got := testutil.ToFloat64(s.m.labelsSorted); got != 2 {
		t.Fatalf("sorted label sets counted %v, want 2", got)
	}
	for _, bad := range [][]string{{"__name__", "up", "a", "1", "a", "2"}, {"__name__", "up", "", "1"}} {
		var sb labels.ScratchBuilder
		for i := 0; i < len(bad); i += 2 {
			sb.Add(bad[i], bad[i+1])
		}
		res, err := s.Append(ctx, []SeriesSamples{{Labels: sb.Labels(), Samples: []Sample{{T: 1000, V: 1}}}})
		if err != nil || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrInvalidSeries) {
			t.Fatalf("%v: %+v %v", bad, res, err)
		}
	}
}

// An exemplar whose labels exceed 128 UTF-8 characters is dropped and
// counted, never failing the batch; one of exactly 128 is kept.
func TestExemplarLabelLimit(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaintenanceInterval: -1})
	defer s.Close()
	ls := labels.FromStrings("__name__", "m")
	ok := labels.FromStrings("trace_id", strings.Repeat("é", 128-len("trace_id")))
	long := labels.FromStrings("trace_id", strings.Repeat("x", 200))
	var b Batch
	b.Add(ls, []Sample{{T: 1000, V: 1}}, nil, []Exemplar{{Labels: ok, Value: 1, T: 1000}, {Labels: long, Value: 2, T: 1000}})
	res, err := s.Commit(ctx, &b)
	if err != nil || res.Samples.Written != 1 || res.Exemplars.Written != 1 || res.Exemplars.Rejected != 1 ||
		res.Reasons[ReasonExemplarLabels] != 1 || len(res.Errors) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	es, err := s.SelectExemplars(ctx, 0, 2000, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	if err != nil || len(es) != 1 || len(es[0].Exemplars) != 1 || !labels.Equal(es[0].Exemplars[0].Labels, ok) {
		t.Fatalf("exemplars %+v %v", es, err)
	}
}
