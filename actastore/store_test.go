package actastore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

var ctx = context.Background()

// staleNaN is Prometheus's stale marker; its exact bits must survive.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.MaxHeadAge == 0 {
		opts.MaxHeadAge = time.Hour // tests flush explicitly unless they say otherwise
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return s
}

func seriesLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("metric_%d", i%7), "instance", fmt.Sprintf("host-%d", i), "job", "j"+fmt.Sprint(i%3))
}

// want is the expected content of a store: labels string → samples.
type want map[string][]Sample

func (w want) add(lset labels.Labels, smps ...Sample) {
	w[lset.String()] = append(w[lset.String()], smps...)
}

func mustAppend(t testing.TB, s *Store, batch []SeriesSamples) AppendResult {
	t.Helper()
	res, err := s.Append(ctx, batch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if res.SamplesRejected != 0 {
		t.Fatalf("append rejected %d: %v", res.SamplesRejected, res.Errors)
	}
	return res
}

// selectAll reads everything with the given matchers.
func selectAll(t testing.TB, s *Store, mint, maxt int64, ms ...*labels.Matcher) want {
	t.Helper()
	if len(ms) == 0 {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}
	}
	got := want{}
	ss := s.Select(ctx, mint, maxt, ms...)
	var prev labels.Labels
	for ss.Next() {
		ser := ss.At()
		if prev.Len() > 0 && labels.Compare(prev, ser.Labels()) >= 0 {
			t.Fatalf("series out of order: %s then %s", prev, ser.Labels())
		}
		prev = ser.Labels()
		it := ser.Iterator()
		var smps []Sample
		for it.Next() {
			ts, v := it.At()
			if n := len(smps); n > 0 && smps[n-1].T >= ts {
				t.Fatalf("%s: timestamps not increasing: %d then %d", ser.Labels(), smps[n-1].T, ts)
			}
			smps = append(smps, Sample{ts, v})
		}
		got[ser.Labels().String()] = smps
	}
	if err := ss.Err(); err != nil {
		t.Fatalf("select: %v", err)
	}
	return got
}

func equalBits(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].T != b[i].T || math.Float64bits(a[i].V) != math.Float64bits(b[i].V) {
			return false
		}
	}
	return true
}

func checkWant(t testing.TB, got, exp want) {
	t.Helper()
	if len(got) != len(exp) {
		t.Fatalf("got %d series, want %d", len(got), len(exp))
	}
	for k, w := range exp {
		if !equalBits(got[k], w) {
			g := got[k]
			t.Fatalf("series %s: got %d samples, want %d (first got %v, want %v)", k, len(g), len(w), head3(g), head3(w))
		}
	}
}

func head3(s []Sample) []Sample { return s[:min(3, len(s))] }

func randValue(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return staleNaN
	case 1:
		return math.Float64frombits(0x7ff8000000000001) // another NaN payload
	case 2:
		return math.Copysign(0, -1)
	case 3:
		return float64(r.IntN(100))
	default:
		return r.NormFloat64() * 1e6
	}
}

// fill appends rounds of one sample per series for n series, 15 s apart.
func fill(t testing.TB, s *Store, w want, r *rand.Rand, n, rounds int, t0 int64) {
	for k := 0; k < rounds; k++ {
		batch := make([]SeriesSamples, n)
		for i := range batch {
			lset := seriesLabels(i)
			smp := Sample{T: t0 + int64(k)*15000, V: randValue(r)}
			batch[i] = SeriesSamples{Labels: lset, Samples: []Sample{smp}}
			w.add(lset, smp)
		}
		mustAppend(t, s, batch)
	}
}

func TestAppendSelectRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{BlockRows: 16})
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 2))
	w := want{}
	fill(t, s, w, r, 3000, 10, 1_000_000)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	fill(t, s, w, r, 3000, 5, 1_000_000+10*15000) // these stay in the head
	st := s.Stats()
	if st.Series != 3000 || st.HeadSamples != 15000 {
		t.Fatalf("stats %+v", st)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)

	// A time range is inclusive at both ends.
	got := selectAll(t, s, 1_000_000+15000, 1_000_000+3*15000, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-5"))
	exp := w[seriesLabels(5).String()][1:4]
	if len(got) != 1 || !equalBits(got[seriesLabels(5).String()], exp) {
		t.Fatalf("range select: %v", got)
	}
}

func TestBlocksSplitAndMerge(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{BlockRows: 100})
	defer s.Close()
	lset := seriesLabels(1)
	w := want{}
	var smps []Sample
	for i := 0; i < 1000; i++ {
		smps = append(smps, Sample{T: int64(i) * 1000, V: float64(i)})
	}
	// In order, with a flush in between; then out-of-order samples that
	// interleave with flushed blocks.
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: smps[:600:600]}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: smps[600:]}})
	ooo := []Sample{{T: 500, V: -1}, {T: 150500, V: -2}, {T: 999500, V: -3}}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: ooo}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	all := append(append([]Sample(nil), smps...), ooo...)
	sortSamples(all)
	w.add(lset, all...)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	validateAll(t, dir)
}

func sortSamples(s []Sample) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].T < s[j-1].T; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// validateAll runs full Acta validation on every series file under dir.
func validateAll(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dir, seriesDirName), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if err := validateFile(p); err != nil {
			t.Errorf("validate %s: %v", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDuplicatesAndOutOfOrder(t *testing.T) {
	s := openT(t, t.TempDir(), Options{OutOfOrderWindow: time.Minute})
	defer s.Close()
	lset := seriesLabels(1)
	app := func(smps ...Sample) AppendResult {
		t.Helper()
		res, err := s.Append(ctx, []SeriesSamples{{Labels: lset, Samples: smps}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := app(Sample{100_000, 1}, Sample{200_000, staleNaN}); res.SamplesWritten != 2 {
		t.Fatalf("%+v", res)
	}
	// Exact duplicates (also of a stale NaN) are dropped silently.
	if res := app(Sample{100_000, 1}, Sample{200_000, staleNaN}); res.SamplesWritten != 2 || res.SamplesRejected != 0 {
		t.Fatalf("duplicates: %+v", res)
	}
	// Same timestamp, other bits: rejected; other NaN payload counts as other.
	res := app(Sample{100_000, 2}, Sample{200_000, math.NaN()}, Sample{300_000, 3})
	if res.SamplesRejected != 2 || res.SamplesWritten != 1 || !errors.Is(res.Errors[0], ErrDuplicateSample) {
		t.Fatalf("conflicts: %+v", res)
	}
	// Within the window (60 s behind 300 s): accepted; beyond: ErrOutOfOrder.
	res = app(Sample{250_000, 2.5}, Sample{230_000, 9})
	if res.SamplesWritten != 1 || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrOutOfOrder) {
		t.Fatalf("window: %+v", res)
	}
	// Duplicate inside one batch.
	res = app(Sample{400_000, 4}, Sample{400_000, 4}, Sample{400_000, 5})
	if res.SamplesWritten != 2 || res.SamplesRejected != 1 {
		t.Fatalf("in-batch: %+v", res)
	}
	// Against the last flushed sample.
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	res = app(Sample{400_000, 4}, Sample{400_000, 6})
	if res.SamplesWritten != 1 || res.SamplesRejected != 1 {
		t.Fatalf("after flush: %+v", res)
	}
	w := want{}
	w.add(lset, Sample{100_000, 1}, Sample{200_000, staleNaN}, Sample{250_000, 2.5}, Sample{300_000, 3}, Sample{400_000, 4})
	checkWant(t, selectAll(t, s, 0, math.MaxInt64), w)
}

func TestInvalidSeries(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxSeries: 2})
	defer s.Close()
	bad := []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("job", "x"),
		labels.FromStrings("__name__", "m", "a", ""),
		labels.FromStrings("__name__", "m", "a", "\xff"),
	}
	for _, l := range bad {
		res, err := s.Append(ctx, []SeriesSamples{{Labels: l, Samples: []Sample{{1, 1}}}})
		if err != nil || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrInvalidSeries) {
			t.Errorf("%s: %+v %v", l, res, err)
		}
	}
	var batch []SeriesSamples
	for i := 0; i < 3; i++ {
		batch = append(batch, SeriesSamples{Labels: seriesLabels(i), Samples: []Sample{{1, 1}, {2, 2}}})
	}
	res, err := s.Append(ctx, batch)
	if err != nil || res.SamplesWritten != 4 || res.SamplesRejected != 2 || !errors.Is(res.Errors[0], ErrTooManySeries) {
		t.Fatalf("limit: %+v %v", res, err)
	}
}

