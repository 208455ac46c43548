package otlp

import (
	"context"
	"errors"
	"fmt"

	deltatocumulative "github.com/open-telemetry/opentelemetry-collector-contrib/processor/deltatocumulativeprocessor"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// deltaConverter turns delta sums, histograms and exponential histograms
// into cumulative ones (otlp.delta_temporality: convert) with the
// OpenTelemetry Collector-contrib deltatocumulative processor, the library
// Prometheus's otlp-deltatocumulative feature runs (storage/remote,
// NewOTLPWriteHandler), at the same version (go.mod).
//
// It runs synchronously inside the request, before translation: the
// processor adds each delta to its stream's running sum and hands the
// request on, rewritten in place, to a consumer that does nothing; the
// request is then translated and committed as a cumulative one, so a 2xx
// still comes only after the store's fsync.
//
// The running sums live in the processor's memory only. A request whose
// Commit then fails has already advanced them: its retry carries the same
// timestamps, which the processor drops as out of order (reported in
// partial_success), and the deltas reach the store inside the next
// cumulative point: no delta is counted twice and none is lost from the
// sums; only that point in time is missing. A restart (or a stream idle for
// max_stale) loses the sums: the next delta starts a new one, which PromQL
// sees as a counter reset (docs/api.md, "Delta temporality").
type deltaConverter struct {
	proc   processor.Metrics
	meters *sdkmetric.MeterProvider // nil without a registerer
}

// newDeltaConverter starts a processor with cfg's limits. With reg, the
// processor's own telemetry (otelcol_deltatocumulative_datapoints_total by
// error, otelcol_deltatocumulative_streams_tracked, ..._streams_limit,
// ..._streams_max_stale_seconds) is bridged to reg by the OpenTelemetry
// Prometheus exporter.
func newDeltaConverter(cfg DeltaConversionConfig, reg prometheus.Registerer) (*deltaConverter, error) {
	c := &deltaConverter{}
	var mp metric.MeterProvider = noop.NewMeterProvider()
	if reg != nil {
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo())
		if err != nil {
			return nil, fmt.Errorf("cannot bridge the delta conversion's metrics: %w", err)
		}
		c.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		mp = c.meters
	}
	fac := deltatocumulative.NewFactory()
	pcfg, ok := fac.CreateDefaultConfig().(*deltatocumulative.Config)
	if !ok {
		return nil, errors.New("BUG: deltatocumulative config type changed")
	}
	pcfg.MaxStreams, pcfg.MaxStale = cfg.MaxStreams, cfg.MaxStale
	if err := pcfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid delta_conversion: %w", err)
	}
	// The processor rewrites the request in place; what it hands on is
	// what the caller translates next, so the consumer has nothing to do.
	next, err := consumer.NewMetrics(func(context.Context, pmetric.Metrics) error { return nil })
	if err != nil {
		return nil, err
	}
	set := processor.Settings{ID: component.NewID(fac.Type()), TelemetrySettings: component.TelemetrySettings{MeterProvider: mp}}
	if c.proc, err = fac.CreateMetrics(context.Background(), set, pcfg, next); err != nil {
		return nil, fmt.Errorf("cannot create the deltatocumulative processor: %w", err)
	}
	// Start runs the once-a-minute sweep of streams stale for max_stale.
	if err := c.proc.Start(context.Background(), nil); err != nil {
		return nil, fmt.Errorf("cannot start the deltatocumulative processor: %w", err)
	}
	return c, nil
}

// close stops the stale-stream sweep; the sums are dropped with c.
func (c *deltaConverter) close() error {
	err := c.proc.Shutdown(context.Background())
	if c.meters != nil {
		err = errors.Join(err, c.meters.Shutdown(context.Background()))
	}
	return err
}

// deltaMetric is one delta metric of a request, as it was before the
// conversion.
type deltaMetric struct {
	name   string
	points int
}

// convertDeltas converts md's delta metrics in place and reports, per
// metric, the data points the processor dropped. Exemplars are taken off
// the delta points first and put back on the converted ones: the processor
// would overwrite each point with its stream's state, which keeps the
// first point's exemplars for ever (what Prometheus then stores), and
// would hold a copy of them per stream.
//
// Metrics and data points are matched before and after by identity:
// pdata values are references, and the processor only removes (keeping
// the order) and overwrites, never reallocates, what it keeps.
func (t *Translator) convertDeltas(md pmetric.Metrics) {
	var (
		metrics = map[pmetric.Metric]*deltaMetric{}
		order   []*deltaMetric
		saved   map[any]pmetric.ExemplarSlice // data point -> its exemplars
	)
	save := func(dp any, es pmetric.ExemplarSlice) {
		if es.Len() == 0 {
			return
		}
		if saved == nil {
			saved = map[any]pmetric.ExemplarSlice{}
		}
		s := pmetric.NewExemplarSlice()
		es.MoveAndAppendTo(s)
		saved[dp] = s
	}
	walkMetrics(md, func(m pmetric.Metric) {
		if !isDelta(m) {
			return
		}
		d := &deltaMetric{name: m.Name(), points: countDataPoints(m)}
		metrics[m] = d
		order = append(order, d)
		forEachExemplarSlice(m, save)
	})
	if len(order) == 0 {
		return
	}
	// The processor's ConsumeMetrics fails only when the next consumer
	// does, and ours never does.
	_ = t.delta.proc.ConsumeMetrics(context.Background(), md)

	walkMetrics(md, func(m pmetric.Metric) {
		d := metrics[m]
		if d == nil {
			return
		}
		d.points -= countDataPoints(m)
		if saved != nil {
			forEachExemplarSlice(m, func(dp any, es pmetric.ExemplarSlice) {
				if s, ok := saved[dp]; ok {
					s.MoveAndAppendTo(es)
				}
			})
		}
	})
	for _, d := range order {
		// A metric left without data points was removed whole, and never
		// seen above: all its points count as dropped.
		if d.points > 0 {
			t.out.DataPoints += d.points
			t.reject(d.points, "metric %q: delta data points dropped by the conversion to cumulative: "+
				"at or before the stream's last delta (out of order, or a retry of deltas already added up), "+
				"a start time before the stream's, or beyond otlp.delta_conversion.max_streams streams", d.name)
		}
	}
}

// forEachExemplarSlice calls f with every data point of m (the typed pdata
// value, comparable by identity) and its exemplars.
func forEachExemplarSlice(m pmetric.Metric, f func(dp any, es pmetric.ExemplarSlice)) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := range dps.Len() {
			f(dps.At(i), dps.At(i).Exemplars())
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := range dps.Len() {
			f(dps.At(i), dps.At(i).Exemplars())
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			f(dps.At(i), dps.At(i).Exemplars())
		}
	}
}

// walkMetrics calls f with every metric of md, in order.
func walkMetrics(md pmetric.Metrics, f func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				f(ms.At(k))
			}
		}
	}
}

// temporality is m's aggregation temporality; ok is false for kinds that
// have none (gauge, summary).
func temporality(m pmetric.Metric) (temp pmetric.AggregationTemporality, ok bool) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().AggregationTemporality(), true
	case pmetric.MetricTypeHistogram:
		return m.Histogram().AggregationTemporality(), true
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().AggregationTemporality(), true
	}
	return pmetric.AggregationTemporalityUnspecified, false
}

func isDelta(m pmetric.Metric) bool {
	temp, ok := temporality(m)
	return ok && temp == pmetric.AggregationTemporalityDelta
}
