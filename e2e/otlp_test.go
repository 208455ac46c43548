package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// The exponential histogram instrument's View: base 2 (scale 0, which the
// SDK never raises), so the bucket of every recorded value is known exactly.
const (
	expHistName  = "e2e.latency.exp"
	expHistScale = 0
)

// What acta-remote answers (partial_success) for exponential histogram data
// points while its store has no native histograms (otlp/receiver.go).
const expHistRejected = "exponential histograms are not stored: the store has no native histograms"

// TestOTLPExportersThroughRemoteRead sends metrics with the OpenTelemetry Go
// SDK's own OTLP exporters — otlpmetrichttp (protobuf, gzip) and
// otlpmetricgrpc (insecure) — to a real acta-remote, two collections each,
// and reads every series back through remote read (SAMPLES). Names, label
// sets, float bits and millisecond timestamps must be exactly what
// Prometheus's OTLP translation makes of what the SDK sent, computed here
// from the recorded measurements. The exponential histogram must either come
// back as an equal native histogram or be reported rejected, precisely, in
// partial_success (and then not be stored at all).
//
// With ACTA_E2E_BACKEND=prometheus the same expectations are checked against
// Prometheus 3.16's own OTLP receiver and remote read (HTTP only; native
// histograms compared modulo its TSDB's bucket recoding and reset hints).
func TestOTLPExportersThroughRemoteRead(t *testing.T) {
	// The SDK merges these into the resource; they must not leak in.
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")

	tmp := t.TempDir()
	addrs := distinctAddrs(t, 2)
	httpAddr, grpcAddr := addrs[0], addrs[1]
	logPath := filepath.Join(tmp, "backend.log")
	// ACTA_E2E_BACKEND=prometheus checks the harness and its expectations
	// (exponential histograms stored as native histograms included) against
	// Prometheus's own OTLP receiver and remote read; HTTP only, as
	// Prometheus has no OTLP gRPC.
	prom := os.Getenv("ACTA_E2E_BACKEND") == "prometheus"
	name, bin, urlPath := "acta-remote", "", "/v1/metrics"
	var args []string
	if prom {
		cfg := filepath.Join(tmp, "prometheus.yml")
		if err := os.WriteFile(cfg, []byte("global: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		name, bin, urlPath = "prometheus-receiver", prometheusBinary(t), "/api/v1/otlp/v1/metrics"
		args = []string{"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(tmp, "data"),
			"--web.listen-address=" + httpAddr, "--web.enable-otlp-receiver"}
	} else {
		bin = buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
		cfg := filepath.Join(tmp, "acta.yaml")
		if err := os.WriteFile(cfg, []byte("otlp:\n  grpc:\n    enabled: true\n    listen_address: "+grpcAddr+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"serve", "--config", cfg, "--listen", httpAddr, "--data-dir", filepath.Join(tmp, "data")}
	}
	started := time.Now()
	p := startProcess(t, t, name, logPath, bin, args...)
	waitReady(t, p, "http://"+httpAddr+"/-/ready", 20*time.Second)
	t.Logf("%s ready in %s (HTTP %s, OTLP gRPC %s)", name, time.Since(started).Round(time.Millisecond), httpAddr, grpcAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	transports := []struct {
		name string
		new  func(ctx context.Context) (sdkmetric.Exporter, error)
	}{
		{"http", func(ctx context.Context) (sdkmetric.Exporter, error) {
			return otlpmetrichttp.New(ctx,
				otlpmetrichttp.WithEndpoint(httpAddr),
				otlpmetrichttp.WithInsecure(),
				otlpmetrichttp.WithURLPath(urlPath),
				otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression),
				otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
				otlpmetrichttp.WithTimeout(10*time.Second))
		}},
		{"grpc", func(ctx context.Context) (sdkmetric.Exporter, error) {
			return otlpmetricgrpc.New(ctx,
				otlpmetricgrpc.WithEndpoint(grpcAddr),
				otlpmetricgrpc.WithInsecure(),
				otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}),
				otlpmetricgrpc.WithTimeout(10*time.Second))
		}},
	}
	if prom {
		transports = transports[:1]
	}
	var expStored []bool
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			exp, err := tr.new(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := exp.Shutdown(context.Background()); err != nil {
					t.Errorf("exporter shutdown: %v", err)
				}
			}()
			stored := runOTLPExporter(ctx, t, "http://"+httpAddr, tr.name, exp, prom)
			expStored = append(expStored, stored)
		})
	}
	if len(expStored) == 2 && expStored[0] != expStored[1] {
		t.Errorf("exponential histograms stored over HTTP: %v, over gRPC: %v; want the same behaviour", expStored[0], expStored[1])
	}

	if prom && len(expStored) > 0 && !expStored[0] {
		t.Error("Prometheus rejected the exponential histogram")
	}
	if err := p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Errorf("%s on SIGTERM: %v, want exit 0", name, err)
	}
	checkLog(t, logPath)
	t.Logf("whole test %s", time.Since(started).Round(time.Millisecond))
}

