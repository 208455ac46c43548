package actastore

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// A track's newest file timestamp (track.fileMax) lives in its cold part:
// a track without one reports no file, known, and recording that value
// does not give it one. A deletion in the newest file marks the bound
// unknown but keeps it, so samples up to it still look in the file
// first until a read learns the file's newest sample again.
func TestFileMaxOutOfLine(t *testing.T) {
	s := openT(t, t.TempDir(), Options{BlockRows: 1 << 20, MaxHeadAge: time.Hour, MaintenanceInterval: -1})
	lset := labels.FromStrings("__name__", "m")
	var smps []Sample
	for i := range 10 {
		smps = append(smps, Sample{T: 1000 + int64(i), V: float64(i)})
	}
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: smps}})
	ms := s.reg.byRef.get(hashLabels(appendCanonicalLabels(nil, lset)))

	ms.mu.Lock()
	if tm, known := ms.floats.fileMax(); tm != noTime || !known || ms.floats.cold != nil {
		t.Fatalf("before a flush: fileMax %d, %v, cold part %v; want %d, true, none", tm, known, ms.floats.cold != nil, noTime)
	}
	ms.floats.setFileMax(noTime, true)
	if ms.floats.cold != nil {
		t.Fatal("recording no file gave the track a cold part")
	}
	ms.mu.Unlock()

	if err := s.flushSeries(ms); err != nil {
		t.Fatal(err)
	}
	ms.mu.Lock()
	tm, known := ms.floats.fileMax()
	ms.mu.Unlock()
	if tm != 1009 || !known {
		t.Fatalf("after the flush: fileMax %d, %v; want 1009, true", tm, known)
	}

	if _, err := s.DeleteSeries(ctx, 1005, 1009, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")); err != nil {
		t.Fatal(err)
	}
	ms.mu.Lock()
	tm, known = ms.floats.fileMax()
	ms.mu.Unlock()
	if tm != 1009 || known {
		t.Fatalf("after deleting [1005, 1009]: fileMax %d, %v; want 1009, false", tm, known)
	}
}
