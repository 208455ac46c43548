package actastore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/histfile"
)

// checkpointOptions keep everything in the heads (no flush by size or
// age, no background checkpoint): the tests take checkpoints themselves.
func checkpointOptions() Options {
	return Options{BlockRows: 1 << 16, MaxHeadAge: time.Hour, WALSegmentSize: 1 << 20,
		WALCheckpointBytes: -1, MaintenanceInterval: -1}
}

// ckptState is everything a store returns: floats bit for bit, histograms
// as their WAL encoding, start timestamps, exemplars and metadata.
type ckptState struct {
	floats map[string][]Sample
	hists  map[string][]string
	starts map[string][2][]StartTime
	exs    map[string][]string
	help   string
}

func readCkptState(t *testing.T, s *Store) ckptState {
	t.Helper()
	st := ckptState{floats: selectAll(t, s, math.MinInt64, math.MaxInt64), hists: map[string][]string{},
		starts: map[string][2][]StartTime{}, exs: map[string][]string{}}
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for set.Next() {
		k := set.At().Labels().String()
		hit := set.At().(HistogramSeries).HistogramIterator()
		for hit.Next() {
			st.hists[k] = append(st.hists[k], string(histfile.AppendRecord(nil, hit.At())))
		}
		fs, hs := set.At().(StartTimeSeries).StartTimes()
		if len(fs)+len(hs) > 0 {
			st.starts[k] = [2][]StartTime{fs, hs}
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	es, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	if err != nil {
		t.Fatal(err)
	}
	for _, se := range es {
		for _, e := range se.Exemplars {
			st.exs[se.Labels.String()] = append(st.exs[se.Labels.String()], fmt.Sprintf("%d/%x/%s", e.T, math.Float64bits(e.Value), e.Labels))
		}
	}
	md, err := s.Metadata(context.Background(), "ckpt_metric")
	if err != nil {
		t.Fatal(err)
	}
	if len(md) == 1 {
		st.help = md[0].Help
	}
	return st
}

func checkCkptState(t *testing.T, what string, got, exp ckptState) {
	t.Helper()
	checkWant(t, got.floats, exp.floats)
	for _, c := range []struct {
		name     string
		got, exp any
	}{{"histograms", got.hists, exp.hists}, {"start timestamps", got.starts, exp.starts}, {"exemplars", got.exs, exp.exs}, {"metadata", got.help, exp.help}} {
		if !reflect.DeepEqual(c.got, c.exp) {
			t.Fatalf("%s: %s differ:\n got %v\nwant %v", what, c.name, c.got, c.exp)
		}
	}
}

// ckptBatch is batch n: every float class (NaN payloads, the stale
// marker, ±Inf, -0, subnormals), a histogram on half the series, an
// exemplar, start timestamps on series 0, metadata; from n = 3 on, series
// 1 also gets a sample older than its newest (a head's side samples).
func ckptBatch(n int) *Batch {
	specials := []float64{staleNaN, math.Float64frombits(0x7ff8000000000bad), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 5e-324, 1 << 53}
	b := &Batch{}
	for i := 0; i < 6; i++ {
		lset := labels.FromStrings("__name__", "ckpt_metric", "series", fmt.Sprint(i))
		t0 := int64(1_000_000 + n*100)
		smps := []Sample{{T: t0, V: specials[(n+i)%len(specials)]}, {T: t0 + 1, V: float64(n*i) + 0.25}}
		if i == 1 && n >= 3 {
			smps = append(smps, Sample{T: int64(1_000_000 + (n-3)*100 + 50), V: -float64(n)})
		}
		var hs []HistogramSample
		if i%2 == 0 {
			hs = []HistogramSample{mixedHist(rand.New(rand.NewPCG(uint64(n), uint64(i))), t0+2)}
		}
		ex := []Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprintf("n%ds%d", n, i)), Value: float64(n), T: t0}}
		b.Add(lset, smps, hs, ex)
		if i == 0 {
			d := &b.Series[len(b.Series)-1]
			d.SampleStarts = []StartTime{{T: t0, ST: t0 - 500}}
			d.HistogramStarts = []StartTime{{T: t0 + 2, ST: t0 - 500}}
		}
	}
	b.AddMetadata(NamedMetadata{Name: "ckpt_metric", Metadata: Metadata{Type: model.MetricTypeGauge, Help: fmt.Sprintf("batch %d", n)}})
	return b
}

func commitCkpt(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		res, err := s.Commit(context.Background(), ckptBatch(n))
		if err != nil || res.Rejected() != 0 {
			t.Fatalf("commit %d: %v %+v", n, err, res)
		}
	}
}

