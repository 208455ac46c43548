// The comparisons with Prometheus link its config and storage packages,
// whose size makes fuzz minimization crawl; fuzz with -tags otlpfuzz to
// leave them out (see FuzzHandler).

//go:build !otlpfuzz

package otlp

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// hand: names, labels, values and timestamps.
func TestTranslateMatchesPrometheus(t *testing.T) {
	type tcase struct {
		name     string
		cfg      func(*Config)
		md       func() pmetric.Metrics
		want     []string
		rejected int
	}
	job := `instance="pod-1", job="shop/checkout"`
	cases := []tcase{
		{
			name: "gauge with unit, attributes escaped, job and instance, target_info",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addGauge(sm, "process.memory.usage", "By", t0ns, 1234.5, map[string]any{"http.method": "GET", "region": "eu"})
				return md
			},
			want: []string{
				`{__name__="process_memory_usage_bytes", http_method="GET", ` + job + `, region="eu"} 1700000000123 1234.5`,
				targetInfo(t0ms),
			},
		},
		{
			name: "monotonic cumulative sum is a counter with _total; non-monotonic sum is a gauge",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addSum(sm, "http.server.requests", "1", true, pmetric.AggregationTemporalityCumulative, t0ns, 42, map[string]any{"code": 200})
				addSum(sm, "queue.length", "{items}", false, pmetric.AggregationTemporalityCumulative, t0ns, 7, nil)
				addSum(sm, "cpu.time", "s", true, pmetric.AggregationTemporalityCumulative, t0ns, 3, nil)
				return md
			},
			want: []string{
				`{__name__="http_server_requests_total", code="200", ` + job + `} 1700000000123 42`,
				`{__name__="queue_length", ` + job + `} 1700000000123 7`,
				`{__name__="cpu_time_seconds_total", ` + job + `} 1700000000123 3`,
				targetInfo(t0ms),
			},
		},
		{
			name: "classic histogram: _sum, _count, cumulative buckets, +Inf from count",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addHistogram(sm, "http.server.duration", "ms", t0ns, []float64{0.5, 1, 2.5}, []uint64{1, 2, 3, 4}, ptr(17.25), map[string]any{"route": "/cart"})
				addHistogram(sm, "no.sum", "", t0ns, []float64{1, math.Inf(1)}, []uint64{2, 3, 0}, nil, nil)
				return md
			},
			want: []string{
				`{__name__="http_server_duration_milliseconds_sum", ` + job + `, route="/cart"} 1700000000123 17.25`,
				`{__name__="http_server_duration_milliseconds_count", ` + job + `, route="/cart"} 1700000000123 10`,
				`{__name__="http_server_duration_milliseconds_bucket", ` + job + `, le="0.5", route="/cart"} 1700000000123 1`,
				`{__name__="http_server_duration_milliseconds_bucket", ` + job + `, le="1", route="/cart"} 1700000000123 3`,
				`{__name__="http_server_duration_milliseconds_bucket", ` + job + `, le="2.5", route="/cart"} 1700000000123 6`,
				`{__name__="http_server_duration_milliseconds_bucket", ` + job + `, le="+Inf", route="/cart"} 1700000000123 10`,
				// No sum: no _sum series. An explicit +Inf bound is skipped;
				// le="+Inf" is the count.
				`{__name__="no_sum_count", ` + job + `} 1700000000123 5`,
				`{__name__="no_sum_bucket", ` + job + `, le="1"} 1700000000123 2`,
				`{__name__="no_sum_bucket", ` + job + `, le="+Inf"} 1700000000123 5`,
				targetInfo(t0ms),
			},
		},
		{
			name: "summary: _sum, _count, quantiles",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addSummary(sm, "rpc.latency", "s", t0ns, 100, 12.5, [][2]float64{{0.5, 0.1}, {0.99, 0.75}})
				return md
			},
			want: []string{
				`{__name__="rpc_latency_seconds_sum", ` + job + `} 1700000000123 12.5`,
				`{__name__="rpc_latency_seconds_count", ` + job + `} 1700000000123 100`,
				`{__name__="rpc_latency_seconds", ` + job + `, quantile="0.5"} 1700000000123 0.1`,
				`{__name__="rpc_latency_seconds", ` + job + `, quantile="0.99"} 1700000000123 0.75`,
				targetInfo(t0ms),
			},
		},
		{
			name: "NoRecordedValue flag writes the stale marker on every sample",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				dp := addGauge(sm, "temperature", "Cel", t0ns, 21, nil)
				dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
				hp := addHistogram(sm, "size", "By", t0ns, []float64{10}, []uint64{1, 1}, ptr(30.0), nil)
				hp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
				sp := addSummary(sm, "lat", "", t0ns, 1, 1, [][2]float64{{0.5, 1}})
				sp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
				return md
			},
			want: []string{
				`{__name__="temperature_celsius", ` + job + `} 1700000000123 stale`,
				`{__name__="size_bytes_sum", ` + job + `} 1700000000123 stale`,
				`{__name__="size_bytes_count", ` + job + `} 1700000000123 stale`,
				`{__name__="size_bytes_bucket", ` + job + `, le="10"} 1700000000123 stale`,
				`{__name__="size_bytes_bucket", ` + job + `, le="+Inf"} 1700000000123 stale`,
				`{__name__="lat_sum", ` + job + `} 1700000000123 stale`,
				`{__name__="lat_count", ` + job + `} 1700000000123 stale`,
				`{__name__="lat", ` + job + `, quantile="0.5"} 1700000000123 stale`,
				targetInfo(t0ms),
			},
		},
		{
			name: "delta sums are rejected; the rest (the exponential histogram a native histogram) is kept and target_info spans all",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addGauge(sm, "up.ish", "", t0ns, 1, nil)
				addExpHistogram(sm, "latency", pmetric.AggregationTemporalityCumulative, t0ns)
				addSum(sm, "delta.requests", "", true, pmetric.AggregationTemporalityDelta, t0ns+600e9, 5, nil)
				return md
			},
			want: []string{
				`{__name__="up_ish", ` + job + `} 1700000000123 1`,
				targetInfo(t0ms),
				targetInfo(t0ms + 150_000),
				targetInfo(t0ms + 300_000),
				targetInfo(t0ms + 450_000),
				targetInfo(t0ms + 600_000),
			},
			rejected: 1,
		},
		{
			name: "label collisions join values, leading digits and underscores get key_, __name__ and empty values dropped",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, map[string]any{"service.name": "api"})
				addGauge(sm, "g", "", t0ns, 2, map[string]any{
					"a.b": "1", "a_b": "2", "a-b": "3",
					"9lives": "x", "_private": "y", "__name__": "evil", "empty": "",
					"host__name": "h",
				})
				return md
			},
			want: []string{
				`{__name__="g", a_b="3;1;2", host__name="h", job="api", key_9lives="x", key_private="y"} 1700000000123 2`,
			},
		},
		{
			name: "several data points of one series group in one entry; ns truncate to ms",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, map[string]any{"service.instance.id": "i"})
				m := sm.Metrics().AppendEmpty()
				m.SetName("g")
				g := m.SetEmptyGauge()
				for i, ts := range []uint64{1_000_999_999, 2_000_000_001, 3_999_999_999} {
					dp := g.DataPoints().AppendEmpty()
					dp.SetTimestamp(pcommon.Timestamp(ts))
					dp.SetIntValue(int64(i))
				}
				return md
			},
			want: []string{
				`{__name__="g", instance="i"} 1000 0`,
				`{__name__="g", instance="i"} 2000 1`,
				`{__name__="g", instance="i"} 3999 2`,
			},
		},
		{
			name: "promoted resource attributes; a data point attribute of the same name wins",
			cfg: func(c *Config) {
				c.PromoteResourceAttributes = []string{"host.name", "k8s.namespace.name", "cloud.region"}
			},
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				attrs := map[string]any{"service.name": "api", "host.name": "node-a", "k8s.namespace.name": "prod", "cloud.region": "eu-1", "other": "x"}
				sm := newResource(md, attrs)
				addGauge(sm, "g", "", t0ns, 1, map[string]any{"cloud.region": "us-2"})
				return md
			},
			want: []string{
				`{__name__="g", cloud_region="us-2", host_name="node-a", job="api", k8s_namespace_name="prod"} 1700000000123 1`,
				`{__name__="target_info", cloud_region="eu-1", host_name="node-a", job="api", k8s_namespace_name="prod", other="x"} 1700000000123 1`,
			},
		},
		{
			name: "promote all but ignored; keep identifying attributes on target_info",
			cfg: func(c *Config) {
				c.PromoteAllResourceAttributes = true
				c.IgnoreResourceAttributes = []string{"host.name"}
				c.KeepIdentifyingResourceAttributes = true
			},
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				addGauge(sm, "g", "", t0ns, 1, nil)
				return md
			},
			want: []string{
				`{__name__="g", ` + job + `, service_instance_id="pod-1", service_name="checkout", service_namespace="shop"} 1700000000123 1`,
				`{__name__="target_info", host_name="node-a", ` + job + `, service_instance_id="pod-1", service_name="checkout", service_namespace="shop"} 1700000000123 1`,
			},
		},
		{
			name: "scope metadata promoted (not onto target_info)",
			cfg:  func(c *Config) { c.PromoteScopeMetadata = true },
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				sm.Scope().SetName("go.opentelemetry.io/contrib/net/http")
				sm.Scope().SetVersion("1.2.3")
				sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
				setAttrs(sm.Scope().Attributes(), map[string]any{"lib.kind": "http"})
				addGauge(sm, "g", "", t0ns, 1, nil)
				return md
			},
			want: []string{
				`{__name__="g", ` + job + `, otel_scope_lib_kind="http", otel_scope_name="go.opentelemetry.io/contrib/net/http", otel_scope_schema_url="https://opentelemetry.io/schemas/1.26.0", otel_scope_version="1.2.3"} 1700000000123 1`,
				targetInfo(t0ms),
			},
		},
		{
			name: "scope metadata is not promoted by default",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, svc)
				sm.Scope().SetName("lib")
				sm.Scope().SetVersion("1")
				addGauge(sm, "g", "", t0ns, 1, nil)
				return md
			},
			want: []string{`{__name__="g", ` + job + `} 1700000000123 1`, targetInfo(t0ms)},
		},
		{
			name: "target_info disabled; no target_info without job or instance",
			cfg:  func(c *Config) { c.TargetInfo = false },
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				addGauge(newResource(md, svc), "a", "", t0ns, 1, nil)
				return md
			},
			want: []string{`{__name__="a", ` + job + `} 1700000000123 1`},
		},
		{
			name: "no target_info for a resource without service attributes",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				addGauge(newResource(md, map[string]any{"host.name": "x"}), "a", "", t0ns, 1, nil)
				return md
			},
			want: []string{`{__name__="a"} 1700000000123 1`},
		},
		{
			name: "strategy UnderscoreEscapingWithoutSuffixes",
			cfg:  func(c *Config) { c.TranslationStrategy = otlptranslator.UnderscoreEscapingWithoutSuffixes },
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, map[string]any{"service.name": "api"})
				addSum(sm, "http.requests", "1", true, pmetric.AggregationTemporalityCumulative, t0ns, 3, map[string]any{"http.route": "/"})
				addGauge(sm, "mem.used", "By", t0ns, 9, nil)
				return md
			},
			want: []string{
				`{__name__="http_requests", http_route="/", job="api"} 1700000000123 3`,
				`{__name__="mem_used", job="api"} 1700000000123 9`,
			},
		},
		{
			name: "strategy NoUTF8EscapingWithSuffixes keeps dots, adds suffixes",
			cfg:  func(c *Config) { c.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes },
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, map[string]any{"service.name": "api"})
				addSum(sm, "http.requests", "1", true, pmetric.AggregationTemporalityCumulative, t0ns, 3, map[string]any{"http.route": "/"})
				addGauge(sm, "mem.used", "By", t0ns, 9, nil)
				return md
			},
			want: []string{
				`{__name__="http.requests_total", "http.route"="/", job="api"} 1700000000123 3`,
				`{__name__="mem.used_bytes", job="api"} 1700000000123 9`,
			},
		},
		{
			name: "strategy NoTranslation",
			cfg:  func(c *Config) { c.TranslationStrategy = otlptranslator.NoTranslation },
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				sm := newResource(md, map[string]any{"service.name": "api"})
				addSum(sm, "http.requests", "1", true, pmetric.AggregationTemporalityCumulative, t0ns, 3, map[string]any{"http.route": "/"})
				return md
			},
			want: []string{`{__name__="http.requests", "http.route"="/", job="api"} 1700000000123 3`},
		},
		{
			name: "target_info deduplicated across resources with the same labels",
			md: func() pmetric.Metrics {
				md := pmetric.NewMetrics()
				addGauge(newResource(md, svc), "a", "", t0ns, 1, nil)
				addGauge(newResource(md, svc), "b", "", t0ns, 2, nil)
				return md
			},
			want: []string{
				`{__name__="a", ` + job + `} 1700000000123 1`,
				targetInfo(t0ms),
				`{__name__="b", ` + job + `} 1700000000123 2`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			md := tc.md()
			got := NewTranslator(cfg).Translate(md)
			diffLines(t, "ours vs hand-written", formatSeries(got.Series), tc.want)

			prom, _ := prometheusTranslate(t, md, cfg)
			diffLines(t, "ours vs Prometheus", formatSeries(got.Series), formatSeries(prom.series))

			if got.Rejected != tc.rejected {
				t.Errorf("rejected = %d, want %d (reasons %q)", got.Rejected, tc.rejected, got.Reasons)
			}
			if got.Samples != len(tc.want) {
				t.Errorf("Samples = %d, want %d", got.Samples, len(tc.want))
			}
		})
	}
}