// runOTLPExporter records two batches of measurements through one
// MeterProvider (a ManualReader, so the test decides when data points are
// taken), exports each collection with exp, and checks what remote read
// returns for the transport's job. It reports whether the server stored the
// exponential histogram.
func runOTLPExporter(ctx context.Context, t *testing.T, base, transport string, exp sdkmetric.Exporter, prom bool) (expStored bool) {
	job := "e2e/otlp-" + transport
	instance := "instance-" + transport + "-1"
	res := resource.NewSchemaless(
		attribute.String("service.namespace", "e2e"),
		attribute.String("service.name", "otlp-"+transport),
		attribute.String("service.instance.id", instance),
		attribute.String("deployment.environment.name", "test"),
		attribute.String("host.name", "loopback-"+transport),
	)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(reader),
		sdkmetric.WithResource(res),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Name: expHistName},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: expHistScale}},
		)),
	)
	defer func() { _ = mp.Shutdown(context.Background()) }()
	meter := mp.Meter("acta-remote/e2e", metric.WithInstrumentationVersion("0.1.0"))
	m := newOTLPModel(t, meter)

	get := attribute.NewSet(attribute.String("http.method", "GET"))
	post := attribute.NewSet(attribute.String("http.method", "POST"))
	none := *attribute.EmptySet()
	route := attribute.NewSet(attribute.String("http.route", "/api"))
	batches := []func(){
		func() {
			m.add(ctx, "e2e.requests", get, 3)
			m.add(ctx, "e2e.requests", post, 1)
			m.add(ctx, "e2e.sent", none, 0.1)
			m.add(ctx, "e2e.sent", none, 0.2)
			m.add(ctx, "e2e.queue.depth", none, 5)
			m.add(ctx, "e2e.queue.depth", none, -2)
			m.add(ctx, "e2e.load", none, 0.25)
			for _, v := range []float64{0.003, 0.05, 0.1, 0.7, 3.5} {
				m.add(ctx, "e2e.request.duration", route, v)
			}
			for _, v := range []float64{1.5, 3, 0} {
				m.add(ctx, expHistName, none, v)
			}
		},
		func() {
			m.add(ctx, "e2e.requests", get, 2)
			m.add(ctx, "e2e.sent", none, 0.7)
			m.add(ctx, "e2e.queue.depth", none, -4)
			m.add(ctx, "e2e.load", none, 0.875)
			for _, v := range []float64{2.5, 0.0049, 1e-9} {
				m.add(ctx, "e2e.request.duration", route, v)
			}
			for _, v := range []float64{6.5, 1.25, 1.75} {
				m.add(ctx, expHistName, none, v)
			}
		},
	}

	want := map[string]*prompb.TimeSeries{}
	var wantHists []expSample // the exponential histogram, if stored
	var first, last int64
	for i, record := range batches {
		if i > 0 {
			time.Sleep(20 * time.Millisecond) // distinct millisecond timestamps
		}
		record()
		var rm metricdata.ResourceMetrics
		before := time.Now()
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		if !rm.Resource.Equal(res) {
			t.Fatalf("the SDK's resource is %v, want %v", rm.Resource.Attributes(), res.Attributes())
		}
		points, lo, hi := m.expect(t, &rm, before, after, job, instance, want)
		wantHists = append(wantHists, points...)
		if i == 0 {
			first = lo
		}
		last = hi
		// target_info: one sample at the earliest and one at the latest data
		// point of the export (same millisecond: one), value 1.
		ti := seriesOf(want, map[string]string{
			"__name__": "target_info", "job": job, "instance": instance,
			"deployment_environment_name": "test", "host_name": "loopback-" + transport,
		})
		ti.Samples = append(ti.Samples, prompb.Sample{Timestamp: lo, Value: 1})
		if hi != lo {
			ti.Samples = append(ti.Samples, prompb.Sample{Timestamp: hi, Value: 1})
		}

		sent := time.Now()
		err := exp.Export(ctx, &rm)
		elapsed := time.Since(sent)
		total := countDataPoints(&rm)
		var stored bool
		switch {
		case err == nil:
			stored = true
		case err.Error() == fmt.Sprintf("failed to upload metrics: OTLP partial success: %d of %d data points rejected: %s (%d metric data points rejected)", 1, total, expHistRejected, 1):
			stored = false
		default:
			t.Fatalf("export %d (%d data points) over %s: %v", i+1, total, transport, err)
		}
		if i > 0 && stored != expStored {
			t.Fatalf("export %d: exponential histogram stored: %v, but %v in the export before (%v)", i+1, stored, expStored, err)
		}
		expStored = stored
		t.Logf("%s export %d: %d data points in %s; exponential histogram stored: %v (%v)", transport, i+1, total, elapsed.Round(time.Microsecond), expStored, err)
	}
	if expStored {
		s := seriesOf(want, map[string]string{"__name__": "e2e_latency_exp_milliseconds", "job": job, "instance": instance})
		for _, h := range wantHists {
			s.Histograms = append(s.Histograms, prompb.FromIntHistogram(h.t, h.h))
		}
	}

	got, err := remoteReadSamples(ctx, base, first-60_000, last+60_000,
		prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "job", Value: job})
	if err != nil {
		t.Fatal(err)
	}
	var norm func(prompb.Histogram) prompb.Histogram
	if prom {
		// Prometheus's TSDB recodes a chunk's earlier histograms to the
		// bucket layout of later ones (adding empty buckets) and knows a
		// later sample in a chunk is no counter reset: the same histograms.
		norm = func(h prompb.Histogram) prompb.Histogram {
			ih := h.ToIntHistogram().Compact(0)
			if ih.CounterResetHint == histogram.NotCounterReset {
				ih.CounterResetHint = histogram.UnknownCounterReset
			}
			return prompb.FromIntHistogram(h.Timestamp, ih)
		}
	}
	for _, d := range diffTimeSeries(want, got, norm) {
		t.Error(d)
	}
	if !t.Failed() {
		n := 0
		for _, s := range want {
			n += len(s.Samples) + len(s.Histograms)
		}
		t.Logf("%s: remote read returned the %d expected series (%d samples) exactly", transport, len(want), n)
	}
	return expStored
}

