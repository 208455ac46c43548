//go:build !otlpfuzz

package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/acta-remote/acta-remote/actastore"
)

// TestSDKExemplarsThroughStore records measurements inside sampled spans
// with the OpenTelemetry Go SDK, exports them with its own OTLP/HTTP
// exporter (protobuf, gzip) to a receiver over loopback HTTP and the real
// store, under every delta_temporality (the SDK sends cumulative or delta
// as asked), and reads the exemplars back with SelectExemplars, before and
// after reopening the store. They must be exactly Prometheus v0.316.0's
// for the request the exporter sent (FromMetrics on the captured body),
// and exactly the trace IDs, span IDs, values and times (in ms) the SDK
// collected on its counters, up-down counters and histograms; the gauge's
// exemplars are dropped, as Prometheus drops them.
func TestSDKExemplarsThroughStore(t *testing.T) {
	for _, mode := range []DeltaMode{DeltaReject, DeltaConvert, DeltaNative} {
		t.Run(string(mode), func(t *testing.T) { sdkExemplars(t, mode) })
	}
}

func sdkExemplars(t *testing.T, mode DeltaMode) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	dir := t.TempDir()
	st, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DeltaTemporality = mode
	rcv, err := New(cfg, st, discardLogger, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	// Keep each request as sent, for the reference translation.
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Errorf("the exporter's body is not gzip: %v", err)
			return
		}
		raw, _ := io.ReadAll(zr)
		bodies = append(bodies, raw)
		rcv.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()

	temporality := sdkmetric.DefaultTemporalitySelector
	if mode != DeltaReject {
		temporality = func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
	}
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(srv.URL+"/v1/metrics"),
		otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression), otlpmetrichttp.WithTemporalitySelector(temporality),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(temporality))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "sdk"), attribute.String("service.instance.id", "i-1"))),
		// Only http.route stays on the series: user goes to the exemplars'
		// filtered attributes.
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "*"}, sdkmetric.Stream{
			AttributeFilter: attribute.NewAllowKeysFilter("http.route"),
		})),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "size"}, sdkmetric.Stream{
			Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 40, MaxScale: 2},
		})))
	defer mp.Shutdown(ctx)
	meter := mp.Meter("e2e")
	requests, _ := meter.Int64Counter("requests")
	inflight, _ := meter.Float64UpDownCounter("inflight")
	latency, _ := meter.Float64Histogram("latency", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	size, _ := meter.Float64Histogram("size", metric.WithUnit("By"))
	load, _ := meter.Float64Gauge("load")

	span := func(n byte) context.Context {
		return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{n, 0xee, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, SpanID: trace.SpanID{n, 0xee, 2, 3, 4, 5, 6, 7},
			TraceFlags: trace.FlagsSampled,
		}))
	}
	route := metric.WithAttributes(attribute.String("http.route", "/a"), attribute.String("user", "u7"))
	var collected []metricdata.ResourceMetrics
	for round := range 2 {
		n := byte(0x10 * (round + 1))
		requests.Add(span(n+1), 2, route)
		inflight.Add(span(n+2), 1.5, route)
		latency.Record(span(n+3), 0.05, route)
		latency.Record(span(n+4), 0.5, route)
		latency.Record(span(n+5), 7, route)
		size.Record(span(n+6), 3, route)
		load.Record(span(n+7), 0.25, route)
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		if err := exp.Export(ctx, &rm); err != nil {
			t.Fatalf("export %d: %v", round+1, err)
		}
		collected = append(collected, rm)
		time.Sleep(5 * time.Millisecond) // the second round's exemplars at later ms
	}

	// The reference: Prometheus's translation of the requests as sent.
	ref := &promAppender{}
	native := cfg
	native.DeltaTemporality = DeltaNative // what Prometheus stores of each point's exemplars
	for _, b := range bodies {
		req, err := protoEncoder{}.unmarshalRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		p, err := prometheusTranslate(t, req.Metrics(), native)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.exemplars {
			for i := range ref.exemplars {
				if labels.Equal(ref.exemplars[i].Labels, s.Labels) {
					ref.exemplars[i].Exemplars = append(ref.exemplars[i].Exemplars, s.Exemplars...)
					s.Exemplars = nil
				}
			}
			if s.Exemplars != nil {
				ref.exemplars = append(ref.exemplars, s)
			}
		}
	}
	// What the SDK collected, as (trace, span, value, ms) lines.
	var sdkLines []string
	for _, rm := range collected {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				add := func(es []metricdata.Exemplar[float64]) {
					for _, e := range es {
						sdkLines = append(sdkLines, fmt.Sprintf("%s %s %v %d", hex.EncodeToString(e.TraceID), hex.EncodeToString(e.SpanID), e.Value, e.Time.UnixNano()/1e6))
					}
				}
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, dp := range d.DataPoints {
						for _, e := range dp.Exemplars {
							sdkLines = append(sdkLines, fmt.Sprintf("%s %s %v %d", hex.EncodeToString(e.TraceID), hex.EncodeToString(e.SpanID), float64(e.Value), e.Time.UnixNano()/1e6))
						}
					}
				case metricdata.Sum[float64]:
					for _, dp := range d.DataPoints {
						add(dp.Exemplars)
					}
				case metricdata.Histogram[float64]:
					for _, dp := range d.DataPoints {
						add(dp.Exemplars)
					}
				case metricdata.ExponentialHistogram[float64]:
					for _, dp := range d.DataPoints {
						add(dp.Exemplars)
					}
				case metricdata.Gauge[float64]:
					if len(d.DataPoints) == 0 || len(d.DataPoints[0].Exemplars) == 0 {
						t.Fatal("the SDK recorded no gauge exemplar: the test would not see it dropped")
					}
				}
			}
		}
	}
	sort.Strings(sdkLines)
	if len(sdkLines) != 2*6 {
		t.Fatalf("the SDK collected %d exemplars, want 12: %q", len(sdkLines), sdkLines)
	}

	check := func(when string, st *actastore.Store) {
		t.Helper()
		got, err := st.SelectExemplars(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
		if err != nil {
			t.Fatal(err)
		}
		var extras []actastore.SeriesExtras
		var lines []string
		for _, s := range got {
			extras = append(extras, actastore.SeriesExtras{Labels: s.Labels, Exemplars: s.Exemplars})
			for _, e := range s.Exemplars {
				if e.Labels.Get("user") != "u7" || e.Labels.Len() != 3 {
					t.Errorf("%s: exemplar labels %s, want trace_id, span_id and the filtered user", when, e.Labels)
				}
				lines = append(lines, fmt.Sprintf("%s %s %v %d", e.Labels.Get(traceIDLabel), e.Labels.Get(spanIDLabel), e.Value, e.T))
			}
		}
		sort.Strings(lines)
		diffLines(t, when+": exemplars vs Prometheus's", formatExemplars(extras), formatExemplars(ref.exemplars))
		diffLines(t, when+": exemplars vs the SDK's", lines, sdkLines)
	}
	check("stored", st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("after reopening", st)
}
