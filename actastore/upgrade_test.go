package actastore

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// testdata/upgrade-v1 is a data directory written by the release before the
// one-WAL layout (commit b5cde79), left as a crash leaves it: float series
// files and histogram files from a first batch, then a second batch only in
// the WALs: floats in wal/, histograms, exemplars and metadata in
// histograms/wal/. These generate its contents (the generator ran the old
// code on exactly these values).
const upgradeT0 = int64(1_760_000_000_000)

func upgradeFloats(phase int) []SeriesSamples {
	var out []SeriesSamples
	for i := 0; i < 3; i++ {
		ss := SeriesSamples{Labels: labels.FromStrings("__name__", "up", "job", "old", "i", fmt.Sprint(i))}
		for k := phase * 20; k < phase*20+20; k++ {
			v := float64(k) + 0.25*float64(i)
			switch {
			case i == 1 && k == 5:
				v = math.Copysign(0, -1)
			case i == 2 && k == 26:
				v = math.Float64frombits(0x7ff8000000000123)
			case i == 0 && k == 39:
				v = staleNaN
			}
			ss.Samples = append(ss.Samples, Sample{T: upgradeT0 + int64(k)*15000, V: v})
		}
		out = append(out, ss)
	}
	return out
}

func upgradeExtras(phase int) extrasBatch {
	var b extrasBatch
	for j, c := range histtest.Cases(upgradeT0 + int64(phase)*3_600_000) {
		b.Series = append(b.Series, SeriesExtras{
			Labels:     labels.FromStrings("__name__", c.Name, "job", "old"),
			Histograms: c.Samples,
			Exemplars: []Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprintf("p%dc%d", phase, j)),
				Value: float64(j) + 0.5, T: c.Samples[0].T}},
		})
		if phase == 0 {
			b.Metadata = append(b.Metadata, NamedMetadata{Name: c.Name, Metadata: Metadata{Type: model.MetricTypeHistogram, Unit: "seconds", Help: "old " + c.Name}})
		}
	}
	if phase == 1 {
		b.Metadata = append(b.Metadata, NamedMetadata{Name: "up", Metadata: Metadata{Type: model.MetricTypeGauge, Help: "target up"}})
	}
	return b
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkUpgraded finds every acknowledged item of both batches, bit for bit.
func checkUpgraded(t *testing.T, what string, s *Store) {
	t.Helper()
	w := want{}
	for _, ph := range []int{0, 1} {
		for _, ss := range upgradeFloats(ph) {
			w.add(ss.Labels, ss.Samples...)
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "up")), w)

	wantH := map[string][]HistogramSample{}
	wantE := map[string][]Exemplar{}
	for _, ph := range []int{0, 1} {
		for _, e := range upgradeExtras(ph).Series {
			wantH[e.Labels.String()] = append(wantH[e.Labels.String()], e.Histograms...)
			wantE[e.Labels.String()] = append(wantE[e.Labels.String()], e.Exemplars...)
		}
	}
	set := s.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "old"),
		labels.MustNewMatcher(labels.MatchNotEqual, "__name__", "up"))
	n := 0
	for set.Next() {
		n++
		ls := set.At().Labels().String()
		it := set.At().(HistogramSeries).HistogramIterator()
		var got []HistogramSample
		for it.Next() {
			got = append(got, it.At())
		}
		if !slices.EqualFunc(got, wantH[ls], func(a, b HistogramSample) bool {
			return string(histfile.AppendRecord(nil, a)) == string(histfile.AppendRecord(nil, b))
		}) {
			t.Fatalf("%s: %s: %d histograms differ from the %d written", what, ls, len(got), len(wantH[ls]))
		}
	}
	if err := set.Err(); err != nil || n != len(wantH) {
		t.Fatalf("%s: %d histogram series, want %d (%v)", what, n, len(wantH), err)
	}
	es, err := s.SelectExemplars(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "old"))
	if err != nil || len(es) != len(wantE) {
		t.Fatalf("%s: exemplars of %d series, want %d (%v)", what, len(es), len(wantE), err)
	}
	for _, se := range es {
		if !slices.EqualFunc(se.Exemplars, wantE[se.Labels.String()], sameExemplar) {
			t.Fatalf("%s: %s: exemplars %v, want %v", what, se.Labels, se.Exemplars, wantE[se.Labels.String()])
		}
	}
	md, err := s.Metadata(context.Background(), "")
	wantMD := append(upgradeExtras(0).Metadata, upgradeExtras(1).Metadata...)
	slices.SortFunc(wantMD, func(a, b NamedMetadata) int { return cmpString(a.Name, b.Name) })
	if err != nil || !slices.Equal(md, wantMD) {
		t.Fatalf("%s: metadata %v, want %v (%v)", what, md, wantMD, err)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestUpgradeFromSeparateHistogramWAL: a data directory of the previous
// release opens with every acknowledged sample, histogram, exemplar and
// metadata entry; its histogram WAL is replayed once, into files, and
// retired; what it held stays after a clean restart and after a crash.
func TestUpgradeFromSeparateHistogramWAL(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "upgrade-v1"), dir)
	s := openT(t, dir, Options{MaintenanceInterval: -1})
	if _, err := os.Stat(legacyHistWALDir(dir)); !os.IsNotExist(err) {
		t.Fatalf("the old histogram WAL is still there after Open (%v)", err)
	}
	checkUpgraded(t, "upgraded", s)
	validateEvery(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{MaintenanceInterval: -1})
	checkUpgraded(t, "reopened", s)
	s.abandon()
	s = openT(t, dir, Options{MaintenanceInterval: -1})
	defer s.Close()
	checkUpgraded(t, "after a crash", s)
}

// TestUpgradeThenCheckpoint: the heads a directory of an earlier release
// left in its WAL (before WAL checkpoints) go into a checkpoint like any,
// and come back from it after a crash, with the segments they came from
// deleted.
func TestUpgradeThenCheckpoint(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "upgrade-v1"), dir)
	opts := Options{MaintenanceInterval: -1, WALCheckpointBytes: -1}
	s := openT(t, dir, opts)
	if s.Stats().HeadSamples == 0 {
		t.Fatal("test data: nothing in the heads after the upgrade")
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	if c := checkpointFiles(t, dir); len(c) != 1 {
		t.Fatalf("checkpoints %v", c)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	checkUpgraded(t, "from a checkpoint", s)
}

// A crash after the old WAL's data reached the files but before the WAL
// was deleted replays it again: nothing doubles.
func TestUpgradeReplayedTwice(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "upgrade-v1"), dir)
	keep := t.TempDir()
	copyDir(t, legacyHistWALDir(dir), keep)
	s := openT(t, dir, Options{MaintenanceInterval: -1})
	s.abandon()
	copyDir(t, keep, legacyHistWALDir(dir)) // as if the deletion never happened
	s = openT(t, dir, Options{MaintenanceInterval: -1})
	defer s.Close()
	checkUpgraded(t, "replayed twice", s)
}

// validateEvery runs full validation on every Acta file under dir, of
// every kind.
func validateEvery(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == seriesFileExt {
			if err := validateFile(p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		return nil
	})
}