func TestTranslateStaleMarkerBits(t *testing.T) {
	md := pmetric.NewMetrics()
	dp := addGauge(newResource(md, nil), "g", "", t0ns, 1, nil)
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	got := NewTranslator(DefaultConfig()).Translate(md)
	if len(got.Series) != 1 || len(got.Series[0].Samples) != 1 {
		t.Fatalf("got %v", formatSeries(got.Series))
	}
	if bits := math.Float64bits(got.Series[0].Samples[0].V); bits != 0x7ff0000000000002 {
		t.Fatalf("stale marker bits = %#x, want 0x7ff0000000000002", bits)
	}
}

func TestTranslateRejections(t *testing.T) {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	addExpHistogram(sm, "eh", pmetric.AggregationTemporalityCumulative, t0ns)
	sm.Metrics().At(0).ExponentialHistogram().DataPoints().At(0).SetScale(-5)
	addSum(sm, "d", "", true, pmetric.AggregationTemporalityDelta, t0ns, 1, nil)
	addSum(sm, "u", "", true, pmetric.AggregationTemporalityUnspecified, t0ns, 1, nil)
	addGauge(sm, "bad.attr", "", t0ns, 1, map[string]any{"": "empty key"})
	addGauge(sm, "ok", "", t0ns, 1, nil)

	got := NewTranslator(DefaultConfig()).Translate(md)
	if got.DataPoints != 5 || got.Rejected != 4 {
		t.Fatalf("DataPoints=%d Rejected=%d, want 5 and 4; reasons %q", got.DataPoints, got.Rejected, got.Reasons)
	}
	joined := strings.Join(got.Reasons, "\n")
	for _, want := range []string{
		`metric "eh": exponential histogram scale -5 below the smallest native schema -4`,
		`metric "d": delta temporality refused: otlp.delta_temporality is "reject" (set convert or native, or send cumulative)`,
		`metric "u": invalid temporality Unspecified`,
		`metric "bad.attr": label name is empty`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("reasons lack %q:\n%s", want, joined)
		}
	}
	diffLines(t, "kept", formatSeries(got.Series), []string{
		`{__name__="ok", instance="pod-1", job="shop/checkout"} 1700000000123 1`,
		targetInfo(t0ms),
	})
}

