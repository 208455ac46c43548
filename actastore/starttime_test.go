package actastore

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
)

// stRead is what a Select gives of one series: samples, histograms and
// their start timestamps.
type stRead struct {
	floats []Sample
	hists  []HistogramSample
	fsts   []StartTime
	hsts   []StartTime
}

func selectStarts(t testing.TB, s *Store, mint, maxt int64) map[string]stRead {
	t.Helper()
	out := map[string]stRead{}
	set := s.Select(ctx, mint, maxt, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for set.Next() {
		ser := set.At()
		var r stRead
		it := ser.Iterator()
		for it.Next() {
			ts, v := it.At()
			r.floats = append(r.floats, Sample{T: ts, V: v})
		}
		hit := ser.(HistogramSeries).HistogramIterator()
		for hit.Next() {
			r.hists = append(r.hists, hit.At())
		}
		r.fsts, r.hsts = ser.(StartTimeSeries).StartTimes()
		out[ser.Labels().Get("__name__")] = r
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stCase is the data of the start-timestamp tests: a counter with start
// timestamps (constant, then a reset, then none for a while), a counter of
// a sender without them, and a histogram counter with them.
type stCase struct {
	counter, plain []Sample
	counterSts     []StartTime
	hist           []HistogramSample
	histSts        []StartTime
}

func stData(from int64, n int) stCase {
	var c stCase
	st := from - 10_000
	for i := range n {
		ts := from + int64(i)*step15
		if i == n/2 {
			st = ts - 5_000 // a reset between two scrapes
		}
		v := float64(i * 3)
		if i >= n/2 {
			v = float64(i - n/2)
		}
		c.counter = append(c.counter, Sample{T: ts, V: v})
		if i < n*3/4 { // the last quarter comes without start timestamps
			c.counterSts = append(c.counterSts, StartTime{T: ts, ST: st})
		}
		c.plain = append(c.plain, Sample{T: ts, V: float64(i)})
		h := &histogram.Histogram{Schema: 1, Count: uint64(i + 1), Sum: float64(i) * 1.5, ZeroThreshold: 0.001, ZeroCount: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{int64(i)}}
		c.hist = append(c.hist, HistogramSample{T: ts, H: h})
		c.histSts = append(c.histSts, StartTime{T: ts, ST: from - 20_000})
	}
	return c
}

var stCounter, stPlain, stHist = labels.FromStrings("__name__", "st_counter"), labels.FromStrings("__name__", "st_plain"),
	labels.FromStrings("__name__", "st_hist")

// commitST commits c's samples from lo to hi, each a request of its own
// (as a scrape-paced sender sends them).
func commitST(t testing.TB, s *Store, clk *fakeClock, c stCase, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		clk.Set(c.counter[i].T)
		var b Batch
		b.Series = append(b.Series,
			SeriesData{Labels: stCounter, Samples: c.counter[i : i+1], SampleStarts: startsAt(c.counterSts, c.counter[i].T)},
			SeriesData{Labels: stPlain, Samples: c.plain[i : i+1]},
			SeriesData{Labels: stHist, Histograms: c.hist[i : i+1], HistogramStarts: startsAt(c.histSts, c.hist[i].T)})
		res, err := s.Commit(ctx, &b)
		if err != nil || res.Rejected() != 0 {
			t.Fatalf("commit %d: %+v %v", i, res, err)
		}
	}
}

func startsAt(sts []StartTime, ts int64) []StartTime {
	for i, st := range sts {
		if st.T == ts {
			return sts[i : i+1]
		}
	}
	return nil
}

// checkST compares what Select returns with c's first n samples, bit for
// bit, start timestamps included.
func checkST(t testing.TB, what string, s *Store, c stCase, n int) {
	t.Helper()
	got := selectStarts(t, s, math.MinInt64, math.MaxInt64)
	upTo := func(sts []StartTime) []StartTime {
		var out []StartTime
		for _, st := range sts {
			if st.T <= c.counter[n-1].T {
				out = append(out, st)
			}
		}
		return out
	}
	if g := got["st_counter"]; !equalBits(g.floats, c.counter[:n]) || !slices.Equal(g.fsts, upTo(c.counterSts)) || len(g.hists) != 0 || len(g.hsts) != 0 {
		t.Fatalf("%s: counter %v starts %v, want %v starts %v", what, head3(g.floats), g.fsts, head3(c.counter[:n]), upTo(c.counterSts))
	}
	if g := got["st_plain"]; !equalBits(g.floats, c.plain[:n]) || g.fsts != nil || g.hsts != nil {
		t.Fatalf("%s: plain %v starts %v %v", what, head3(g.floats), g.fsts, g.hsts)
	}
	g := got["st_hist"]
	if len(g.hists) != n || !slices.Equal(g.hsts, upTo(c.histSts)) || g.fsts != nil {
		t.Fatalf("%s: %d histograms, starts %v, want %d, %v", what, len(g.hists), g.hsts, n, upTo(c.histSts))
	}
	for i := range g.hists {
		if string(histfile.AppendRecord(nil, g.hists[i])) != string(histfile.AppendRecord(nil, c.hist[i])) {
			t.Fatalf("%s: histogram %d differs", what, i)
		}
	}
}

// fileHasStarts reports whether a series file has the start-timestamp
// column, and its schema ID.
func fileHasStarts(t testing.TB, path string) (bool, uint64) {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	i := r.Schema().Index(colStart)
	if i >= 0 {
		c := r.Schema().Columns[i]
		if !c.Nullable || c.Type != acta.Timestamp(acta.Millisecond) || c.ID != colStartID {
			t.Fatalf("%s: start column %+v", path, c)
		}
	}
	return i >= 0, r.Schema().ID
}

// Start timestamps of floats and histograms are kept through the head, the
// WAL (replay after a crash), flushes, a restart, compaction with its value
// type, and a deletion rewrite; a sender without them gets files without
// the column.
func TestStartTimesStored(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = 24 * time.Hour
	s := openT(t, dir, opts)
	c := stData(day0+hour, 80)
	commitST(t, s, clk, c, 0, 40)
	checkST(t, "head", s, c, 40)
	s.abandon() // a crash: the head comes back from the WAL
	s = openT(t, dir, opts)
	checkST(t, "replayed", s, c, 40)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	checkST(t, "flushed", s, c, 40)
	cRef, pRef, hRef := refOf(t, s, stCounter), refOf(t, s, stPlain), refOf(t, s, stHist)
	for _, p := range []string{seriesFilePath(dir, cRef, day0), histFilePath(dir, hRef, day0)} {
		if has, _ := fileHasStarts(t, p); !has {
			t.Fatalf("%s: no start-timestamp column", p)
		}
	}
	if has, _ := fileHasStarts(t, seriesFilePath(dir, pRef, day0)); has {
		t.Fatal("a series without start timestamps got the column")
	}
	commitST(t, s, clk, c, 40, 80) // the last quarter without start timestamps: null rows
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	checkST(t, "restarted", s, c, 80)

	// The next day seals the files; maintenance compacts them (value
	// type int64 for the integer counter) with the column.
	clk.Set(day0 + day + 3*hour)
	maintainUntilIdle(t, s)
	path := seriesFilePath(dir, cRef, day0)
	if has, id := fileHasStarts(t, path); !has || id != sealedSchemaID {
		t.Fatalf("compacted counter file: column %v, schema %d", has, id)
	}
	if _, typ, _ := fileLayout(t, path); typ != "int64" {
		t.Fatalf("compacted counter value type %s", typ)
	}
	if has, id := fileHasStarts(t, seriesFilePath(dir, pRef, day0)); has || id != sealedSchemaID {
		t.Fatalf("compacted plain file: column %v, schema %d", has, id)
	}
	if has, _ := fileHasStarts(t, histFilePath(dir, hRef, day0)); !has {
		t.Fatal("compacted histogram file lost its column")
	}
	checkST(t, "compacted", s, c, 80)
	validateAll(t, dir)
	if err := validateFile(histFilePath(dir, hRef, day0)); err != nil {
		t.Fatal(err)
	}

	// A deletion rewrites the file without the range, keeping the other
	// start timestamps.
	del := c.counter[10].T
	if _, err := s.DeleteSeries(ctx, del, del, labels.MustNewMatcher(labels.MatchEqual, "__name__", "st_counter")); err != nil {
		t.Fatal(err)
	}
	c.counter = slices.Delete(c.counter, 10, 11)
	c.counterSts = slices.Delete(c.counterSts, 10, 11)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	g := selectStarts(t, s, math.MinInt64, math.MaxInt64)["st_counter"]
	if !equalBits(g.floats, c.counter) || !slices.Equal(g.fsts, c.counterSts) {
		t.Fatalf("after deletion: %d samples, starts %v; want %d, %v", len(g.floats), g.fsts, len(c.counter), c.counterSts)
	}
	validateAll(t, dir)
}

// A file written without the column (its sender sent none so far) is
// rewritten with it when start timestamps arrive: the newest-file rewrite
// a value its type does not hold triggers too.
func TestStartTimesArriveLater(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := rotOptions(clk)
	opts.Rotation.Period = 24 * time.Hour
	s := openT(t, dir, opts)
	defer s.Close()
	c := stData(day0+hour, 40)
	c.counter = c.counter[:20]
	for i := range 20 {
		clk.Set(c.counter[i].T)
		var sts []StartTime
		if i >= 10 {
			sts = startsAt(c.counterSts, c.counter[i].T)
		}
		var hsts []StartTime
		if i >= 10 {
			hsts = startsAt(c.histSts, c.hist[i].T)
		}
		b := Batch{Series: []SeriesData{{Labels: stCounter, Samples: c.counter[i : i+1], SampleStarts: sts},
			{Labels: stHist, Histograms: c.hist[i : i+1], HistogramStarts: hsts}}}
		if _, err := s.Commit(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if i == 9 || i == 19 {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
		}
		if i == 9 {
			for _, p := range []string{seriesFilePath(dir, refOf(t, s, stCounter), day0), histFilePath(dir, refOf(t, s, stHist), day0)} {
				if has, _ := fileHasStarts(t, p); has {
					t.Fatalf("%s: column before any start timestamp", p)
				}
			}
		}
	}
	for _, p := range []string{seriesFilePath(dir, refOf(t, s, stCounter), day0), histFilePath(dir, refOf(t, s, stHist), day0)} {
		if has, _ := fileHasStarts(t, p); !has {
			t.Fatalf("%s: no column after start timestamps arrived", p)
		}
		if err := validateFile(p); err != nil {
			t.Fatal(err)
		}
	}
	got := selectStarts(t, s, math.MinInt64, math.MaxInt64)
	if g := got["st_counter"]; !equalBits(g.floats, c.counter) || !slices.Equal(g.fsts, c.counterSts[10:20]) {
		t.Fatalf("got %d samples, starts %v", len(g.floats), g.fsts)
	}
	if g := got["st_hist"]; len(g.hists) != 20 || !slices.Equal(g.hsts, c.histSts[10:20]) {
		t.Fatalf("got %d histograms, starts %v", len(g.hists), g.hsts)
	}
	for i, h := range got["st_hist"].hists {
		if string(histfile.AppendRecord(nil, h)) != string(histfile.AppendRecord(nil, c.hist[i])) {
			t.Fatalf("histogram %d differs", i)
		}
	}
}

// Start timestamps Prometheus's appender ignores are dropped, their
// samples kept, and counted by reason; 0 means none.
func TestStartTimesBadInput(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(day0 + hour)
	opts := rotOptions(clk)
	opts.MaxFuture = 10 * time.Minute
	s := openT(t, t.TempDir(), opts)
	defer s.Close()
	t0 := day0 + hour
	smps := []Sample{{T: t0, V: 1}, {T: t0 + 1000, V: 2}, {T: t0 + 2000, V: 3}, {T: t0 + 3000, V: 4}, {T: t0 + 4000, V: 5}, {T: t0 + 5000, V: 6}}
	sts := []StartTime{
		{T: t0, ST: t0 + 1},               // after its sample
		{T: t0 + 1000, ST: t0 + 1000},     // at its sample
		{T: t0 + 2000, ST: -5},            // negative: below min_timestamp 0
		{T: t0 + 3000, ST: 0},             // none given
		{T: t0 + 4000, ST: t0 + 20*60000}, // far in the future, after its sample
		{T: t0 + 5000, ST: t0 - 60000},    // fine
		{T: t0 + 9000, ST: t0},            // of no sample sent
	}
	b := Batch{Series: []SeriesData{{Labels: stCounter, Samples: smps, SampleStarts: sts}}}
	res, err := s.Commit(ctx, &b)
	if err != nil || res.Samples.Written != len(smps) || res.Rejected() != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	g := selectStarts(t, s, math.MinInt64, math.MaxInt64)["st_counter"]
	if !equalBits(g.floats, smps) || !slices.Equal(g.fsts, []StartTime{{T: t0 + 5000, ST: t0 - 60000}}) {
		t.Fatalf("got %v starts %v", g.floats, g.fsts)
	}
	for reason, want := range map[string]float64{StartReasonNotBeforeSample: 3, StartReasonOutOfBounds: 1} {
		if got := testutil.ToFloat64(s.m.startsDropped.WithLabelValues(reason)); got != want {
			t.Errorf("dropped %s: %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(s.m.startsStored); got != 1 {
		t.Errorf("stored %v, want 1", got)
	}
}

// The WAL record of start timestamps round-trips, and a cut or lying one
// is an error, never a large allocation.
func TestStartTimesRecord(t *testing.T) {
	in := []refStarts{
		{Ref: 7, Kind: kindFloat, Starts: []StartTime{{T: 1000, ST: 10}, {T: 16000, ST: 10}, {T: 31000, ST: 30500}}},
		{Ref: 1 << 60, Kind: kindHistogram, Starts: []StartTime{{T: -5, ST: -100}, {T: math.MaxInt64, ST: math.MinInt64 + 1}}},
	}
	var rb recordBuilder
	appendStartsRecords(&rb, in)
	recs := rb.records(nil)
	if len(recs) != 1 || recs[0][0] != recStartTimes {
		t.Fatalf("%d records", len(recs))
	}
	var got []refStarts
	if _, err := decodeStartsRecord(recs[0], nil, func(ref uint64, k kindID, sts []StartTime) error {
		got = append(got, refStarts{Ref: ref, Kind: k, Starts: slices.Clone(sts)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("%d series back", len(got))
	}
	for i := range in {
		if got[i].Ref != in[i].Ref || got[i].Kind != in[i].Kind || !slices.Equal(got[i].Starts, in[i].Starts) {
			t.Fatalf("series %d: %+v, want %+v", i, got[i], in[i])
		}
	}
	for n := 1; n < len(recs[0]); n++ {
		if _, err := decodeStartsRecord(recs[0][:n], nil, func(uint64, kindID, []StartTime) error { return nil }); err == nil {
			t.Fatalf("record cut at %d decoded", n)
		}
	}
	lying := []byte{recStartTimes, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := decodeStartsRecord(lying, nil, func(uint64, kindID, []StartTime) error { return nil }); err == nil {
		t.Fatal("a count beyond the record decoded")
	}
}

// With StartTimeZeroSamples, Select presents a zero sample at a stored
// start timestamp after the series' previous sample (Prometheus's
// created-timestamp-zero-ingestion): for the first sample and at a reset,
// not for the samples of a running counter; within the range asked, also
// when the sample it belongs to is after the range. A zero histogram has
// its sample's schema and the counter-reset hint.
func TestStartTimeZeroSamples(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(day0 + hour)
	opts := rotOptions(clk)
	s := openT(t, t.TempDir(), opts)
	t0 := day0
	smps := []Sample{{T: t0 + 100_000, V: 5}, {T: t0 + 115_000, V: 7}, {T: t0 + 130_000, V: 1}, {T: t0 + 145_000, V: 2}, {T: t0 + 160_000, V: 3}}
	sts := []StartTime{{T: t0 + 100_000, ST: t0 + 90_000}, {T: t0 + 115_000, ST: t0 + 90_000}, {T: t0 + 130_000, ST: t0 + 125_000},
		{T: t0 + 145_000, ST: t0 + 125_000}}
	fh := &histogram.FloatHistogram{Schema: 3, Count: 4, Sum: 2, ZeroThreshold: 0.5, ZeroCount: 4}
	b := Batch{Series: []SeriesData{
		{Labels: stCounter, Samples: smps, SampleStarts: sts},
		{Labels: stHist, Histograms: []HistogramSample{{T: t0 + 100_000, FH: fh}}, HistogramStarts: []StartTime{{T: t0 + 100_000, ST: t0 + 99_000}}},
	}}
	if res, err := s.Commit(ctx, &b); err != nil || res.Rejected() != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.StartTimeZeroSamples = true
	s = openT(t, s.dir, opts)
	z := func(ms int64) Sample { return Sample{T: t0 + ms} }
	for _, c := range []struct {
		name       string
		mint, maxt int64
		want       []Sample
	}{
		{"all", math.MinInt64, math.MaxInt64, []Sample{z(90_000), smps[0], smps[1], z(125_000), smps[2], smps[3], smps[4]}},
		{"from the reset's zero", t0 + 125_000, t0 + 200_000, []Sample{z(125_000), smps[2], smps[3], smps[4]}},
		{"after the zero", t0 + 126_000, t0 + 200_000, []Sample{smps[2], smps[3], smps[4]}},
		{"ending between the zero and its sample", t0, t0 + 127_000, []Sample{z(90_000), smps[0], smps[1], z(125_000)}},
	} {
		got := selectStarts(t, s, c.mint, c.maxt)
		if g := got["st_counter"]; !equalBits(g.floats, c.want) {
			t.Errorf("%s: %v, want %v", c.name, g.floats, c.want)
		}
	}
	h := selectStarts(t, s, math.MinInt64, math.MaxInt64)["st_hist"].hists
	if len(h) != 2 || h[0].T != t0+99_000 || h[0].FH == nil || h[0].FH.CounterResetHint != histogram.CounterReset || h[0].FH.Schema != 3 ||
		h[0].FH.ZeroThreshold != 0.5 || h[0].FH.Count != 0 || h[1].FH.Count != 4 {
		t.Fatalf("histograms %v", h)
	}
	// The files hold what was sent: without the option, no zero sample.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.StartTimeZeroSamples = false
	s = openT(t, s.dir, opts)
	defer s.Close()
	if g := selectStarts(t, s, math.MinInt64, math.MaxInt64)["st_counter"]; !equalBits(g.floats, smps) {
		t.Fatalf("without the option: %v", g.floats)
	}
}

// FuzzStartsRecord: any bytes decode or fail without panicking or
// allocating beyond what they can hold, and what decodes encodes back to
// the same record.
func FuzzStartsRecord(f *testing.F) {
	var rb recordBuilder
	appendStartsRecords(&rb, []refStarts{{Ref: 3, Kind: kindFloat, Starts: []StartTime{{T: 1000, ST: 10}, {T: 16000, ST: 10}}},
		{Ref: 9, Kind: kindHistogram, Starts: []StartTime{{T: -1, ST: math.MinInt64}}}})
	for _, r := range rb.records(nil) {
		f.Add(r)
	}
	f.Add([]byte{recStartTimes, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var got []refStarts
		_, err := decodeStartsRecord(rec, nil, func(ref uint64, k kindID, sts []StartTime) error {
			got = append(got, refStarts{Ref: ref, Kind: k, Starts: slices.Clone(sts)})
			return nil
		})
		if err != nil {
			return
		}
		var rb recordBuilder
		appendStartsRecords(&rb, got)
		recs := rb.records(nil)
		if len(got) == 0 {
			return // a count of 0 (in any varint form) holds nothing to compare
		}
		var again []refStarts
		for _, r := range recs {
			if _, err := decodeStartsRecord(r, nil, func(ref uint64, k kindID, sts []StartTime) error {
				again = append(again, refStarts{Ref: ref, Kind: k, Starts: slices.Clone(sts)})
				return nil
			}); err != nil {
				t.Fatalf("re-encoded record: %v", err)
			}
		}
		if len(again) != len(got) {
			t.Fatalf("%d series, re-encoded %d", len(got), len(again))
		}
		for i := range got {
			if again[i].Ref != got[i].Ref || again[i].Kind != got[i].Kind || !slices.Equal(again[i].Starts, got[i].Starts) {
				t.Fatalf("series %d: %+v, re-encoded %+v", i, got[i], again[i])
			}
		}
	})
}

// A tier merge of sealed days keeps the start timestamps, of floats and
// histograms, in the merged file's column, also of a day that had none.
func TestStartTimesTierMerge(t *testing.T) {
	clk := &fakeClock{}
	dir := t.TempDir()
	opts := tierOptions(clk)
	s := openT(t, dir, opts)
	defer s.Close()
	// day0 is a Sunday (2026-11-29); three days in one 7d window, then
	// the next window to seal them.
	c := stData(day0+hour, 4*96)
	var want []StartTime
	for i := range c.counter {
		c.counter[i].T = day0 + hour + int64(i)*15*60_000 // every 15 minutes: 96 a day
		c.hist[i].T = c.counter[i].T
	}
	var counterSts, histSts []StartTime
	for i := range c.counter {
		if i/96 == 1 {
			continue // the second day without start timestamps
		}
		st := StartTime{T: c.counter[i].T, ST: day0 + int64(i/96)*day}
		counterSts = append(counterSts, st)
		histSts = append(histSts, st)
	}
	c.counterSts, c.histSts = counterSts, histSts
	for i := range c.counter {
		clk.Set(c.counter[i].T)
		b := Batch{Series: []SeriesData{
			{Labels: stCounter, Samples: c.counter[i : i+1], SampleStarts: startsAt(counterSts, c.counter[i].T)},
			{Labels: stHist, Histograms: c.hist[i : i+1], HistogramStarts: startsAt(histSts, c.hist[i].T)},
		}}
		if res, err := s.Commit(ctx, &b); err != nil || res.Rejected() != 0 {
			t.Fatalf("%+v %v", res, err)
		}
		if i%20 == 19 {
			if err := s.FlushAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	clk.Set(day0 + 10*day)
	if merged, _ := maintainUntilIdle(t, s); merged == 0 {
		t.Fatal("no tier merge")
	}
	for _, st := range counterSts {
		if st.T < day0+3*day {
			want = append(want, st)
		}
	}
	files := seriesFiles(t, dir, refOf(t, s, stCounter))
	if len(files) != 2 {
		t.Fatalf("counter files %v, want the merged days and the fourth", files)
	}
	if has, id := fileHasStarts(t, seriesFilePath(dir, refOf(t, s, stCounter), files[0])); !has || id != sealedSchemaID {
		t.Fatalf("merged file: column %v, schema %d", has, id)
	}
	n := 0
	for _, smp := range c.counter {
		if smp.T < day0+3*day {
			n++
		}
	}
	got := selectStarts(t, s, math.MinInt64, day0+3*day-1)
	if g := got["st_counter"]; !equalBits(g.floats, c.counter[:n]) || !slices.Equal(g.fsts, want) || !slices.Equal(g.hsts, nil) {
		t.Fatalf("merged counter: %d samples, %d starts (want %d)", len(g.floats), len(g.fsts), len(want))
	}
	if g := got["st_hist"]; len(g.hists) != n || !slices.Equal(g.hsts, want) {
		t.Fatalf("merged histograms: %d, %d starts (want %d)", len(g.hists), len(g.hsts), len(want))
	}
	validateAll(t, dir)
}

// MergeSeriesSets (a query instance's bucket and live writers) keeps the
// start timestamps of the samples that win.
func TestStartTimesMergeSeriesSets(t *testing.T) {
	a, b := openT(t, t.TempDir(), Options{}), openT(t, t.TempDir(), Options{})
	defer a.Close()
	defer b.Close()
	commit := func(s *Store, smps []Sample, sts []StartTime) {
		t.Helper()
		batch := Batch{Series: []SeriesData{{Labels: stCounter, Samples: smps, SampleStarts: sts}}}
		if res, err := s.Commit(ctx, &batch); err != nil || res.Rejected() != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	commit(a, []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}, []StartTime{{T: 2000, ST: 500}})
	commit(b, []Sample{{T: 2000, V: 2}, {T: 3000, V: 3}}, []StartTime{{T: 2000, ST: 900}, {T: 3000, ST: 900}})
	m := selector(labels.MustNewMatcher(labels.MatchEqual, "__name__", "st_counter"))
	set := MergeSeriesSets(a.Select(ctx, 0, 10_000, m...), b.Select(ctx, 0, 10_000, m...))
	if !set.Next() {
		t.Fatalf("no series: %v", set.Err())
	}
	fs, hs := set.At().(StartTimeSeries).StartTimes()
	if want := []StartTime{{T: 2000, ST: 500}, {T: 3000, ST: 900}}; !slices.Equal(fs, want) || hs != nil {
		t.Fatalf("merged start timestamps %v %v, want %v", fs, hs, want)
	}
	if set.Next() {
		t.Fatal("a second series")
	}
}

func selector(ms ...*labels.Matcher) []*labels.Matcher { return ms }
