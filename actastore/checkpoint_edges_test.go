package actastore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
)

// TestCheckpointFollowerGetsUnreadSamples: a follower (acta-remote tail)
// took the WAL up to batch 10; batches 10-19 are committed and a
// checkpoint deletes their segment before the follower's next Reload, so
// only the checkpoint holds them (no file): TakeWAL hands them out then,
// and none of the first ten again. (Found by review: all of a new
// checkpoint was marked taken.)
func TestCheckpointFollowerGetsUnreadSamples(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lset := labels.FromStrings("__name__", "m")
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := s.Append(context.Background(), []SeriesSamples{{Labels: lset, Samples: []Sample{{T: int64(1000 + i), V: float64(i)}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 10)
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Series()[0].Ref
	fs, _ := r.TakeWAL(ref)
	if len(fs) != 10 {
		t.Fatalf("took %d, want 10", len(fs))
	}
	add(10, 20) // not read by the follower yet
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	add(20, 30)
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	fs, _ = r.TakeWAL(ref)
	if len(fs) != 20 {
		t.Fatalf("after the checkpoint the follower hands out %d samples (%v...), want 20 (t=1010..1029)", len(fs), fs[:min(len(fs), 3)])
	}
}

// TestCheckpointQueryWhileCheckpointing: a one-shot view (acta-remote
// query) opened while the server takes checkpoint after checkpoint holds
// everything acknowledged before it opened: a checkpoint committed after
// the view read the one before, deleting segments it had not read yet,
// makes it start over from the new one. (Found by review: such samples
// were in no run the view held.)
func TestCheckpointQueryWhileCheckpointing(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const series = 2000
	ls := make([]labels.Labels, series)
	for i := range ls {
		ls[i] = labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
	}
	step := 0
	appendStep := func() {
		batch := make([]SeriesSamples, series)
		for i := range batch {
			batch[i] = SeriesSamples{Labels: ls[i], Samples: []Sample{{T: int64(step), V: float64(step)}}}
		}
		if _, err := s.Append(context.Background(), batch); err != nil {
			t.Error(err)
		}
		step++
	}
	for step < 30 {
		appendStep()
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	acked.Store(int64(step))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			appendStep()
			acked.Store(int64(step))
			if err := s.checkpoint(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(3 * time.Second)
	for try := 0; time.Now().Before(deadline); try++ {
		want := acked.Load() // every series has samples 0..want-1, acknowledged
		r, err := OpenReadOnly(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, si := range r.Series() {
			smps, err := r.Samples(si.Ref, math.MinInt64, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(smps)) < want {
				t.Fatalf("try %d: series %s: the view holds %d samples, %d were acknowledged before it opened", try, si.Labels, len(smps), want)
			}
		}
	}
}

// TestCheckpointDeletions: deletions before and after a checkpoint,
// with flushes in between, survive a crash exactly.
func TestCheckpointDeletions(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 20)
	m := labels.MustNewMatcher(labels.MatchEqual, "series", "1")
	if _, err := s.DeleteSeries(context.Background(), 1_000_000, 1_000_500, m); err != nil {
		t.Fatal(err)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 20, 30)
	m2 := labels.MustNewMatcher(labels.MatchEqual, "series", "2")
	if _, err := s.DeleteSeries(context.Background(), 1_001_000, 1_002_500, m2); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 30, 35)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	m3 := labels.MustNewMatcher(labels.MatchEqual, "series", "3")
	if _, err := s.DeleteSeries(context.Background(), math.MinInt64, math.MaxInt64, m3); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 35, 40)
	exp := readCkptState(t, s)
	s.abandon()
	for round := 0; round < 2; round++ {
		if s, err = Open(dir, checkpointOptions()); err != nil {
			t.Fatal(err)
		}
		checkCkptState(t, fmt.Sprint("round ", round), readCkptState(t, s), exp)
		s.abandon()
	}
}

// TestCheckpointRestoredHeadsTakeEverything: heads restored frozen take a
// second checkpoint, deletions, out-of-order samples and a clean stop.
func TestCheckpointRestoredHeadsTakeEverything(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 30)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 30, 35)
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	// A second checkpoint straight from the frozen heads (and their side
	// samples from the WAL), then a crash.
	commitCkpt(t, s, 35, 36)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	exp := readCkptState(t, s)
	s.abandon()
	runtime.GC()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	checkCkptState(t, "after a checkpoint of frozen heads", readCkptState(t, s), exp)
	m := labels.MustNewMatcher(labels.MatchEqual, "series", "4")
	if _, err := s.DeleteSeries(context.Background(), 1_000_000, 1_001_000, m); err != nil {
		t.Fatal(err)
	}
	// An out-of-order sample into a frozen head.
	lset := labels.FromStrings("__name__", "ckpt_metric", "series", "5")
	if _, err := s.Append(context.Background(), []SeriesSamples{{Labels: lset, Samples: []Sample{{T: 1_000_050, V: 7}}}}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	exp = readCkptState(t, s)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	checkCkptState(t, "after delete and ooo", readCkptState(t, s), exp)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCkptState(t, "after a clean stop", readCkptState(t, s), exp)
}

// TestCheckpointRecordOutsideCheckpoint: a head-chunk record in a WAL
// segment (the server writes none: it would alias the segment's mapping,
// released after the replay) fails Open with an error naming it.
func TestCheckpointRecordOutsideCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 2)
	chunk := []byte{recHeadChunks, 1}
	chunk = binary.LittleEndian.AppendUint64(chunk, s.reg.live()[0].ref)
	chunk = binary.AppendVarint(chunk, 5)
	chunk = binary.AppendUvarint(chunk, 3)
	chunk = append(chunk, 0, 1, 0)
	if _, err := s.wal.Append(chunk); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err == nil {
		s.Close()
		t.Fatal("Open replayed a head chunk record from a WAL segment")
	} else if !strings.Contains(err.Error(), "checkpoint record (type 11) in WAL segment") {
		t.Fatalf("error %q", err)
	}
}

