package actastore

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/rotation"
)

// A plain read of a series whose day files' chunks are all kept decodes
// them into one run with room for the head after it (keptRun): three day
// files and a head give back, for ranges inside one file, across the file
// boundaries, ending in the head and everything, exactly what the store
// was sent, bit for bit (NaN payloads, -0), with every file read from its
// kept chunks. An out-of-order sample then put in the head before the
// newest file's last one (not after the run) comes back in its place.
func TestPlainReadKeptRunsAcrossFiles(t *testing.T) {
	const day = 86_400_000
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 1, MaintenanceInterval: -1, OutOfOrderWindow: 24 * time.Hour,
		Rotation: rotation.Policy{Period: 24 * time.Hour}, Logger: quiet})
	defer s.Close()
	odd := []float64{math.Float64frombits(0x7ff0000000000002), math.Float64frombits(0x7ff8000000000abc), math.Inf(-1), math.Copysign(0, -1), 0.1}
	var all []Sample
	for j := range 3 * 96 {
		// 15 minutes apart over three UTC days; values mix odd bits in.
		v := float64(j) * 1.25
		if j%7 == 0 {
			v = odd[j%len(odd)]
		}
		all = append(all, Sample{T: int64(j) * 900_000, V: v})
	}
	mustAppend(t, s, []SeriesSamples{{Labels: admitLabels(0), Samples: all}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	head := []Sample{{T: 3*day + 1000, V: 7}, {T: 3*day + 2000, V: math.Float64frombits(0x7ff8000000000def)}}
	mustAppend(t, s, []SeriesSamples{{Labels: admitLabels(0), Samples: head}})
	all = append(all, head...)
	for ms := range s.reg.all() {
		if fs := ms.floats.files(); len(fs) != 3 {
			t.Fatalf("files %v, want three days", fs)
		}
	}
	if _, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64); chunks == 0 {
		t.Fatal("the streamed read kept no chunks")
	}
	key := admitLabels(0).String()
	check := func(what string, want []Sample) {
		t.Helper()
		_, hits0, _ := s.readers.chunkStats()
		ranges := [][2]int64{{math.MinInt64, math.MaxInt64}, {day + 1, 2*day - 1}, {day / 2, 2*day + day/2}, {2*day + 5, 3*day + 1500}, {3 * day, 3*day + 5000}, {-10, 0}}
		for _, r := range ranges {
			got, _ := selectParts(t, s, false, r[0], r[1])
			var w []Sample
			for _, smp := range want {
				if smp.T >= r[0] && smp.T <= r[1] {
					w = append(w, smp)
				}
			}
			sameSamples(t, fmt.Sprintf("%s, plain read of %v", what, r), got, map[string][]Sample{key: w})
		}
		if _, hits, _ := s.readers.chunkStats(); hits-hits0 < int64(len(ranges)) {
			t.Fatalf("%s: %d kept-chunk hits over %d reads", what, hits-hits0, len(ranges))
		}
	}
	check("in order", all)

	ooo := Sample{T: 3*day - 1_350_000, V: -3.5} // between the last two samples of the newest file
	res, err := s.Commit(ctx, &Batch{Series: []SeriesData{{Labels: admitLabels(0), Samples: []Sample{ooo}}}})
	if err != nil || res.Samples.Written != 1 {
		t.Fatalf("out-of-order sample: %+v, %v", res.Samples, err)
	}
	withOOO := append(slices.Clone(all), ooo)
	slices.SortFunc(withOOO, func(a, b Sample) int { return cmpInt64(a.T, b.T) })
	check("out of order in the head", withOOO)
}

// The array a plain read's kept files append into is sized from their
// chunks, not guessed from the first file: a dense day (20,000 samples)
// then 30 days of 10 samples each, all kept, read whole, come back in one
// run of 20,300 samples whose array holds no more than that (a guess of
// the first file's count per file took 620,032 places, 9.9 MB for 0.3).
func TestPlainReadKeptRunSized(t *testing.T) {
	const day = 86_400_000
	s := openT(t, t.TempDir(), Options{MaxOpenReaders: 1, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: 24 * time.Hour}, Logger: quiet})
	defer s.Close()
	var all []Sample
	for j := range 20_000 {
		all = append(all, Sample{T: int64(j) * 4000, V: float64(j)})
	}
	for d := 1; d <= 30; d++ {
		for j := range 10 {
			all = append(all, Sample{T: int64(d)*day + int64(j)*60_000, V: float64(d*100 + j)})
		}
	}
	mustAppend(t, s, []SeriesSamples{{Labels: admitLabels(0), Samples: all}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, chunks := selectParts(t, s, true, math.MinInt64, math.MaxInt64); chunks == 0 {
		t.Fatal("the streamed read kept no chunks")
	}
	var ms *memSeries
	for m := range s.reg.all() {
		ms = m
	}
	if n := len(ms.floats.files()); n != 31 {
		t.Fatalf("%d files, want 31", n)
	}
	out, _, _, missing, err := readTrackOnce(s, floats, ms, math.MinInt64, math.MaxInt64, nil)
	if err != nil || missing {
		t.Fatalf("read: %v, missing %v", err, missing)
	}
	if !equalBits(out, all) {
		t.Fatalf("read %d samples, not the %d sent", len(out), len(all))
	}
	if cap(out) != len(all) {
		t.Fatalf("array of %d places for %d samples", cap(out), len(all))
	}
}