// otlpModel records measurements through the SDK and keeps, independently,
// what the SDK's cumulative aggregations must hold: sums added in recording
// order (the SDK adds in the same order, so float bits agree), the last
// gauge value, histogram buckets.
type otlpModel struct {
	t     *testing.T
	insts map[string]*modelInst
	order []string
}

type instKind int

const (
	kindCounter instKind = iota
	kindUpDown
	kindGauge
	kindHistogram
	kindExpHistogram
)

type modelInst struct {
	kind     instKind
	promName string // the Prometheus family name (before _bucket/_sum/_count)
	bounds   []float64
	record   func(context.Context, float64, attribute.Set)
	points   map[attribute.Distinct]*modelPoint
}

type modelPoint struct {
	attrs  attribute.Set
	value  float64 // sum or last value
	count  uint64
	counts []uint64         // explicit buckets, len(bounds)+1
	zero   uint64           // exponential: values == 0
	pos    map[int32]uint64 // exponential: OTLP bucket index -> count
}

func newOTLPModel(t *testing.T, meter metric.Meter) *otlpModel {
	m := &otlpModel{t: t, insts: map[string]*modelInst{}}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := func(name string, in *modelInst) {
		in.points = map[attribute.Distinct]*modelPoint{}
		m.insts[name] = in
		m.order = append(m.order, name)
	}
	requests, err := meter.Int64Counter("e2e.requests", metric.WithUnit("{request}"))
	must(err)
	reg("e2e.requests", &modelInst{kind: kindCounter, promName: "e2e_requests_total",
		record: func(ctx context.Context, v float64, a attribute.Set) {
			requests.Add(ctx, int64(v), metric.WithAttributeSet(a))
		}})
	sent, err := meter.Float64Counter("e2e.sent", metric.WithUnit("By"))
	must(err)
	reg("e2e.sent", &modelInst{kind: kindCounter, promName: "e2e_sent_bytes_total",
		record: func(ctx context.Context, v float64, a attribute.Set) { sent.Add(ctx, v, metric.WithAttributeSet(a)) }})
	depth, err := meter.Int64UpDownCounter("e2e.queue.depth")
	must(err)
	reg("e2e.queue.depth", &modelInst{kind: kindUpDown, promName: "e2e_queue_depth",
		record: func(ctx context.Context, v float64, a attribute.Set) {
			depth.Add(ctx, int64(v), metric.WithAttributeSet(a))
		}})
	load, err := meter.Float64Gauge("e2e.load", metric.WithUnit("1"))
	must(err)
	reg("e2e.load", &modelInst{kind: kindGauge, promName: "e2e_load_ratio",
		record: func(ctx context.Context, v float64, a attribute.Set) { load.Record(ctx, v, metric.WithAttributeSet(a)) }})
	bounds := []float64{0.005, 0.1, 1, 2.5}
	dur, err := meter.Float64Histogram("e2e.request.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(bounds...))
	must(err)
	reg("e2e.request.duration", &modelInst{kind: kindHistogram, promName: "e2e_request_duration_seconds", bounds: bounds,
		record: func(ctx context.Context, v float64, a attribute.Set) { dur.Record(ctx, v, metric.WithAttributeSet(a)) }})
	lat, err := meter.Float64Histogram(expHistName, metric.WithUnit("ms"))
	must(err)
	reg(expHistName, &modelInst{kind: kindExpHistogram, promName: "e2e_latency_exp_milliseconds",
		record: func(ctx context.Context, v float64, a attribute.Set) { lat.Record(ctx, v, metric.WithAttributeSet(a)) }})
	return m
}

// add records v on the instrument name with attributes a, and in the model.
func (m *otlpModel) add(ctx context.Context, name string, a attribute.Set, v float64) {
	in := m.insts[name]
	in.record(ctx, v, a)
	p := in.points[a.Equivalent()]
	if p == nil {
		p = &modelPoint{attrs: a, pos: map[int32]uint64{}}
		if in.kind == kindHistogram {
			p.counts = make([]uint64, len(in.bounds)+1)
		}
		in.points[a.Equivalent()] = p
	}
	switch in.kind {
	case kindCounter, kindUpDown:
		p.value += v
	case kindGauge:
		p.value = v
	case kindHistogram:
		p.value += v
		p.count++
		p.counts[sort.SearchFloat64s(in.bounds, v)]++ // first bound >= v: (lower, upper]
	case kindExpHistogram:
		p.value += v
		p.count++
		if v == 0 {
			p.zero++
			break
		}
		// Scale 0: bucket i holds (2^i, 2^(i+1)]. The test records no exact
		// powers of two, so ceil(log2 v)-1 is the index without rounding doubt.
		if frac, _ := math.Frexp(v); frac == 0.5 {
			m.t.Fatalf("record a value that is not a power of two, not %v", v)
		}
		p.pos[int32(math.Ceil(math.Log2(v)))-1]++
	}
}

type expSample struct {
	t int64
	h *histogram.Histogram
}

// expect checks the SDK's collection rm against the model, then adds the
// series acta-remote must store for it to want (timestamps: the SDK's
// nanoseconds truncated to milliseconds). It returns the exponential
// histogram samples expected if stored, and the earliest and latest data
// point timestamps (ms).
func (m *otlpModel) expect(t *testing.T, rm *metricdata.ResourceMetrics, before, after time.Time, job, instance string, want map[string]*prompb.TimeSeries) (hists []expSample, lo, hi int64) {
	t.Helper()
	found := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			found[mt.Name] = mt
		}
	}
	if len(found) != len(m.insts) {
		t.Fatalf("the SDK collected %d metrics, want %d", len(found), len(m.insts))
	}
	lo, hi = math.MaxInt64, math.MinInt64
	stamp := func(ts time.Time) int64 {
		if ts.Before(before) || ts.After(after) {
			t.Fatalf("data point time %s outside its collection [%s, %s]", ts, before, after)
		}
		ms := ts.UnixNano() / 1e6 // what the server does with OTLP's uint64 nanoseconds
		lo, hi = min(lo, ms), max(hi, ms)
		return ms
	}
	labelsOf := func(name string, a attribute.Set, extra ...string) map[string]string {
		ls := map[string]string{"__name__": name, "job": job, "instance": instance}
		for _, kv := range a.ToSlice() {
			ls[strings.ReplaceAll(string(kv.Key), ".", "_")] = kv.Value.Emit()
		}
		for i := 0; i < len(extra); i += 2 {
			ls[extra[i]] = extra[i+1]
		}
		return ls
	}
	float := func(name string, a attribute.Set, ts time.Time, v float64, extra ...string) {
		s := seriesOf(want, labelsOf(name, a, extra...))
		s.Samples = append(s.Samples, prompb.Sample{Timestamp: stamp(ts), Value: v})
	}
	for _, name := range m.order {
		in := m.insts[name]
		mt, ok := found[name]
		if !ok {
			t.Fatalf("the SDK collected no %s", name)
		}
		type point struct {
			attrs attribute.Set
			time  time.Time
			value float64
		}
		var numbers []point
		switch d := mt.Data.(type) {
		case metricdata.Sum[int64]:
			if d.Temporality != metricdata.CumulativeTemporality || d.IsMonotonic != (in.kind == kindCounter) {
				t.Fatalf("%s: temporality %v, monotonic %v", name, d.Temporality, d.IsMonotonic)
			}
			for _, dp := range d.DataPoints {
				numbers = append(numbers, point{dp.Attributes, dp.Time, float64(dp.Value)})
			}
		case metricdata.Sum[float64]:
			if d.Temporality != metricdata.CumulativeTemporality || d.IsMonotonic != (in.kind == kindCounter) {
				t.Fatalf("%s: temporality %v, monotonic %v", name, d.Temporality, d.IsMonotonic)
			}
			for _, dp := range d.DataPoints {
				numbers = append(numbers, point{dp.Attributes, dp.Time, dp.Value})
			}
		case metricdata.Gauge[float64]:
			for _, dp := range d.DataPoints {
				numbers = append(numbers, point{dp.Attributes, dp.Time, dp.Value})
			}
		case metricdata.Histogram[float64]:
			if d.Temporality != metricdata.CumulativeTemporality || len(d.DataPoints) != len(in.points) {
				t.Fatalf("%s: temporality %v, %d data points", name, d.Temporality, len(d.DataPoints))
			}
			for _, dp := range d.DataPoints {
				p := in.points[dp.Attributes.Equivalent()]
				if p == nil || !slices.Equal(dp.Bounds, in.bounds) || !slices.Equal(dp.BucketCounts, p.counts) ||
					dp.Count != p.count || math.Float64bits(dp.Sum) != math.Float64bits(p.value) {
					t.Fatalf("%s%v: the SDK has bounds %v counts %v count %d sum %v; the model %+v", name, dp.Attributes.ToSlice(), dp.Bounds, dp.BucketCounts, dp.Count, dp.Sum, p)
				}
				ms := stamp(dp.Time)
				add := func(suffix string, v float64, extra ...string) {
					s := seriesOf(want, labelsOf(in.promName+suffix, dp.Attributes, extra...))
					s.Samples = append(s.Samples, prompb.Sample{Timestamp: ms, Value: v})
				}
				add("_sum", p.value)
				add("_count", float64(p.count))
				var cum uint64
				for i, b := range in.bounds {
					cum += p.counts[i]
					add("_bucket", float64(cum), "le", strconv.FormatFloat(b, 'f', -1, 64))
				}
				add("_bucket", float64(p.count), "le", "+Inf")
			}
			continue
		case metricdata.ExponentialHistogram[float64]:
			if d.Temporality != metricdata.CumulativeTemporality || len(d.DataPoints) != len(in.points) {
				t.Fatalf("%s: temporality %v, %d data points", name, d.Temporality, len(d.DataPoints))
			}
			for _, dp := range d.DataPoints {
				p := in.points[dp.Attributes.Equivalent()]
				if p == nil {
					t.Fatalf("%s%v: not recorded", name, dp.Attributes.ToSlice())
				}
				// The model's dense bucket run from the lowest index.
				var idx []int32
				for i := range p.pos {
					idx = append(idx, i)
				}
				slices.Sort(idx)
				var counts []uint64
				for i := idx[0]; i <= idx[len(idx)-1]; i++ {
					counts = append(counts, p.pos[i])
				}
				if dp.Scale != expHistScale || dp.ZeroCount != p.zero || dp.Count != p.count ||
					math.Float64bits(dp.Sum) != math.Float64bits(p.value) || len(dp.NegativeBucket.Counts) != 0 ||
					dp.PositiveBucket.Offset != idx[0] || !slices.Equal(dp.PositiveBucket.Counts, counts) {
					t.Fatalf("%s: the SDK has scale %d zero %d count %d sum %v positive %d/%v negative %v; the model zero %d count %d sum %v offset %d counts %v",
						name, dp.Scale, dp.ZeroCount, dp.Count, dp.Sum, dp.PositiveBucket.Offset, dp.PositiveBucket.Counts, dp.NegativeBucket.Counts,
						p.zero, p.count, p.value, idx[0], counts)
				}
				// As Prometheus converts it: schema = scale, native bucket
				// index = OTLP index + 1, zero threshold 1e-128, one span
				// (the test's buckets have no empty gaps), deltas.
				h := &histogram.Histogram{
					CounterResetHint: histogram.UnknownCounterReset,
					Schema:           expHistScale,
					ZeroThreshold:    1e-128,
					ZeroCount:        p.zero,
					Count:            p.count,
					Sum:              p.value,
					PositiveSpans:    []histogram.Span{{Offset: idx[0] + 1, Length: uint32(len(counts))}},
				}
				var prev int64
				for _, c := range counts {
					if c == 0 {
						t.Fatalf("%s: recorded values leave an empty bucket in %v; the expected layout assumes none", name, counts)
					}
					h.PositiveBuckets = append(h.PositiveBuckets, int64(c)-prev)
					prev = int64(c)
				}
				hists = append(hists, expSample{t: stamp(dp.Time), h: h})
			}
			continue
		default:
			t.Fatalf("%s: unexpected aggregation %T", name, mt.Data)
		}
		if len(numbers) != len(in.points) {
			t.Fatalf("%s: the SDK has %d data points, the model %d", name, len(numbers), len(in.points))
		}
		for _, n := range numbers {
			p := in.points[n.attrs.Equivalent()]
			if p == nil || math.Float64bits(n.value) != math.Float64bits(p.value) {
				t.Fatalf("%s%v: the SDK has %v, the model %+v", name, n.attrs.ToSlice(), n.value, p)
			}
			float(in.promName, n.attrs, n.time, p.value)
		}
	}
	return hists, lo, hi
}

