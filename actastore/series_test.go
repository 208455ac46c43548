package actastore

import (
	"math"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

func TestCanonicalLabelsRoundTrip(t *testing.T) {
	var b labels.ScratchBuilder
	for _, l := range []labels.Labels{
		labels.FromStrings("__name__", "m"),
		labels.FromStrings("__name__", "m", "a", "✓ with spaces", "z", string(make([]byte, 300))),
	} {
		enc := appendCanonicalLabels(nil, l)
		got, rest, err := decodeCanonicalLabels(&b, enc)
		if err != nil || len(rest) != 0 || !labels.Equal(got, l) {
			t.Fatalf("%s: got %s rest %d err %v", l, got, len(rest), err)
		}
		for i := 0; i < len(enc); i++ {
			if _, _, err := decodeCanonicalLabels(&b, enc[:i]); err == nil {
				t.Fatalf("%s: truncated to %d bytes decoded", l, i)
			}
		}
	}
}

func TestSampleRecordsRoundTrip(t *testing.T) {
	in := []refSamples[Sample]{
		{Ref: 1, Samples: []Sample{{T: -5, V: staleNaN}, {T: 0, V: math.Inf(-1)}, {T: 1 << 60, V: math.Copysign(0, -1)}}},
		{Ref: math.MaxUint64, Samples: []Sample{{T: 100, V: 1.5}}},
	}
	var rb recordBuilder
	appendSamplesRecords(floats, &rb, in)
	recs := rb.records(nil)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	i := 0
	_, err := decodeSamplesRecord(floats, recs[0], nil, func(ref uint64, s []Sample) error {
		if ref != in[i].Ref || !equalBits(s, in[i].Samples) {
			t.Fatalf("series %d: %x %v", i, ref, s)
		}
		i++
		return nil
	})
	if err != nil || i != 2 {
		t.Fatalf("decoded %d, %v", i, err)
	}
	// Truncations fail cleanly, never panic or over-allocate.
	for n := 1; n < len(recs[0]); n++ {
		if _, err := decodeSamplesRecord(floats, recs[0][:n], nil, func(uint64, []Sample) error { return nil }); err == nil {
			t.Fatalf("truncated record of %d bytes decoded", n)
		}
	}
}

// TestHashCollision forces two label sets onto one preferred ref: the second
// gets the next free ref, both keep their own samples, and the refs survive a
// restart (they are read from the WAL and catalog, never recomputed).
func TestHashCollision(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	a := labels.FromStrings("__name__", "a")
	b := labels.FromStrings("__name__", "b")
	hb := hashLabels(appendCanonicalLabels(nil, b))
	// Pretend a's labels hashed to b's hash: register a under ref hb.
	s.reg.mu.Lock()
	ma := s.reg.addLocked(hb, a, 0)
	s.reg.pending = append(s.reg.pending, ma)
	s.reg.mu.Unlock()
	mustAppend(t, s, []SeriesSamples{{Labels: a, Samples: []Sample{{1, 1}}}})
	mustAppend(t, s, []SeriesSamples{{Labels: b, Samples: []Sample{{1, 2}}}})
	s.reg.mu.RLock()
	mb := s.reg.lookupLocked(hb, b)
	s.reg.mu.RUnlock()
	if mb == nil || mb.ref != hb+1 {
		t.Fatalf("b got ref %v, want %x", mb, hb+1)
	}
	w := want{}
	w.add(a, Sample{1, 1})
	w.add(b, Sample{1, 2})
	checkWant(t, selectAll(t, s, 0, 10), w)
	s.abandon() // WAL only
	s = openT(t, dir, Options{})
	checkWant(t, selectAll(t, s, 0, 10), w)
	if err := s.Close(); err != nil { // now files and catalog
		t.Fatal(err)
	}
	s = openT(t, dir, Options{})
	defer s.Close()
	checkWant(t, selectAll(t, s, 0, 10), w)
	if s.reg.byRef.get(hb) == nil || !labels.Equal(s.reg.ix.labels(nil, s.reg.byRef.get(hb)), a) || !labels.Equal(s.reg.ix.labels(nil, s.reg.byRef.get(hb+1)), b) {
		t.Fatalf("refs changed across restart")
	}
	// Appending b again after restart finds the existing series.
	mustAppend(t, s, []SeriesSamples{{Labels: b, Samples: []Sample{{2, 3}}}})
	if st := s.Stats(); st.Series != 2 {
		t.Fatalf("%d series", st.Series)
	}
}

// A series struct is 112 bytes, a size class of Go's allocator: every
// active series pays it, and a field more (or the histograms, exemplars or
// newest file timestamp back in line) moves it to the 128-byte class
// (memory per active series, issue 17).
func TestMemSeriesSize(t *testing.T) {
	if got := unsafe.Sizeof(memSeries{}); got > 112 {
		t.Fatalf("memSeries is %d bytes, want at most 112", got)
	}
}
