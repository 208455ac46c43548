package actastore

import (
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
)

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openT(t, t.TempDir(), Options{Registerer: reg})
	defer s.Close()
	fill(t, s, want{}, rand.New(rand.NewPCG(1, 1)), 10, 2, 0)
	s.Append(ctx, []SeriesSamples{{Labels: labels.FromStrings("job", "no name"), Samples: []Sample{{1, 1}}}})
	if got := testutil.ToFloat64(s.m.appended); got != 20 {
		t.Fatalf("appended %v", got)
	}
	if got := testutil.ToFloat64(s.m.rejected.WithLabelValues(ReasonInvalidSeries)); got != 1 {
		t.Fatalf("rejected %v", got)
	}
	if got := testutil.ToFloat64(s.m.headSamples); got != 20 {
		t.Fatalf("head samples %v", got)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(s.m.flushedSamples); got != 20 {
		t.Fatalf("flushed %v", got)
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil || n < 14 {
		t.Fatalf("gathered %d metrics: %v", n, err)
	}
	// A second store on the same registry is refused, not a panic.
	if _, err := Open(t.TempDir(), Options{Registerer: reg}); err == nil {
		t.Fatal("second registration succeeded")
	}
}