func countDataPoints(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				n += len(d.DataPoints)
			case metricdata.Sum[float64]:
				n += len(d.DataPoints)
			case metricdata.Gauge[int64]:
				n += len(d.DataPoints)
			case metricdata.Gauge[float64]:
				n += len(d.DataPoints)
			case metricdata.Histogram[float64]:
				n += len(d.DataPoints)
			case metricdata.ExponentialHistogram[float64]:
				n += len(d.DataPoints)
			}
		}
	}
	return n
}

// seriesOf returns the series with labels ls in m, adding it if new.
func seriesOf(m map[string]*prompb.TimeSeries, ls map[string]string) *prompb.TimeSeries {
	key := labelsString(ls)
	s := m[key]
	if s == nil {
		s = &prompb.TimeSeries{}
		for n, v := range ls {
			s.Labels = append(s.Labels, prompb.Label{Name: n, Value: v})
		}
		slices.SortFunc(s.Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
		m[key] = s
	}
	return s
}

// postRemoteRead sends base's remote read one query [start, end] (ms) of
// ms, accepting only the answer type typ, as Prometheus's client frames it.
func postRemoteRead(ctx context.Context, base string, typ prompb.ReadRequest_ResponseType, start, end int64, ms ...prompb.LabelMatcher) (*http.Response, error) {
	q := &prompb.Query{StartTimestampMs: start, EndTimestampMs: end}
	for i := range ms {
		q.Matchers = append(q.Matchers, &ms[i])
	}
	rr := &prompb.ReadRequest{Queries: []*prompb.Query{q}, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{typ}}
	raw, err := rr.Marshal()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/read", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	return http.DefaultClient.Do(req)
}

// remoteReadSamples asks base's remote read for one query, answer type
// SAMPLES, and returns the series by labelsString.
func remoteReadSamples(ctx context.Context, base string, start, end int64, ms ...prompb.LabelMatcher) (map[string]*prompb.TimeSeries, error) {
	resp, err := postRemoteRead(ctx, base, prompb.ReadRequest_SAMPLES, start, end, ms...)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("remote read: %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("remote read: Content-Type %q, want application/x-protobuf (SAMPLES)", ct)
	}
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("remote read: snappy: %v", err)
	}
	var rresp prompb.ReadResponse
	if err := rresp.Unmarshal(dec); err != nil {
		return nil, fmt.Errorf("remote read: %v", err)
	}
	if len(rresp.Results) != 1 {
		return nil, fmt.Errorf("remote read: %d results for 1 query", len(rresp.Results))
	}
	out := map[string]*prompb.TimeSeries{}
	for _, s := range rresp.Results[0].Timeseries {
		ls := map[string]string{}
		for _, l := range s.Labels {
			ls[l.Name] = l.Value
		}
		key := labelsString(ls)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("remote read: series %s twice", key)
		}
		out[key] = s
	}
	return out, nil
}