func TestQueryLimits(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxQuerySeries: 5, MaxQuerySamples: 20})
	defer s.Close()
	w := want{}
	fill(t, s, w, rand.New(rand.NewPCG(1, 1)), 10, 3, 0)
	ss := s.Select(ctx, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	if ss.Next() || !errors.Is(ss.Err(), ErrQueryLimit) {
		t.Fatalf("series limit: %v", ss.Err())
	}
	ss = s.Select(ctx, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j0")) // 4 series × 3
	n := 0
	for ss.Next() {
		n++
	}
	if ss.Err() != nil || n != 4 {
		t.Fatalf("under limits: %d %v", n, ss.Err())
	}
	s.opts.MaxQuerySamples = 10
	ss = s.Select(ctx, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j0"))
	for ss.Next() {
	}
	if !errors.Is(ss.Err(), ErrQueryLimit) {
		t.Fatalf("sample limit: %v", ss.Err())
	}
}

func TestRestart(t *testing.T) {
	for _, mode := range []string{"wal only", "files only", "both"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{BlockRows: 8})
			w := want{}
			r := rand.New(rand.NewPCG(3, 4))
			switch mode {
			case "wal only":
				fill(t, s, w, r, 500, 5, 0)
				s.abandon()
			case "files only":
				fill(t, s, w, r, 500, 20, 0)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			case "both":
				fill(t, s, w, r, 500, 20, 0)
				// Flush without truncating the WAL: the samples are in both.
				for _, ms := range s.reg.live() {
					if err := s.flushSeries(ms); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.writers.syncDirty(); err != nil {
					t.Fatal(err)
				}
				fill(t, s, w, r, 500, 3, 20*15000)
				s.abandon()
			}
			s2 := openT(t, dir, Options{BlockRows: 8})
			checkWant(t, selectAll(t, s2, math.MinInt64, math.MaxInt64), w)
			// Appending after the restart continues the same series.
			fill(t, s2, w, r, 500, 2, 100*15000)
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			s3 := openT(t, dir, Options{BlockRows: 8})
			defer s3.Close()
			checkWant(t, selectAll(t, s3, math.MinInt64, math.MaxInt64), w)
			if st := s3.Stats(); st.Series != 500 || st.HeadSamples != 0 {
				t.Fatalf("stats after clean restart: %+v", st)
			}
			validateAll(t, dir)
		})
	}
}