// TestCheckpointLeftoversRemoved: a checkpoint left behind by a failed
// removal (one not the live one) goes with the live one once the heads
// are flushed, so no later Open can take its stale heads for the newest.
func TestCheckpointLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commitCkpt(t, s, 0, 5)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	live := checkpointFiles(t, dir)[0]
	wdir := filepath.Join(dir, walDirName)
	b, _ := os.ReadFile(filepath.Join(wdir, checkpointName(live)))
	os.WriteFile(filepath.Join(wdir, checkpointName(live+7)), b, 0o644) // a stranger, newer by name
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if c := checkpointFiles(t, dir); len(c) != 0 {
		t.Fatalf("checkpoints %v left after every head was flushed", c)
	}
}

// TestCheckpointRecordsBounded: large heads (native histograms of 4,096
// buckets, 0.8 MiB a series) that a commit copies into a checkpoint
// before its walk writes anything still make records of at most about
// checkpointRecordBytes, and the commit does not grow one buffer with all
// of them. (Found by review: the commit's copies piled up into one record
// per type, past wal.MaxRecordSize with enough of them: a panic.)
func TestCheckpointRecordsBounded(t *testing.T) {
	const series, perSeries, buckets = 24, 25, 4096
	big := func(ts int64, nb int) HistogramSample {
		bs := make([]float64, nb)
		for i := range bs {
			bs[i] = float64(i%7) + 0.5
		}
		return HistogramSample{T: ts, FH: &histogram.FloatHistogram{ZeroThreshold: 1e-128, Count: float64(nb), Sum: 1,
			PositiveSpans: []histogram.Span{{Length: uint32(nb)}}, PositiveBuckets: bs}}
	}
	o := checkpointOptions()
	o.MaxHeadBytes = 16 << 30
	dir := t.TempDir()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	lset := func(i int) labels.Labels { return labels.FromStrings("__name__", "big_hist", "i", fmt.Sprint(i)) }
	for i := 0; i < series; i++ {
		hs := make([]HistogramSample, perSeries)
		for j := range hs {
			hs[j] = big(int64(1000+j), buckets)
		}
		b := &Batch{}
		b.Add(lset(i), nil, hs, nil)
		if res, err := s.Commit(context.Background(), b); err != nil || res.Rejected() != 0 {
			t.Fatalf("commit: %v %+v", err, res)
		}
	}
	testHookAfterCut = func() { // every head copied by this commit, before the walk
		b := &Batch{}
		for i := 0; i < series; i++ {
			b.Add(lset(i), nil, []HistogramSample{big(5000, 1)}, nil)
		}
		if res, err := s.Commit(context.Background(), b); err != nil || res.Rejected() != 0 {
			t.Errorf("commit after the cut: %v %+v", err, res)
		}
	}
	err = s.checkpoint()
	testHookAfterCut = nil
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, walDirName, checkpointName(checkpointFiles(t, dir)[0])))
	if err != nil {
		t.Fatal(err)
	}
	largest, records := 0, 0
	for off := 0; off < len(b); records++ {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		largest = max(largest, n)
		off += 8 + n
	}
	if limit := 2 * checkpointRecordBytes; largest > limit || records < series {
		t.Fatalf("%d records, the largest %d bytes; want at least %d, none over %d", records, largest, series, limit)
	}
	exp := readCkptState(t, s)
	s.abandon()
	if s, err = Open(dir, o); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCkptState(t, "after a crash", readCkptState(t, s), exp)
}

