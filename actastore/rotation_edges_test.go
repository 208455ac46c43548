package actastore

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/rotation"
)

// Samples at both ends of the int64 millisecond range flush, close and read
// back under a daily rotation (a MaxInt64 timestamp once made the flush
// loop forever, and a MinInt64 one named its file for the far future).
func TestRotationInt64EdgeTimestamps(t *testing.T) {
	dir := t.TempDir()
	opts := Options{MaintenanceInterval: -1, Rotation: rotation.Policy{Period: 24 * time.Hour}, Logger: quiet, MinTimestamp: math.MinInt64}
	s := openT(t, dir, opts)
	ls := labels.FromStrings("__name__", "edge")
	smps := []Sample{{math.MinInt64, 1}, {0, 2}, {math.MaxInt64 - 1, 3}, {math.MaxInt64, 4}}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: smps}})
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{{86_400_000, 5}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, opts)
	defer s.Close()
	w := want{}
	w.add(ls, Sample{math.MinInt64, 1}, Sample{0, 2}, Sample{86_400_000, 5}, Sample{math.MaxInt64 - 1, 3}, Sample{math.MaxInt64, 4})
	if got := selectAll(t, s, math.MinInt64, math.MaxInt64); !reflect.DeepEqual(got, w) {
		t.Fatalf("select = %v, want %v", got, w)
	}
}