func checkpointFiles(t *testing.T, dir string) []int {
	t.Helper()
	segs, _, err := listCheckpoints(filepath.Join(dir, walDirName))
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// TestCheckpointRestoresHeads: after a checkpoint the WAL segments before
// it are gone, and a restart after a crash (twice) and after a clean stop
// returns every item of every kind as it was, bit for bit.
func TestCheckpointRestoresHeads(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 40)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	ckpts := checkpointFiles(t, dir)
	segs, _ := wal.Segments(filepath.Join(dir, walDirName))
	if len(ckpts) != 1 || len(segs) != 1 || segs[0] != ckpts[0] {
		t.Fatalf("after a checkpoint: checkpoints %v, WAL segments %v; want one checkpoint and its segment only", ckpts, segs)
	}
	commitCkpt(t, s, 40, 50) // after it, in the WAL
	exp := readCkptState(t, s)
	if n := len(exp.floats[`{__name__="ckpt_metric", series="1"}`]); n != 50*2+47 {
		t.Fatalf("series 1 holds %d samples, want %d", n, 50*2+47)
	}
	if len(exp.starts) != 1 || len(exp.exs) != 6 || exp.help != "batch 49" {
		t.Fatalf("test data: starts %v, exemplar series %d, help %q", exp.starts, len(exp.exs), exp.help)
	}
	s.abandon()

	for round := 0; round < 2; round++ {
		if s, err = Open(dir, checkpointOptions()); err != nil {
			t.Fatalf("reopen %d: %v", round, err)
		}
		checkCkptState(t, fmt.Sprintf("after crash %d", round), readCkptState(t, s), exp)
		// Every float and histogram: batches 0-39 from the checkpoint, the
		// rest from the WAL.
		if s.replayedSamples != 6*50*2+47+3*50 {
			t.Errorf("replayed %d samples", s.replayedSamples)
		}
		s.abandon()
	}
	// Samples after the restart go into the restored chunks (which are
	// encoded afresh for it), with the WAL's samples beside them.
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 50, 60)
	exp = readCkptState(t, s)
	if n := len(exp.floats[`{__name__="ckpt_metric", series="1"}`]); n != 60*2+57 {
		t.Fatalf("series 1 holds %d samples, want %d", n, 60*2+57)
	}
	for _, ms := range s.reg.live() {
		if h := &ms.floats.head; h.p == nil || h.isFrozen() || h.p.n() < 100 {
			t.Fatalf("series %s: head not re-encoded in a chunk after new samples", s.reg.labels(nil, ms))
		}
	}
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	checkCkptState(t, "after samples on restored heads", readCkptState(t, s), exp)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c := checkpointFiles(t, dir); len(c) != 0 {
		t.Fatalf("checkpoints %v left after a clean stop", c)
	}
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCkptState(t, "after a clean stop", readCkptState(t, s), exp)
}

// TestCheckpointReplacesAndDrops: a second checkpoint replaces the first;
// once the heads are flushed, truncation deletes it; leftovers of a crash
// in the middle (an unfinished file, an older checkpoint, segments it
// covers) are cleared at Open without loss.
func TestCheckpointReplacesAndDrops(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 10)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	first := checkpointFiles(t, dir)
	if err := s.checkpoint(); err != nil { // nothing logged since: none
		t.Fatal(err)
	}
	if c := checkpointFiles(t, dir); !reflect.DeepEqual(c, first) {
		t.Fatalf("a checkpoint with nothing new: %v, want %v", c, first)
	}
	// Keep a copy of the first checkpoint and of the segment after it, to
	// stage a crash between the second one's rename and its deletions.
	wdir := filepath.Join(dir, walDirName)
	oldCkpt, _ := os.ReadFile(filepath.Join(wdir, checkpointName(first[0])))
	commitCkpt(t, s, 10, 20)
	oldSeg, _ := os.ReadFile(filepath.Join(wdir, wal.SegmentName(first[0])))
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	second := checkpointFiles(t, dir)
	if len(second) != 1 || second[0] <= first[0] {
		t.Fatalf("checkpoints %v after %v", second, first)
	}
	commitCkpt(t, s, 20, 25)
	exp := readCkptState(t, s)
	s.abandon()
	os.WriteFile(filepath.Join(wdir, checkpointName(first[0])), oldCkpt, 0o644)
	os.WriteFile(filepath.Join(wdir, wal.SegmentName(first[0])), oldSeg, 0o644)
	os.WriteFile(filepath.Join(wdir, checkpointName(second[0]+1)+".tmp"), []byte("half a checkpoint"), 0o644)

	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	checkCkptState(t, "after leftovers", readCkptState(t, s), exp)
	ents, _ := os.ReadDir(wdir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[0] != wal.SegmentName(second[0]) || names[2] != checkpointName(second[0]) {
		t.Fatalf("WAL directory after Open: %v; want the segments from %d on and its checkpoint", names, second[0])
	}
	// Flushing every head makes the checkpoint useless: the next
	// truncation deletes it, and what it held is in the files.
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if c := checkpointFiles(t, dir); len(c) != 0 {
		t.Fatalf("checkpoint %v kept after every head was flushed", c)
	}
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCkptState(t, "after the flush", readCkptState(t, s), exp)
}