func TestAgeFlushAndWALTruncation(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{MaxHeadAge: 50 * time.Millisecond, WALSegmentSize: 4096})
	defer s.Close()
	w := want{}
	fill(t, s, w, rand.New(rand.NewPCG(5, 6)), 200, 10, 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if st.HeadSamples == 0 && st.WALSegments <= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("head not flushed / WAL not truncated: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

func TestOpenFilesBounded(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{MaxOpenFiles: 10})
	defer s.Close()
	w := want{}
	r := rand.New(rand.NewPCG(7, 8))
	for k := 0; k < 3; k++ {
		fill(t, s, w, r, 100, 2, int64(k)*30000)
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
		if n := s.Stats().OpenWriters; n > 10 {
			t.Fatalf("%d writers open", n)
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

func TestLabelQueries(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	fill(t, s, want{}, rand.New(rand.NewPCG(1, 1)), 9, 1, 0)
	names, err := s.LabelNames(ctx)
	if err != nil || fmt.Sprint(names) != "[__name__ instance job]" {
		t.Fatalf("names %v %v", names, err)
	}
	vals, err := s.LabelValues(ctx, "job", labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_1"))
	if err != nil || fmt.Sprint(vals) != "[j1 j2]" { // series 1 and 8
		t.Fatalf("values %v %v", vals, err)
	}
	ser, err := s.Series(ctx, labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-[12]"))
	if err != nil || len(ser) != 2 || ser[0].Get("instance") != "host-1" {
		t.Fatalf("series %v %v", ser, err)
	}
}

func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, dir, Options{})
	s2.Close()
	if _, err := s2.Append(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestOverloadedAndSyncInterval(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxHeadSamples: 10, WALSync: SyncInterval, WALSyncInterval: 5 * time.Millisecond})
	defer s.Close()
	w := want{}
	fill(t, s, w, rand.New(rand.NewPCG(1, 1)), 11, 1, 0)
	_, err := s.Append(ctx, []SeriesSamples{{Labels: seriesLabels(1), Samples: []Sample{{T: 99, V: 1}}}})
	if !errors.Is(err, ErrOverloaded) {
		t.Fatalf("want ErrOverloaded, got %v", err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	fill(t, s, w, rand.New(rand.NewPCG(1, 1)), 5, 1, 15000)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

func TestCatalogCompactsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	w := want{}
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < catalogCompactSegments+3; i++ {
		s := openT(t, dir, Options{})
		fill(t, s, w, r, 5+i, 1, int64(i)*15000) // one new series per restart
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	segs, _ := os.ReadDir(filepath.Join(dir, catalogDirName))
	if len(segs) > catalogCompactSegments+1 {
		t.Fatalf("%d catalog segments", len(segs))
	}
	s := openT(t, dir, Options{})
	defer s.Close()
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

// After a clean restart the newest flushed sample and the newest timestamp
// are known again (flush state), so a resent sample is a duplicate, a
// changed one a conflict (also one only the file holds), and the
// out-of-order window still applies to timestamps no file holds.
func TestFlushStateAcrossCleanRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{OutOfOrderWindow: time.Minute}
	s := openT(t, dir, opts)
	lset := seriesLabels(3)
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 100_000, V: 1}, {T: 200_000, V: staleNaN}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	res, err := s.Append(ctx, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 200_000, V: staleNaN}, {T: 200_000, V: 5},
		{T: 100_000, V: 7}, {T: 100_000, V: 1}, {T: 100_500, V: 7}}}})
	if err != nil || res.SamplesWritten != 2 || res.SamplesRejected != 3 || len(res.Errors) != 3 ||
		!errors.Is(res.Errors[0], ErrDuplicateSample) || !errors.Is(res.Errors[1], ErrDuplicateSample) || !errors.Is(res.Errors[2], ErrOutOfOrder) {
		t.Fatalf("%+v %v", res, err)
	}
	if st := s.Stats(); st.HeadSamples != 0 {
		t.Fatalf("duplicate went to the head: %+v", st)
	}
}

// After a crash, a series with samples in the WAL learns its newest flushed
// sample from its file: a resent copy is a duplicate, not a second row.
func TestNewestFlushedAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	lset := seriesLabels(4)
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 3000, V: 3}}}})
	s.abandon()
	s = openT(t, dir, Options{})
	defer s.Close()
	res, err := s.Append(ctx, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 2000, V: 2}, {T: 2000, V: 9}}}})
	if err != nil || res.SamplesWritten != 1 || res.SamplesRejected != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	w := want{}
	w.add(lset, Sample{1000, 1}, Sample{2000, 2}, Sample{3000, 3})
	checkWant(t, selectAll(t, s, 0, 10_000), w)
	if st := s.Stats(); st.HeadSamples != 1 {
		t.Fatalf("head %+v", st)
	}
}
