package queryapi

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// The test data: what a Prometheus scraping a few targets every 15 s for an
// hour would hold, written into the store and into Prometheus's own TSDB
// alike, so that PromQL over both can be compared.
const (
	fixT0       = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	fixStep     = int64(15_000)
	fixScrapes  = 240 // one hour
	fixDuration = fixStep * fixScrapes
)

var staleNaN = math.Float64frombits(value.StaleNaN)

// fixture is the data set: float series and histogram series, each sorted
// by labels, samples in timestamp order.
type fixture struct {
	floats []actastore.SeriesSamples
	hists  []actastore.SeriesExtras
	// Exemplars of two counter series, and metric families' metadata:
	// the store only (the engine comparison does not read them).
	exemplars []actastore.SeriesExtras
	meta      []actastore.NamedMetadata
}

// scrapeT is scrape i's timestamp, with the few ms of jitter real scrapes
// have (a deterministic function of the series and i).
func scrapeT(series, i int) int64 {
	return fixT0 + int64(i)*fixStep + int64((series*7+i*13)%11)
}

func newFixture() *fixture {
	rng := rand.New(rand.NewPCG(1, 2))
	f := &fixture{}
	n := 0
	addFloats := func(lset labels.Labels, gen func(i int) (float64, bool)) {
		n++
		s := actastore.SeriesSamples{Labels: lset}
		for i := 0; i < fixScrapes; i++ {
			if v, ok := gen(i); ok {
				s.Samples = append(s.Samples, actastore.Sample{T: scrapeT(n, i), V: v})
			}
		}
		f.floats = append(f.floats, s)
	}
	for _, inst := range []string{"a:9100", "b:9100", "c:9100"} {
		for _, code := range []string{"200", "404", "500"} {
			// Counters growing by random amounts; instance b restarts
			// at scrape 120 (a counter reset).
			c := 0.0
			addFloats(labels.FromStrings("__name__", "qa_requests_total", "job", "api", "instance", inst, "code", code), func(i int) (float64, bool) {
				if inst == "b:9100" && i == 120 {
					c = 0
				}
				c += float64(rng.IntN(50)) + rng.Float64()
				return c, true
			})
		}
		// A gauge with decimals, a NaN and an infinity.
		addFloats(labels.FromStrings("__name__", "qa_temperature_celsius", "job", "api", "instance", inst), func(i int) (float64, bool) {
			switch i {
			case 77:
				return math.NaN(), true
			case 150:
				return math.Inf(1), true
			}
			return 20 + 5*math.Sin(float64(i)/10) + math.Round(rng.Float64()*100)/100, true
		})
		// A classic histogram: cumulative buckets, _sum, _count.
		var buckets [4]float64
		var sum, count float64
		les := []string{"0.1", "0.5", "1", "+Inf"}
		obs := func(i int) {
			for range 5 {
				x := rng.ExpFloat64() / 3
				sum += x
				count++
				for j, le := range []float64{0.1, 0.5, 1, math.Inf(1)} {
					if x <= le {
						buckets[j]++
					}
				}
			}
		}
		series := make([]actastore.SeriesSamples, 0, 6)
		for _, le := range les {
			series = append(series, actastore.SeriesSamples{Labels: labels.FromStrings("__name__", "qa_latency_seconds_bucket", "job", "api", "instance", inst, "le", le)})
		}
		series = append(series,
			actastore.SeriesSamples{Labels: labels.FromStrings("__name__", "qa_latency_seconds_sum", "job", "api", "instance", inst)},
			actastore.SeriesSamples{Labels: labels.FromStrings("__name__", "qa_latency_seconds_count", "job", "api", "instance", inst)})
		n++
		for i := 0; i < fixScrapes; i++ {
			obs(i)
			t := scrapeT(n, i)
			for j := range les {
				series[j].Samples = append(series[j].Samples, actastore.Sample{T: t, V: buckets[j]})
			}
			series[4].Samples = append(series[4].Samples, actastore.Sample{T: t, V: sum})
			series[5].Samples = append(series[5].Samples, actastore.Sample{T: t, V: count})
		}
		f.floats = append(f.floats, series...)
	}
	// Pods that come and go: each lives for a window, then gets a stale
	// marker at the next scrape, as Prometheus writes when a target goes.
	for p := range 6 {
		from, to := p*40, p*40+60
		addFloats(labels.FromStrings("__name__", "qa_pod_memory_bytes", "job", "kube", "pod", fmt.Sprintf("pod-%d", p)), func(i int) (float64, bool) {
			switch {
			case i < from || i > to:
				return 0, false
			case i == to:
				return staleNaN, true
			}
			return float64(1<<20*(p+1)) + float64(rng.IntN(4096)), true
		})
	}
	// One series scraped every 60 s only: lookback and rate extrapolation.
	addFloats(labels.FromStrings("__name__", "qa_slow_gauge", "job", "batch"), func(i int) (float64, bool) {
		return float64(i/4) * 1.5, i%4 == 0
	})
	// The up series of every target.
	for _, inst := range []string{"a:9100", "b:9100", "c:9100"} {
		addFloats(labels.FromStrings("__name__", "up", "job", "api", "instance", inst), func(i int) (float64, bool) {
			if inst == "c:9100" && i >= 200 {
				return 0, true
			}
			return 1, true
		})
	}

	// Native histograms: a counter histogram per instance (exponential
	// schema 1, growing, instance b resetting and changing schema), a float
	// gauge histogram, and a histogram series that goes stale.
	for k, inst := range []string{"a:9100", "b:9100"} {
		var s actastore.SeriesExtras
		s.Labels = labels.FromStrings("__name__", "qa_native_seconds", "job", "api", "instance", inst)
		var pos [4]int64
		var zero uint64
		var sum float64
		schema := int32(1)
		for i := 0; i < fixScrapes; i++ {
			if inst == "b:9100" && i == 100 {
				pos, zero, sum, schema = [4]int64{}, 0, 0, 0
			}
			for j := range pos {
				pos[j] += int64(rng.IntN(4))
			}
			zero += uint64(rng.IntN(2))
			sum += rng.Float64() * 3
			h := &histogram.Histogram{Schema: schema, ZeroThreshold: 1e-128, ZeroCount: zero, Sum: sum,
				PositiveSpans: []histogram.Span{{Offset: -1, Length: 2}, {Offset: 1, Length: 2}}}
			h.Count = zero
			prev := int64(0)
			for _, c := range pos {
				h.PositiveBuckets = append(h.PositiveBuckets, c-prev)
				prev = c
				h.Count += uint64(c)
			}
			s.Histograms = append(s.Histograms, actastore.HistogramSample{T: scrapeT(100+k, i), H: h})
		}
		f.hists = append(f.hists, s)
	}
	{
		var s actastore.SeriesExtras
		s.Labels = labels.FromStrings("__name__", "qa_native_queue", "job", "api")
		for i := 0; i < fixScrapes; i++ {
			v := 2 + math.Sin(float64(i)/7)
			s.Histograms = append(s.Histograms, actastore.HistogramSample{T: scrapeT(110, i), FH: &histogram.FloatHistogram{
				CounterResetHint: histogram.GaugeType, Schema: 0, ZeroThreshold: 0.001, ZeroCount: v / 4,
				Count: v/4 + 3*v, Sum: 7.5 * v,
				PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{v, v, v},
			}})
		}
		f.hists = append(f.hists, s)
	}
	{
		var s actastore.SeriesExtras
		s.Labels = labels.FromStrings("__name__", "qa_native_seconds", "job", "batch", "instance", "gone")
		for i := 0; i <= 90; i++ {
			h := &histogram.Histogram{Schema: 2, Count: uint64(i), Sum: float64(i) / 2, ZeroCount: uint64(i)}
			if i == 90 {
				h = &histogram.Histogram{Sum: staleNaN}
			}
			s.Histograms = append(s.Histograms, actastore.HistogramSample{T: scrapeT(111, i), H: h})
		}
		f.hists = append(f.hists, s)
	}
	// Every histogram case of the project's round-trip tests.
	for _, c := range histtest.Cases(fixT0) {
		f.hists = append(f.hists, actastore.SeriesExtras{Labels: labels.FromStrings("__name__", c.Name, "job", "cases"), Histograms: c.Samples})
	}
	for _, code := range []string{"200", "500"} {
		x := actastore.SeriesExtras{Labels: labels.FromStrings("__name__", "qa_requests_total", "job", "api", "instance", "a:9100", "code", code)}
		for i := 10; i < fixScrapes; i += 60 {
			x.Exemplars = append(x.Exemplars, actastore.Exemplar{
				Labels: labels.FromStrings("trace_id", fmt.Sprintf("%s-%04d", code, i)), Value: float64(i) / 8, T: fixT0 + int64(i)*fixStep + 123})
		}
		f.exemplars = append(f.exemplars, x)
	}
	f.meta = []actastore.NamedMetadata{
		{Name: "qa_requests_total", Metadata: actastore.Metadata{Type: "counter", Help: "Requests served.", Unit: ""}},
		{Name: "qa_latency_seconds", Metadata: actastore.Metadata{Type: "histogram", Help: "Request latency.", Unit: "seconds"}},
		{Name: "qa_native_seconds", Metadata: actastore.Metadata{Type: "histogram", Help: "Native latency.", Unit: "seconds"}},
		{Name: "qa_temperature_celsius", Metadata: actastore.Metadata{Type: "gauge", Help: "Room temperature.", Unit: "celsius"}},
	}
	slices.SortFunc(f.floats, func(a, b actastore.SeriesSamples) int { return labels.Compare(a.Labels, b.Labels) })
	slices.SortFunc(f.hists, func(a, b actastore.SeriesExtras) int { return labels.Compare(a.Labels, b.Labels) })
	return f
}