// TestCheckpointHeadSplit: a head restored from a checkpoint's chunk takes
// the WAL's newer samples into a chunk after it (headBuf.split) and
// older ones beside it. Reads, resends, the byte count, a checkpoint and a
// crash of that state, and the first live sample (which recompresses the
// head whole) keep every sample bit for bit.
func TestCheckpointHeadSplit(t *testing.T) {
	dir := t.TempDir()
	opts := checkpointOptions()
	opts.OutOfOrderWindow = 24 * time.Hour
	opts.Logger = quiet
	s := openT(t, dir, opts)
	lset := labels.FromStrings("__name__", "split")
	t0 := int64(1_700_000_000_000)
	smp := func(i int) Sample { return Sample{T: t0 + int64(i)*15000, V: float64(i) * 1.5} }
	var all []Sample
	for i := range 150 {
		all = append(all, smp(i))
	}
	all[7].V, all[120].V = staleNaN, math.Float64frombits(0x7ff8000000000bad)
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: all[:100]}})
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Beside the chunks: one older than the checkpoint's, one between two
	// samples of the WAL's (a checkpoint writes it before the chunks).
	ooo, ooo2 := Sample{T: all[50].T + 1, V: -3}, Sample{T: all[140].T + 1, V: -4}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: all[100:125]}})
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{ooo}}})
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: all[125:]}})
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{ooo2}}})
	w := want{}
	w.add(lset, all[:51]...)
	w.add(lset, ooo)
	w.add(lset, all[51:141]...)
	w.add(lset, ooo2)
	w.add(lset, all[141:]...)
	const beside = 2
	s.abandon() // kill -9

	// checkSplit checks the head's parts and that the store counts what it
	// holds.
	checkSplit := func(what string, s *Store, olderN, n, side int) {
		t.Helper()
		ms := seriesOf(s, lset)
		ms.mu.Lock()
		h := &ms.floats.head
		gotOlder, gotN, gotSide, restored := h.olderN(), h.p.n(), len(h.side()), h.restored()
		bytes := h.bytes(floats)
		mint, maxt, _ := h.bounds(floats)
		ms.mu.Unlock()
		if gotOlder != olderN || gotN != n || gotSide != side || restored != (olderN > 0) {
			t.Fatalf("%s: head holds %d older, %d chunk and %d side samples (restored %v), want %d, %d, %d",
				what, gotOlder, gotN, gotSide, restored, olderN, n, side)
		}
		if mint != all[0].T || maxt != all[len(all)-1].T {
			t.Fatalf("%s: head bounds [%d, %d], want [%d, %d]", what, mint, maxt, all[0].T, all[len(all)-1].T)
		}
		if st := s.Stats(); st.HeadBytes != bytes || st.HeadSamples != int64(len(all)+beside) {
			t.Fatalf("%s: store counts %d head samples in %d bytes, the head holds %d in %d", what, st.HeadSamples, st.HeadBytes, len(all)+beside, bytes)
		}
		checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
		// A range across older and the chunk, starting and ending between
		// samples.
		part := want{}
		part.add(lset, all[90:110]...)
		checkWant(t, selectAll(t, s, all[89].T+1, all[110].T-1), part)
	}

	s = openT(t, dir, opts)
	checkSplit("after the replay", s, 100, 50, beside)
	// Resends of a sample in older, in the chunk and beside are dropped
	// as duplicates; another value at older's timestamp is refused. The
	// head stays split.
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{all[7], all[120], ooo, ooo2}}})
	res, err := s.Append(ctx, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: all[3].T, V: 99}}}})
	if err != nil || res.SamplesRejected != 1 || len(res.Errors) != 1 || !errors.Is(res.Errors[0], ErrDuplicateSample) {
		t.Fatalf("another value at a timestamp of older: %+v, %v", res, err)
	}
	checkSplit("after resends", s, 100, 50, beside)

	// A checkpoint of the split head (older and the chunk, each a chunk of
	// it, after the side samples), then a crash: the chunk is a chunk
	// again though ooo2 is newer than part of it.
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	s = openT(t, dir, opts)
	checkSplit("after a checkpoint of the split head", s, 100, 50, beside)

	// The first live sample compresses the head whole.
	live := Sample{T: all[len(all)-1].T + 15000, V: 4}
	all = append(all, live)
	w.add(lset, live)
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{live}}})
	ms := seriesOf(s, lset)
	ms.mu.Lock()
	h := ms.floats.head
	bytes := h.bytes(floats)
	ms.mu.Unlock()
	if h.restored() || h.olderN() != 0 || h.p.n() != len(all)+beside || len(h.side()) != 0 {
		t.Fatalf("after a live sample: restored %v, %d older, %d chunk and %d side samples", h.restored(), h.olderN(), h.p.n(), len(h.side()))
	}
	if st := s.Stats(); st.HeadBytes != bytes {
		t.Fatalf("after a live sample the store counts %d head bytes, the head holds %d", st.HeadBytes, bytes)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
