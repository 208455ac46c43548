package actastore

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// TestReadOnlyFollowsWAL is what acta-remote tail builds on: TakeWAL hands
// out each acknowledged sample of both kinds once, in WAL order (out of
// order ones included), before any flush; Read says how many only the WAL
// holds; a flush and WAL truncation is counted by Truncations and loses
// nothing; OpenReadOnlyFor keeps no WAL samples of other series, also when
// their definition is in the catalog only; a tombstone drops what it
// covers.
func TestReadOnlyFollowsWAL(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{BlockRows: 1000})
	defer s.Close()
	a := labels.FromStrings("__name__", "up", "job", "a")
	b := labels.FromStrings("__name__", "lat", "job", "b")
	c := labels.FromStrings("__name__", "up", "job", "c")
	hs := histtest.Cases(1000)[0].Samples[:3]
	commit := func(sd ...SeriesData) {
		t.Helper()
		var bt Batch
		for _, d := range sd {
			bt.Add(d.Labels, d.Samples, d.Histograms, nil)
		}
		res, err := s.Commit(ctx, &bt)
		if err != nil || res.Samples.Rejected != 0 || res.Histograms.Rejected != 0 {
			t.Fatalf("commit: %+v %v", res, err)
		}
	}
	commit(SeriesData{Labels: a, Samples: []Sample{{1000, 1}, {2000, staleNaN}}},
		SeriesData{Labels: b, Histograms: hs[:2]},
		SeriesData{Labels: c, Samples: []Sample{{1000, 5}}})

	notC := labels.MustNewMatcher(labels.MatchNotEqual, "job", "c")
	ro, err := OpenReadOnlyFor(dir, notC)
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]uint64{}
	for _, si := range ro.Series() {
		ref[si.Labels.Get("job")] = si.Ref
	}
	if len(ref) != 3 {
		t.Fatalf("series %v", ref)
	}
	sameFloats := func(what string, got, want []Sample) {
		t.Helper()
		if !equalBits(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	sameHists := func(what string, got, want []HistogramSample) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d histograms, want %d", what, len(got), len(want))
		}
		for i := range want {
			if string(histfile.AppendRecord(nil, got[i])) != string(histfile.AppendRecord(nil, want[i])) {
				t.Fatalf("%s: histogram %d differs", what, i)
			}
		}
	}

	fs, _ := ro.TakeWAL(ref["a"])
	sameFloats("first take of a", fs, []Sample{{1000, 1}, {2000, staleNaN}})
	if fs, hs2 := ro.TakeWAL(ref["a"]); len(fs)+len(hs2) != 0 {
		t.Fatalf("second take of a: %v %v", fs, hs2)
	}
	_, got := ro.TakeWAL(ref["b"])
	sameHists("first take of b", got, hs[:2])
	if fs, _ := ro.TakeWAL(ref["c"]); len(fs) != 0 {
		t.Fatalf("c does not match, yet the view kept %v", fs)
	}
	rd, err := ro.Read(ref["a"], math.MinInt64, math.MaxInt64)
	if err != nil || rd.WALOnly != 2 || len(rd.Floats) != 2 {
		t.Fatalf("read a: %+v %v", rd, err)
	}
	rd, err = ro.Read(ref["b"], math.MinInt64, math.MaxInt64)
	if err != nil || rd.WALOnly != 2 {
		t.Fatalf("read b: %+v %v", rd, err)
	}
	sameHists("read b", rd.Histograms, hs[:2])

	// Out of order, then in order: handed out in the order acknowledged.
	commit(SeriesData{Labels: a, Samples: []Sample{{500, 7}, {3000, 3}}}, SeriesData{Labels: b, Histograms: hs[2:]})
	if _, err := ro.Reload(); err != nil {
		t.Fatal(err)
	}
	fs, got = ro.TakeWAL(ref["a"])
	sameFloats("take after reload", fs, []Sample{{500, 7}, {3000, 3}})
	if len(got) != 0 {
		t.Fatalf("a has no histograms, took %d", len(got))
	}
	if ro.Truncations() != 0 {
		t.Fatalf("%d truncations before any", ro.Truncations())
	}

	// Flush everything; the WAL is cut and its old segments deleted.
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Reload(); err != nil {
		t.Fatal(err)
	}
	if ro.Truncations() != 1 {
		t.Fatalf("%d truncations after a flush, want 1", ro.Truncations())
	}
	rd, err = ro.Read(ref["a"], math.MinInt64, math.MaxInt64)
	if err != nil || rd.WALOnly != 0 {
		t.Fatalf("read a after flush: %+v %v", rd, err)
	}
	sameFloats("a after flush", rd.Floats, []Sample{{500, 7}, {1000, 1}, {2000, staleNaN}, {3000, 3}})
	hread, err := ro.Histograms(ref["b"], math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	sameHists("b after flush", hread, hs)

	// New samples of series defined in the catalog only (their WAL
	// definitions are gone): a new view learns their labels after reading
	// the WAL, and must still drop c's.
	commit(SeriesData{Labels: a, Samples: []Sample{{4000, 4}, {5000, 5}}}, SeriesData{Labels: c, Samples: []Sample{{4000, 6}}})
	ro2, err := OpenReadOnlyFor(dir, notC)
	if err != nil {
		t.Fatal(err)
	}
	for seg, m := range ro2.walData {
		if m[ref["c"]] != nil {
			t.Fatalf("WAL segment %d: samples of c kept", seg)
		}
	}
	fs, _ = ro2.TakeWAL(ref["a"])
	sameFloats("catalog-only a", fs, []Sample{{4000, 4}, {5000, 5}})
	if len(ro2.unresolved) != 0 {
		t.Fatalf("%d refs left unresolved", len(ro2.unresolved))
	}

	// A deletion's tombstone drops what it covers from the WAL's part.
	if n, err := s.DeleteSeries(ctx, 3500, 4500, labels.MustNewMatcher(labels.MatchEqual, "job", "a")); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if _, err := ro2.Reload(); err != nil {
		t.Fatal(err)
	}
	smps, err := ro2.Samples(ref["a"], 3500, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	sameFloats("after delete", smps, []Sample{{5000, 5}})
}
