package queryapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/acta-remote/acta-remote/actastore"
)

// benchData is n counter series of 12 h at 15 s, in the store (flushed to
// its files) and in a Prometheus TSDB (head chunks, as a Prometheus that
// has run for 12 h holds most of them before compaction).
func benchData(b *testing.B, n int) (*actastore.Store, *tsdb.DB, int64) {
	const scrapes = 12 * 60 * 4
	rng := rand.New(rand.NewPCG(3, 4))
	f := &fixture{}
	for i := range n {
		s := actastore.SeriesSamples{Labels: labels.FromStrings("__name__", "bench_requests_total", "instance", fmt.Sprintf("10.0.%d.%d:8080", i/250, i%250), "job", "bench")}
		v := 0.0
		for k := range scrapes {
			v += float64(rng.IntN(100))
			s.Samples = append(s.Samples, actastore.Sample{T: fixT0 + int64(k)*fixStep + int64(rng.IntN(50)), V: v})
		}
		f.floats = append(f.floats, s)
	}
	st, db := openStores(b, f, actastore.Options{Logger: nil})
	if err := st.FlushAll(); err != nil {
		b.Fatal(err)
	}
	return st, db, fixT0 + scrapes*fixStep
}

// BenchmarkRateRange is the query of a 12 h Grafana panel over 1,000
// series (and over one): rate(x[5m]) at a 60 s step, through Prometheus's
// engine over the store and over Prometheus's own TSDB.
func BenchmarkRateRange(b *testing.B) {
	st, db, end := benchData(b, 1000)
	ng := testEngine()
	for _, q := range []struct{ name, expr string }{
		{"1000series", `rate(bench_requests_total[5m])`},
		{"1series", `rate(bench_requests_total{instance="10.0.1.17:8080"}[5m])`},
	} {
		for _, sys := range []struct {
			name string
			qb   storage.Queryable
		}{{"store", newQueryable(st)}, {"prometheus-tsdb", db}} {
			b.Run(q.name+"/"+sys.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					qry, err := ng.NewRangeQuery(context.Background(), sys.qb, nil, q.expr, time.UnixMilli(fixT0), time.UnixMilli(end), time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					if res := qry.Exec(context.Background()); res.Err != nil {
						b.Fatal(res.Err)
					}
					qry.Close()
				}
			})
		}
	}
}