// TestCheckpointCorrupt: a damaged checkpoint fails Open with an error
// naming it, never replays half.
func TestCheckpointCorrupt(t *testing.T) {
	for _, c := range []struct {
		name string
		harm func(b []byte) []byte
	}{
		{"flipped bit", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"no end record", func(b []byte) []byte {
			// Cut at the last record boundary: the records before are intact.
			off, last := 0, 0
			for off < len(b) {
				last = off
				off += 8 + int(binary.LittleEndian.Uint32(b[off:]))
			}
			return b[:last]
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, checkpointOptions())
			if err != nil {
				t.Fatal(err)
			}
			commitCkpt(t, s, 0, 5)
			if err := s.checkpoint(); err != nil {
				t.Fatal(err)
			}
			s.abandon()
			path := filepath.Join(dir, walDirName, checkpointName(checkpointFiles(t, dir)[0]))
			b, _ := os.ReadFile(path)
			os.WriteFile(path, c.harm(b), 0o644)
			if s, err = Open(dir, checkpointOptions()); err == nil {
				s.Close()
				t.Fatal("Open accepted a damaged checkpoint")
			} else if want := checkpointName(checkpointFiles(t, dir)[0]); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %s", err, want)
			}
		})
	}
}

// TestConcurrentCheckpoint takes checkpoints while commits run (under
// -race in make unit): a crash after them restores every acknowledged
// sample once.
func TestConcurrentCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Go(func() {
			for n := g; n < 300; n += 3 {
				res, err := s.Commit(context.Background(), ckptBatch(n))
				if err != nil || res.Rejected() != 0 {
					t.Errorf("commit %d: %v %+v", n, err, res)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	checkpoints := 0
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			if err := s.checkpoint(); err != nil {
				t.Error(err)
				return
			}
			checkpoints++
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	<-done
	exp := readCkptState(t, s)
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := readCkptState(t, s)
	checkWant(t, got.floats, exp.floats)
	if !reflect.DeepEqual(got.hists, exp.hists) || !reflect.DeepEqual(got.starts, exp.starts) {
		t.Fatal("histograms or start timestamps differ after checkpoints under commits")
	}
	t.Logf("%d checkpoints", checkpoints)
}

// TestCheckpointReadOnly: acta-remote query's view reads the checkpoint
// with the WAL after it, as the server does, whether the checkpoint was
// there when it opened or came while it followed the store; a tail that
// took samples before the checkpoint gets none of them again.
func TestCheckpointReadOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commitCkpt(t, s, 0, 20)
	follower, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, si := range follower.Series() {
		fs, _ := follower.TakeWAL(si.Ref)
		taken += len(fs)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 20, 30)
	exp := readCkptState(t, s)

	fresh, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := follower.Reload(); err != nil {
		t.Fatal(err)
	}
	if follower.Truncations() != 1 {
		t.Errorf("a checkpoint counted as %d truncations, want 1", follower.Truncations())
	}
	for name, r := range map[string]*ReadOnly{"opened after the checkpoint": fresh, "following": follower} {
		got := want{}
		for _, si := range r.Series() {
			smps, err := r.Samples(si.Ref, math.MinInt64, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			got[si.Labels.String()] = smps
		}
		t.Run(name, func(t *testing.T) { checkWant(t, got, exp.floats) })
	}
	// The follower hands out only what came after what it took: the
	// batches after the checkpoint.
	newer := 0
	for _, si := range follower.Series() {
		fs, _ := follower.TakeWAL(si.Ref)
		newer += len(fs)
	}
	if taken != 6*20*2+17 || newer != 6*10*2+10 {
		t.Errorf("tail took %d samples, then %d; want %d, then %d", taken, newer, 6*20*2+17, 6*10*2+10)
	}
}

// BenchmarkCheckpoint: one checkpoint of heads of 20 samples (5 minutes
// at 15 s, the default head age) for 100,000 series: how long commits
// wait (the heads are copied with appendMu held) and how long it takes.
func BenchmarkCheckpoint(b *testing.B) {
	const series, samples = 100_000, 20
	opts := checkpointOptions()
	opts.MaxHeadBytes = 16 << 30
	s := openT(b, b.TempDir(), opts)
	defer s.Close()
	ls := benchLabels(series)
	for step := range samples {
		batch := make([]SeriesSamples, len(ls))
		for i := range batch {
			batch[i] = SeriesSamples{Labels: ls[i], Samples: []Sample{{T: int64(step) * 15000, V: realisticValue(i, step)}}}
		}
		mustAppend(b, s, batch)
	}
	var paused time.Duration
	step := samples
	for b.Loop() {
		b.StopTimer()
		batch := []SeriesSamples{{Labels: ls[0], Samples: []Sample{{T: int64(step) * 15000, V: 1}}}}
		step++
		mustAppend(b, s, batch) // something new since the last checkpoint
		b.StartTimer()
		if err := s.checkpoint(); err != nil {
			b.Fatal(err)
		}
		paused += s.ckptPaused
	}
	b.ReportMetric(float64(paused.Milliseconds())/float64(b.N), "paused-ms/op")
	b.ReportMetric(float64(s.ckptBytes.Load())/float64(series*samples), "B/sample")
}

// TestCheckpointMappingReleased: restored heads alias the checkpoint's
// mapped pages; once every one was flushed, the pages are unmapped (and
// the file deleted by the truncation after the flush).
func TestCheckpointMappingReleased(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc/self/maps")
	}
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 20)
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	name := checkpointName(checkpointFiles(t, dir)[0])
	s.abandon()
	mapped := func() bool {
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), name)
	}
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !mapped() {
		t.Skip("the checkpoint is not mapped on this platform")
	}
	runtime.GC()
	if !mapped() {
		t.Fatal("checkpoint unmapped while its chunks are heads")
	}
	exp := readCkptState(t, s)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 && mapped(); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if mapped() {
		t.Fatal("checkpoint still mapped after every head was flushed")
	}
	checkCkptState(t, "after the unmap", readCkptState(t, s), exp)
}

