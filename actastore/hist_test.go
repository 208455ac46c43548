package actastore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// extrasBatch is a batch of histograms, exemplars and metadata only.
type extrasBatch struct {
	Series   []SeriesExtras
	Metadata []NamedMetadata
}

// appendExtras commits an extrasBatch.
func appendExtras(ctx context.Context, s *Store, eb extrasBatch) (Result, error) {
	var b Batch
	for _, e := range eb.Series {
		b.Add(e.Labels, nil, e.Histograms, e.Exemplars)
	}
	for _, m := range eb.Metadata {
		b.AddMetadata(m)
	}
	return s.Commit(ctx, &b)
}

func histBatch(cases []histtest.Series) extrasBatch {
	var b extrasBatch
	for i, c := range cases {
		b.Series = append(b.Series, SeriesExtras{
			Labels:     labels.FromStrings("__name__", c.Name, "job", "j"),
			Histograms: c.Samples,
			Exemplars:  []Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(i)), Value: math.Float64frombits(0x7ff8000000000001), T: c.Samples[0].T}},
		})
		b.Metadata = append(b.Metadata, NamedMetadata{Name: c.Name, Metadata: Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: "h " + c.Name}})
	}
	return b
}

// checkHistograms reads every case back through Select, bit for bit, and
// its exemplars and metadata.
func checkHistograms(t *testing.T, what string, s *Store, cases []histtest.Series) {
	t.Helper()
	checkHistogramSamples(t, what, s, cases)
	checkHistogramExtras(t, what, s, cases)
}

// checkHistogramSamples reads every case back through Select, bit for bit.
func checkHistogramSamples(t *testing.T, what string, s *Store, cases []histtest.Series) {
	t.Helper()
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
	got := map[string][]HistogramSample{}
	for set.Next() {
		hs, ok := set.At().(HistogramSeries)
		if !ok {
			t.Fatalf("%s: series is not a HistogramSeries", what)
		}
		it := hs.HistogramIterator()
		for it.Next() {
			got[hs.Labels().Get("__name__")] = append(got[hs.Labels().Get("__name__")], it.At())
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		g := got[c.Name]
		if len(g) != len(c.Samples) {
			t.Fatalf("%s %s: %d histograms back, want %d", what, c.Name, len(g), len(c.Samples))
		}
		for i := range g {
			if string(histfile.AppendRecord(nil, g[i])) != string(histfile.AppendRecord(nil, c.Samples[i])) {
				t.Fatalf("%s %s[%d]: got %v %v, want %v %v", what, c.Name, i, g[i].H, g[i].FH, c.Samples[i].H, c.Samples[i].FH)
			}
		}
	}
}

func checkHistogramExtras(t *testing.T, what string, s *Store, cases []histtest.Series) {
	t.Helper()
	ex, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "j"))
	if err != nil || len(ex) != len(cases) {
		t.Fatalf("%s: exemplars of %d series (%v), want %d", what, len(ex), err, len(cases))
	}
	for _, se := range ex {
		if len(se.Exemplars) == 0 {
			t.Fatalf("%s: no exemplars for %s", what, se.Labels)
		}
		for _, e := range se.Exemplars {
			if math.Float64bits(e.Value) != 0x7ff8000000000001 || e.Labels.Get("trace_id") == "" {
				t.Fatalf("%s: exemplars %v", what, se)
			}
		}
	}
	md, err := s.Metadata(context.Background(), "")
	if err != nil || len(md) != len(cases) || md[0].Type != model.MetricTypeHistogram || md[0].Help != "h "+md[0].Name {
		t.Fatalf("%s: metadata %v %v", what, md, err)
	}
}

func TestHistogramsStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cases := histtest.Cases(1_700_000_000_000)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := appendExtras(context.Background(), s, histBatch(cases))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range cases {
		total += len(c.Samples)
	}
	if res.Histograms.Written != total || res.Histograms.Rejected != 0 || res.Exemplars.Written != len(cases) || res.Metadata.Written != len(cases) {
		t.Fatalf("result %+v, want %d histograms", res, total)
	}
	checkHistograms(t, "head", s, cases)

	// A resend is a duplicate; another histogram at a stored timestamp is
	// refused; so is an invalid one.
	res, err = appendExtras(context.Background(), s, histBatch(cases[:1]))
	if err != nil || res.Histograms.Written != len(cases[0].Samples) || res.Histograms.Rejected != 0 {
		t.Fatalf("resend: %+v %v", res, err)
	}
	other := histtest.Cases(1_700_000_000_000)[0]
	other.Samples[0].H.Sum++
	bad := &histogram.Histogram{Count: 3, ZeroCount: 1}
	res, err = appendExtras(context.Background(), s, extrasBatch{Series: []SeriesExtras{
		{Labels: labels.FromStrings("__name__", other.Name, "job", "j"), Histograms: other.Samples[:1]},
		{Labels: labels.FromStrings("__name__", "bad", "job", "j"), Histograms: []HistogramSample{{T: 1, H: bad}}},
	}})
	if err != nil || res.Histograms.Rejected != 2 || len(res.Errors) != 2 ||
		!errors.Is(res.Errors[0], ErrDuplicateSample) || !errors.Is(res.Errors[1], ErrInvalidHistogram) {
		t.Fatalf("conflicts: %+v %v", res, err)
	}

	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	checkHistograms(t, "flushed", s, cases)
	for _, c := range cases[:3] {
		ms := seriesOf(s, labels.FromStrings("__name__", c.Name, "job", "j"))
		st := ms.hists()
		if len(st.files()) != 1 {
			t.Fatalf("%s: histogram files %v, want one (no rotation)", c.Name, st.files())
		}
		if err := acta.Validate(histFilePath(dir, ms.ref, st.files()[0]), acta.ValidateFull); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkHistograms(t, "reopened", s, cases)

	// A crash before any flush: the WAL brings everything back.
	more := histtest.Cases(1_800_000_000_000)
	if _, err := appendExtras(context.Background(), s, histBatch(more)); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := histtest.Cases(1_700_000_000_000)
	for i := range all {
		all[i].Samples = append(all[i].Samples, more[i].Samples...)
	}
	checkHistograms(t, "after crash", s, all)
}

// TestFloatsAndHistogramsInOneSeries: a metric that changes type keeps both.
func TestFloatsAndHistogramsInOneSeries(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ls := labels.FromStrings("__name__", "m", "job", "j")
	if _, err := s.Append(context.Background(), []SeriesSamples{{Labels: ls, Samples: []Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}}}); err != nil {
		t.Fatal(err)
	}
	h := histtest.Cases(3000)[4].Samples[:2]
	if res, err := appendExtras(context.Background(), s, extrasBatch{Series: []SeriesExtras{{Labels: ls, Histograms: h}}}); err != nil || res.Histograms.Written != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	set := s.Select(context.Background(), 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	if !set.Next() {
		t.Fatal("no series")
	}
	ser := set.At()
	nf, nh := 0, 0
	for it := ser.Iterator(); it.Next(); {
		nf++
	}
	for it := ser.(HistogramSeries).HistogramIterator(); it.Next(); {
		nh++
	}
	if nf != 2 || nh != 2 || set.Next() {
		t.Fatalf("floats %d histograms %d", nf, nh)
	}
}

// TestExemplarsBounded keeps the newest maxExemplarsKept across a flush and
// a restart.
func TestExemplarsBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("__name__", "m", "job", "j")
	for round := 0; round < 10; round++ {
		var es []Exemplar
		for i := 0; i < 20; i++ {
			es = append(es, Exemplar{Labels: labels.FromStrings("trace_id", "x"), Value: float64(round*20 + i), T: int64(round*20 + i)})
		}
		if _, err := appendExtras(context.Background(), s, extrasBatch{Series: []SeriesExtras{{Labels: ls, Exemplars: es}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ex, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64)
	if err != nil || len(ex) != 1 || len(ex[0].Exemplars) != maxExemplarsKept || ex[0].Exemplars[0].T != 200-maxExemplarsKept {
		t.Fatalf("%v %v", ex, err)
	}
}