func TestTranslateTargetInfoCapped(t *testing.T) {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	addGauge(sm, "old", "", 1e6, 1, nil) // 1 ms after the epoch
	addGauge(sm, "now", "", t0ns, 1, nil)
	got := NewTranslator(DefaultConfig()).Translate(md)
	var ti []actastore.Sample
	for _, s := range got.Series {
		if s.Labels.Get("__name__") == "target_info" {
			ti = s.Samples
		}
	}
	if len(ti) != maxTargetInfoSamples+1 {
		t.Fatalf("target_info samples = %d, want %d", len(ti), maxTargetInfoSamples+1)
	}
	if last := ti[len(ti)-1].T; last != t0ms {
		t.Fatalf("last target_info sample at %d, want %d", last, t0ms)
	}
	step := targetInfoInterval.Milliseconds()
	for i := 1; i < len(ti)-1; i++ {
		if d := ti[i].T - ti[i-1].T; d != step {
			t.Fatalf("target_info step %d = %d ms, want %d", i, d, step)
		}
	}
}

func TestTranslateHugeAttributeValue(t *testing.T) {
	md := pmetric.NewMetrics()
	big := strings.Repeat("x", 1<<20)
	addGauge(newResource(md, nil), "g", "", t0ns, 1, map[string]any{"blob": big})
	got := NewTranslator(DefaultConfig()).Translate(md)
	if len(got.Series) != 1 || got.Series[0].Labels.Get("blob") != big {
		t.Fatalf("huge attribute not carried through verbatim")
	}
}