// diffTimeSeries lists how got differs from want: missing or extra series,
// labels out of order, samples (float bits and ms timestamps) and native
// histograms (every field, compared after norm if not nil).
func diffTimeSeries(want, got map[string]*prompb.TimeSeries, norm func(prompb.Histogram) prompb.Histogram) []string {
	var out []string
	keys := func(m map[string]*prompb.TimeSeries) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	for _, k := range keys(want) {
		w, g := want[k], got[k]
		if g == nil {
			out = append(out, fmt.Sprintf("missing series %s (want %d samples, %d histograms)", k, len(w.Samples), len(w.Histograms)))
			continue
		}
		if !slices.EqualFunc(w.Labels, g.Labels, func(a, b prompb.Label) bool { return a.Name == b.Name && a.Value == b.Value }) {
			out = append(out, fmt.Sprintf("%s: labels %v, want %v (sorted by name)", k, g.Labels, w.Labels))
		}
		if !slices.EqualFunc(w.Samples, g.Samples, func(a, b prompb.Sample) bool {
			return a.Timestamp == b.Timestamp && math.Float64bits(a.Value) == math.Float64bits(b.Value)
		}) {
			out = append(out, fmt.Sprintf("%s: samples %s, want %s", k, fmtSamples(g.Samples), fmtSamples(w.Samples)))
		}
		if len(w.Histograms) != len(g.Histograms) {
			out = append(out, fmt.Sprintf("%s: %d histograms, want %d: got %v", k, len(g.Histograms), len(w.Histograms), g.Histograms))
			continue
		}
		for i := range w.Histograms {
			wh, gh := w.Histograms[i], g.Histograms[i]
			if norm != nil {
				wh, gh = norm(wh), norm(gh)
			}
			wb, _ := wh.Marshal()
			gb, _ := gh.Marshal()
			if !bytes.Equal(wb, gb) {
				out = append(out, fmt.Sprintf("%s: histogram %d is\n  %s\nwant\n  %s", k, i, g.Histograms[i].String(), w.Histograms[i].String()))
			}
		}
	}
	for _, k := range keys(got) {
		if want[k] == nil {
			out = append(out, fmt.Sprintf("unexpected series %s: %s, %d histograms", k, fmtSamples(got[k].Samples), len(got[k].Histograms)))
		}
	}
	return out
}

func fmtSamples(ss []prompb.Sample) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v@%d(%#x)", s.Value, s.Timestamp, math.Float64bits(s.Value))
	}
	b.WriteByte(']')
	return b.String()
}
