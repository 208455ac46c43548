package actastore

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// After a restart with WarmReaders, the newest file of each series (floats
// and histograms) is opened, and a float file's XOR chunks built, in the
// background up to 90 % of the reader
// cache's bound, and a query of a warmed series opens nothing; without the
// option nothing is opened before a query.
func TestWarmReadersAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{MaintenanceInterval: -1})
	var batch []SeriesSamples
	for i := range 10 {
		batch = append(batch, SeriesSamples{Labels: labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)),
			Samples: []Sample{{T: 1000, V: float64(i)}}})
	}
	mustAppend(t, s, batch)
	hb := Batch{Series: []SeriesData{{Labels: labels.FromStrings("__name__", "h"),
		Histograms: []HistogramSample{{T: 1000, H: &histogram.Histogram{Count: 1, Sum: 1, ZeroCount: 1, ZeroThreshold: 0.001}}}}}}
	if res, err := s.Commit(ctx, &hb); err != nil || res.Rejected() != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cold := openT(t, dir, Options{MaintenanceInterval: -1, MaxOpenReaders: 100})
	time.Sleep(50 * time.Millisecond)
	if n, _ := cold.readers.stats(); n != 0 {
		t.Fatalf("without WarmReaders %d readers are open before any query", n)
	}
	if err := cold.Close(); err != nil {
		t.Fatal(err)
	}

	warm := openT(t, dir, Options{MaintenanceInterval: -1, MaxOpenReaders: 100, WarmReaders: true})
	defer warm.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, builds := warm.readers.chunkStats()
		if n, _ := warm.readers.stats(); n == 11 && builds == 10 {
			break
		}
		if time.Now().After(deadline) {
			n, _ := warm.readers.stats()
			t.Fatalf("%d readers warmed, want the 11 files", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The float files' XOR chunks were built (not the histogram file's),
	// and a streamed read of part of a file uses them.
	if _, hits, builds := warm.readers.chunkStats(); builds != 10 || hits != 0 {
		t.Fatalf("warming built %d files' chunks (hits %d), want the 10 float files'", builds, hits)
	}
	parts, chunks := selectParts(t, warm, true, 500, 1500)
	if v := parts[`{__name__="m", i="3"}`]; len(v) != 1 || v[0] != (Sample{T: 1000, V: 3}) || chunks == 0 {
		t.Fatalf("streamed read of part of the files: %v, %d chunks", v, chunks)
	}
	if _, hits, builds := warm.readers.chunkStats(); builds != 10 || hits != 10 {
		t.Fatalf("after a streamed read of every float series: %d builds, %d hits, want 10 and 10", builds, hits)
	}
	misses := warm.readers.misses.Load()
	got := selectAll(t, warm, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "7"))
	if v := got[`{__name__="m", i="7"}`]; len(v) != 1 || v[0] != (Sample{T: 1000, V: 7}) {
		t.Fatalf("read %v", got)
	}
	if d := warm.readers.misses.Load() - misses; d != 0 {
		t.Fatalf("a query of a warmed series opened %d files", d)
	}

	// 90 % of the bound: 7 readers of 8; the chunks of all 10 float
	// files (3 of them opened out of the cache for their chunks), and a
	// streamed read of everything then opens nothing.
	if err := warm.Close(); err != nil {
		t.Fatal(err)
	}
	small := openT(t, dir, Options{MaintenanceInterval: -1, MaxOpenReaders: 8, WarmReaders: true})
	defer small.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, builds := small.readers.chunkStats(); builds == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("warming did not build the 10 float files' chunks")
		}
	}
	if n, _ := small.readers.stats(); n != 7 || small.readers.misses.Load() != 7 {
		t.Fatalf("%d readers warmed with a bound of 8 (%d misses), want 7", n, small.readers.misses.Load())
	}
	parts, chunks = selectParts(t, small, true, math.MinInt64, math.MaxInt64)
	if v := parts[`{__name__="m", i="9"}`]; len(v) != 1 || v[0] != (Sample{T: 1000, V: 9}) || chunks != 10 {
		t.Fatalf("streamed read of every file: %v, %d chunks", v, chunks)
	}
	// At most the histogram file is opened (histograms are not kept as
	// chunks), when warming did not reach it.
	if _, hits, _ := small.readers.chunkStats(); hits != 10 || small.readers.misses.Load() > 8 {
		t.Fatalf("streamed read of every float file: %d kept-chunk hits, %d misses; want 10 and the 7 warmed (8 with the histogram file)", hits, small.readers.misses.Load())
	}
}

// Warming opens each series' two newest files (newest first, for every
// series), not older ones: a range across a day boundary finds both open.
func TestWarmReadersTwoNewestFiles(t *testing.T) {
	dir := t.TempDir()
	opts := Options{MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour}}
	s := openT(t, dir, opts)
	for f := range 3 { // three hourly files a series
		var batch []SeriesSamples
		for i := range 4 {
			batch = append(batch, SeriesSamples{Labels: labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)),
				Samples: []Sample{{T: int64(f)*3_600_000 + 1000, V: float64(i)}}})
		}
		mustAppend(t, s, batch)
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.WarmReaders, opts.MaxOpenReaders = true, 100
	w := openT(t, dir, opts)
	defer w.Close()
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := w.readers.stats(); n < 8; n, _ = w.readers.stats() {
		if time.Now().After(deadline) {
			t.Fatalf("%d readers warmed, want 8 (2 files x 4 series)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n, _ := w.readers.stats(); n != 8 {
		t.Fatalf("%d readers warmed, want 8 (the oldest file of each series left closed)", n)
	}
	misses := w.readers.misses.Load()
	got := selectAll(t, w, 3_600_000, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "2"))
	if v := got[`{__name__="m", i="2"}`]; len(v) != 2 || v[0] != (Sample{T: 3_601_000, V: 2}) || v[1] != (Sample{T: 7_201_000, V: 2}) {
		t.Fatalf("read %v", got)
	}
	if d := w.readers.misses.Load() - misses; d != 0 {
		t.Fatalf("a read of the two newest files opened %d files", d)
	}
}