// TestTranslateRefusesTimestampsAtTheEpoch: a data point stored at or
// before 1970-01-01T00:00:00Z in milliseconds (time_unix_nano 0, below a
// millisecond, or 2^63 and above, negative as int64) is refused with a
// reason, of every kind; the valid points beside it are kept and
// target_info spans only them.
func TestTranslateRefusesTimestampsAtTheEpoch(t *testing.T) {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	addGauge(sm, "g", "", 0, 1, nil)
	addGauge(sm, "g", "", t0ns, 2, nil)
	addSum(sm, "s", "", true, pmetric.AggregationTemporalityCumulative, 999_999, 1, nil)
	addHistogram(sm, "h", "", 1<<63, []float64{1}, []uint64{1, 0}, nil, nil)
	addSummary(sm, "q", "", math.MaxUint64, 1, 1, nil)
	addExpHistogram(sm, "e", pmetric.AggregationTemporalityCumulative, 0)
	addGauge(sm, "first_ms", "", 1_000_000, 3, nil)

	got := NewTranslator(DefaultConfig()).Translate(md)
	if got.DataPoints != 7 || got.Rejected != 5 {
		t.Fatalf("DataPoints=%d Rejected=%d, want 7 and 5; reasons %q", got.DataPoints, got.Rejected, got.Reasons)
	}
	diffLines(t, "reasons", got.Reasons, []string{
		`metric "g": data point refused: time_unix_nano is 0 (not set)`,
		`metric "s": data point refused: time_unix_nano 999999 is within the first millisecond of 1970`,
		`metric "h": data point refused: time_unix_nano 9223372036854775808 is after year 2262 (negative as a signed 64-bit number)`,
		`metric "q": data point refused: time_unix_nano 18446744073709551615 is after year 2262 (negative as a signed 64-bit number)`,
		`metric "e": data point refused: time_unix_nano is 0 (not set)`,
	})
	if len(got.Extras) != 0 || len(got.Metadata) != 3 { // g, first_ms, target_info
		t.Errorf("extras %d, metadata %v", len(got.Extras), formatMetadata(got.Metadata))
	}
	want := []string{
		`{__name__="g", instance="pod-1", job="shop/checkout"} 1700000000123 2`,
		`{__name__="first_ms", instance="pod-1", job="shop/checkout"} 1 3`,
	}
	// target_info from 1 ms to t0: the newest maxTargetInfoSamples grid
	// points, then t0.
	step := targetInfoInterval.Milliseconds()
	span := int64(t0ms - 1)
	first := 1 + (span/step-maxTargetInfoSamples+1)*step
	for i := range int64(maxTargetInfoSamples) {
		want = append(want, targetInfo(first+i*step))
	}
	want = append(want, targetInfo(t0ms))
	diffLines(t, "kept", formatSeries(got.Series), want)
}