// FuzzHeadChunksRecord: any bytes as a head-chunks record (type 11) decode
// or fail without panicking, the chunks included (as the read-only view
// decodes them), and never yield more samples than their bytes can hold;
// a record of real head chunks decodes to their samples.
func FuzzHeadChunksRecord(f *testing.F) {
	var hb headBuf[Sample]
	for i := range 30 {
		hb.addNew(floats, Sample{T: int64(1000 + 15*i), V: float64(i) / 3}, false)
	}
	p := hb.p
	rec := []byte{recHeadChunks, 1}
	rec = binary.LittleEndian.AppendUint64(rec, 7)
	rec = binary.AppendVarint(rec, p.maxT())
	rec = binary.AppendUvarint(rec, uint64(len(p.bytes())))
	rec = append(rec, p.bytes()...)
	f.Add(rec)
	f.Add([]byte{recHeadChunks, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0xff, 0xff, 0})
	seed, want := rec, hb.all(floats, nil)
	f.Fuzz(func(t *testing.T, rec []byte) {
		if len(rec) == 0 || rec[0] != recHeadChunks {
			return // the type byte is checked before (rp.apply, walRecord)
		}
		var got []Sample
		err := decodeHeadChunksRecord(rec, func(ref uint64, maxT int64, data []byte) error {
			n := len(got)
			var err error
			got, err = chunkSamples(floats, got, data)
			if err == nil && len(got)-n > 8*len(data) {
				t.Fatalf("%d samples from a chunk of %d bytes", len(got)-n, len(data))
			}
			return err
		})
		if slices.Equal(rec, seed) && (err != nil || !equalBits(got, want)) {
			t.Fatalf("the real chunk decoded to %d samples, want %d", len(got), len(want))
		}
	})
}

// TestCheckpointCopiesHeadsAtTheCut: a commit after a checkpoint's cut,
// before its walk reaches the series, does not get into the checkpoint
// (the commit copies the heads first): the file holds exactly the
// batches before the cut, and a crash after brings back all of them.
func TestCheckpointCopiesHeadsAtTheCut(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, checkpointOptions())
	if err != nil {
		t.Fatal(err)
	}
	commitCkpt(t, s, 0, 10)
	atCut := readCkptState(t, s)
	testHookAfterCut = func() { commitCkpt(t, s, 10, 12) }
	err = s.checkpoint()
	testHookAfterCut = nil
	if err != nil {
		t.Fatal(err)
	}
	exp := readCkptState(t, s)
	// What the checkpoint holds, read as the read-only view reads it.
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	inCkpt := want{}
	for ref, w := range r.walData[checkpointKey] {
		smps := slices.Clone(w.floats)
		slices.SortFunc(smps, func(a, b Sample) int { return cmpInt64(a.T, b.T) })
		inCkpt[r.ix.labels(nil, r.byRef.get(ref)).String()] = smps
	}
	checkWant(t, inCkpt, atCut.floats)
	s.abandon()
	if s, err = Open(dir, checkpointOptions()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkCkptState(t, "after a crash", readCkptState(t, s), exp)
}