// writeStore appends the fixture to the store.
func (f *fixture) writeStore(t testing.TB, st *actastore.Store) {
	t.Helper()
	ctx := context.Background()
	res, err := st.Append(ctx, f.floats)
	if err != nil || res.SamplesRejected > 0 {
		t.Fatalf("store append: %v, %d rejected: %v", err, res.SamplesRejected, res.Errors)
	}
	var b actastore.Batch
	for _, e := range append(slices.Clone(f.hists), f.exemplars...) {
		b.Add(e.Labels, nil, e.Histograms, e.Exemplars)
	}
	for _, m := range f.meta {
		b.AddMetadata(m)
	}
	xr, err := st.Commit(ctx, &b)
	if err != nil || xr.Histograms.Rejected > 0 || xr.Exemplars.Rejected > 0 {
		t.Fatalf("store append histograms: %v, %d rejected, %d exemplars rejected: %v", err, xr.Histograms.Rejected, xr.Exemplars.Rejected, xr.Errors)
	}
}

// writeTSDB appends the fixture to a Prometheus TSDB. Series are created in
// label order, so its postings order (the order the engine iterates
// unsorted selections in) is the store's label order: sums over series
// then add in the same order on both sides.
func (f *fixture) writeTSDB(t testing.TB, db *tsdb.DB) {
	t.Helper()
	type entry struct {
		lset  labels.Labels
		float *actastore.SeriesSamples
		hist  *actastore.SeriesExtras
	}
	var all []entry
	for i := range f.floats {
		all = append(all, entry{lset: f.floats[i].Labels, float: &f.floats[i]})
	}
	for i := range f.hists {
		all = append(all, entry{lset: f.hists[i].Labels, hist: &f.hists[i]})
	}
	slices.SortFunc(all, func(a, b entry) int { return labels.Compare(a.lset, b.lset) })
	app := db.Appender(context.Background())
	for _, e := range all {
		if e.float != nil {
			for _, s := range e.float.Samples {
				if _, err := app.Append(0, e.lset, s.T, s.V); err != nil {
					t.Fatalf("tsdb append %s@%d: %v", e.lset, s.T, err)
				}
			}
			continue
		}
		for _, h := range e.hist.Histograms {
			var err error
			if h.FH != nil {
				_, err = app.AppendHistogram(0, e.lset, h.T, nil, h.FH.Copy())
			} else {
				_, err = app.AppendHistogram(0, e.lset, h.T, h.H.Copy(), nil)
			}
			if err != nil {
				t.Fatalf("tsdb append histogram %s@%d: %v", e.lset, h.T, err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

// openStores returns the store and a Prometheus TSDB holding the fixture.
func openStores(t testing.TB, f *fixture, opts actastore.Options) (*actastore.Store, *tsdb.DB) {
	t.Helper()
	st, err := actastore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.writeStore(t, st)
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.writeTSDB(t, db)
	return st, db
}

func promVersion(v string) v1.PrometheusVersion {
	return v1.PrometheusVersion{Version: v, GoVersion: "go-test"}
}