// TestTranslateExemplarEdgeCases holds the exemplar rules on bad and odd
// input, written out by hand: no time (the point's), a time after the
// point's and far in the future (kept: the store bounds the future), a
// negative time (dropped with a note, no rejected point), no value (the
// point rejected), an attribute named trace_id beside a trace ID (the ID
// wins), an empty value (left out), labels over 128 characters (IDs
// only), a gauge's exemplar (dropped, as Prometheus drops it).
func TestTranslateExemplarEdgeCases(t *testing.T) {
	md := pmetric.NewMetrics()
	sm := newResource(md, svc)
	m := addDeltaMetric(sm, "c", "", pmetric.MetricTypeSum, true)
	m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := deltaSumPoint(m, dStart, dT1, 1, nil)
	es := dp.Exemplars()
	addExemplar(es, 0, 1, 0x01)               // no time
	addExemplar(es, dT1+5e9, 2, 0x02)         // after the point
	addExemplar(es, dT1+400*86400e9, 3, 0x03) // 400 days ahead
	addExemplar(es, 1<<63, 4, 0x04)           // negative in ms
	ex := es.AppendEmpty()                    // attributes only
	ex.SetTimestamp(pcommon.Timestamp(dT1))
	ex.SetIntValue(5)
	ex.FilteredAttributes().PutStr("user", "u1")
	ex.FilteredAttributes().PutStr("empty", "")
	ex = es.AppendEmpty() // trace_id attribute beside a trace ID; too long together
	ex.SetTimestamp(pcommon.Timestamp(dT1 - 1e6))
	ex.SetDoubleValue(6)
	ex.SetTraceID(pcommon.TraceID{0x06})
	ex.FilteredAttributes().PutStr("trace_id", "shadowed")
	ex.FilteredAttributes().PutStr("blob", strings.Repeat("b", 85)) // 40 + 89 = 129 characters
	bad := deltaSumPoint(m, dStart, dT1, 2, map[string]any{"k": "no-value"})
	bad.Exemplars().AppendEmpty().SetTimestamp(pcommon.Timestamp(dT1))
	g := addGauge(sm, "g", "", dT1, 1, nil)
	addExemplar(g.Exemplars(), dT1, 1, 0x07)

	got := NewTranslator(DefaultConfig()).Translate(md)
	if got.Rejected != 1 || got.DataPoints != 3 || got.Exemplars != 5 {
		t.Fatalf("rejected %d of %d, %d exemplars; reasons %q", got.Rejected, got.DataPoints, got.Exemplars, got.Reasons)
	}
	diffLines(t, "reasons", got.Reasons, []string{
		`metric "c": exemplar dropped: time_unix_nano 9223372036854775808 is after year 2262`,
		`metric "c": exemplar 0 has no value (type Empty)`,
	})
	s := `{__name__="c_total", instance="pod-1", job="shop/checkout"}`
	id := func(n byte) string {
		return fmt.Sprintf(`span_id="%02x01020304050607", trace_id="%02x0102030405060708090a0b0c0d0e0f"`, n, n)
	}
	diffLines(t, "exemplars", formatExemplars(got.Extras), []string{
		s + ` 1700000000122 6(4018000000000000) {trace_id="06000000000000000000000000000000"}`,
		s + ` 1700000000123 1(3ff0000000000000) {` + id(1) + `}`,
		s + ` 1700000000123 5(4014000000000000) {user="u1"}`,
		s + ` 1700000005123 2(4000000000000000) {` + id(2) + `}`,
		s + ` 1734560000123 3(4008000000000000) {` + id(3) + `}`,
	})
}
