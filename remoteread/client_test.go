package remoteread

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// Remote (Prometheus's remote-read client) against this package's
// handler: every series comes back sorted, floats bit for bit (stale
// marker included), histograms with their times, counts and sums; the
// local-only header is sent when asked for; a failing endpoint is an
// error the set reports before any series.
func TestRemoteQuerier(t *testing.T) {
	want := histCaseSeries()
	var header string
	h := New(&histQuerier{series: want}, Limits{MaxBodyBytes: 1 << 20, MaxDecodedBytes: 1 << 22, MaxSamplesPerQuery: 1e6,
		MaxSeriesPerQuery: 1000, MaxConcurrent: 2, MaxBytesPerFrame: 1 << 20}, nil, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get(LocalOnlyHeader)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	rq, err := NewRemote("t", srv.URL+"/api/v1/read", RemoteOptions{Timeout: 10 * time.Second, LocalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	set := rq.Select(context.Background(), 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	i := 0
	for set.Next() {
		s := set.At().(actastore.HistogramSeries)
		w := want[i]
		i++
		if !labels.Equal(s.Labels(), w.lset) {
			t.Fatalf("series %d: %s, want %s", i, s.Labels(), w.lset)
		}
		var fs []actastore.Sample
		it := s.Iterator()
		for it.Next() {
			ts, v := it.At()
			fs = append(fs, actastore.Sample{T: ts, V: v})
		}
		if len(fs) != len(w.floats) {
			t.Fatalf("%s: %d floats, want %d", w.lset, len(fs), len(w.floats))
		}
		for k := range fs {
			if fs[k].T != w.floats[k].T || math.Float64bits(fs[k].V) != math.Float64bits(w.floats[k].V) {
				t.Fatalf("%s float %d: %v, want %v", w.lset, k, fs[k], w.floats[k])
			}
		}
		hit := s.HistogramIterator()
		k := 0
		for hit.Next() {
			g, e := hit.At(), w.hists[k]
			k++
			gc, gs := histCountSum(g)
			ec, es := histCountSum(e)
			if g.T != e.T || gc != ec || math.Float64bits(gs) != math.Float64bits(es) {
				t.Fatalf("%s histogram %d: t %d count %v sum %x, want %d %v %x", w.lset, k, g.T, gc, math.Float64bits(gs), e.T, ec, math.Float64bits(es))
			}
		}
		if k != len(w.hists) {
			t.Fatalf("%s: %d histograms, want %d", w.lset, k, len(w.hists))
		}
	}
	if err := set.Err(); err != nil || i != len(want) {
		t.Fatalf("%d series of %d: %v", i, len(want), err)
	}
	if header != "1" {
		t.Fatalf("%s header %q", LocalOnlyHeader, header)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	bad, _ := NewRemote("bad", gone.URL+"/api/v1/read", RemoteOptions{Timeout: time.Second})
	set = bad.Select(context.Background(), 0, 1, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
	if f, ok := set.(interface{ Failed() error }); !ok || f.Failed() == nil {
		t.Fatal("a failing endpoint: no error before the series")
	}
}

func histCountSum(s actastore.HistogramSample) (float64, float64) {
	if s.FH != nil {
		return s.FH.Count, s.FH.Sum
	}
	return float64(s.H.Count), s.H.Sum
}
