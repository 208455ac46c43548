// The comparisons with Prometheus link its config and storage packages,
// whose size makes fuzz minimization crawl; fuzz with -tags otlpfuzz to
// leave them out (see FuzzHandler).

//go:build !otlpfuzz

package otlp

// The reference: Prometheus v0.316.0's own OTLP translation, imported in
// tests only (it pulls Prometheus's config and storage packages, which the
// receiver itself must not).

import (
	"context"
	"strings"
	"testing"

	deltatocumulative "github.com/open-telemetry/opentelemetry-collector-contrib/processor/deltatocumulativeprocessor"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/acta-remote/acta-remote/actastore"
)

// promAppender records what Prometheus's own OTLP translation appends:
// float samples and native histograms, grouped by series, exemplars and
// metadata.
type promAppender struct {
	series     []actastore.SeriesSamples
	hists      []actastore.SeriesExtras
	histograms int
	exemplars  []actastore.SeriesExtras // Exemplars only, grouped by series
	meta       map[string]actastore.Metadata
}

// addExemplars keeps what Prometheus's TSDB would store of a sample's
// exemplars (its head drops empty label values), made comparable with
// ours: an exemplar without a time gets the sample's, and one whose time
// is negative is left out (our two deliberate differences,
// convertExemplars).
func (a *promAppender) addExemplars(ls labels.Labels, t int64, es []exemplar.Exemplar) {
	var out []actastore.Exemplar
	for _, e := range es {
		ts := e.Ts
		switch {
		case !e.HasTs:
			ts = t
		case ts < 0:
			continue
		}
		out = append(out, actastore.Exemplar{Labels: e.Labels.WithoutEmpty(), Value: e.Value, T: ts})
	}
	if len(out) == 0 {
		return
	}
	for i := range a.exemplars {
		if labels.Equal(a.exemplars[i].Labels, ls) {
			a.exemplars[i].Exemplars = append(a.exemplars[i].Exemplars, out...)
			return
		}
	}
	a.exemplars = append(a.exemplars, actastore.SeriesExtras{Labels: ls.Copy(), Exemplars: out})
}

func (a *promAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.meta == nil {
		a.meta = map[string]actastore.Metadata{}
	}
	if opts.MetricFamilyName != "" {
		a.meta[strings.Clone(opts.MetricFamilyName)] = actastore.Metadata{Type: opts.Metadata.Type, Unit: opts.Metadata.Unit, Help: opts.Metadata.Help}
	}
	a.addExemplars(ls, t, opts.Exemplars)
	if h != nil || fh != nil {
		a.histograms++
		hs := actastore.HistogramSample{T: t, H: h, FH: fh}
		for i := range a.hists {
			if labels.Equal(a.hists[i].Labels, ls) {
				a.hists[i].Histograms = append(a.hists[i].Histograms, hs)
				return 0, nil
			}
		}
		a.hists = append(a.hists, actastore.SeriesExtras{Labels: ls.Copy(), Histograms: []actastore.HistogramSample{hs}})
		return 0, nil
	}
	for i := range a.series {
		if labels.Equal(a.series[i].Labels, ls) {
			a.series[i].Samples = append(a.series[i].Samples, actastore.Sample{T: t, V: v})
			return 0, nil
		}
	}
	a.series = append(a.series, actastore.SeriesSamples{Labels: ls.Copy(), Samples: []actastore.Sample{{T: t, V: v}}})
	return 0, nil
}
func (a *promAppender) Commit() error   { return nil }
func (a *promAppender) Rollback() error { return nil }

// prometheusTranslate runs Prometheus v0.316.0's OTLP translation with the
// settings its OTLP write handler derives from an equivalent config:
// delta_temporality native is its otlp-native-delta-ingestion
// (AllowDeltaTemporality). md is not modified.
func prometheusTranslate(t *testing.T, md pmetric.Metrics, cfg Config) (*promAppender, error) {
	t.Helper()
	app := &promAppender{}
	conv := prometheusremotewrite.NewPrometheusConverter(app)
	_, err := conv.FromMetrics(context.Background(), md, prometheusremotewrite.Settings{
		AddMetricSuffixes: cfg.TranslationStrategy.ShouldAddSuffixes(),
		AllowUTF8:         !cfg.TranslationStrategy.ShouldEscape(),
		PromoteResourceAttributes: prometheusremotewrite.NewPromoteResourceAttributes(promconfig.OTLPConfig{
			PromoteAllResourceAttributes: cfg.PromoteAllResourceAttributes,
			PromoteResourceAttributes:    cfg.PromoteResourceAttributes,
			IgnoreResourceAttributes:     cfg.IgnoreResourceAttributes,
		}),
		KeepIdentifyingResourceAttributes:    cfg.KeepIdentifyingResourceAttributes,
		DisableTargetInfo:                    !cfg.TargetInfo,
		PromoteScopeMetadata:                 cfg.PromoteScopeMetadata,
		LabelNameUnderscoreSanitization:      cfg.LabelNameUnderscoreSanitization,
		LabelNamePreserveMultipleUnderscores: cfg.LabelNamePreserveMultipleUnderscores,
		AllowDeltaTemporality:                cfg.DeltaTemporality == DeltaNative,
	})
	return app, err
}

// prometheusD2C is Prometheus's otlp-deltatocumulative path: a
// deltatocumulative processor with the default config, as
// storage/remote.NewOTLPWriteHandler creates it, in front of FromMetrics.
type prometheusD2C struct {
	t    *testing.T
	cfg  Config
	proc processor.Metrics
	last *promAppender
}

func newPrometheusD2C(t *testing.T, cfg Config) *prometheusD2C {
	p := &prometheusD2C{t: t, cfg: cfg}
	fac := deltatocumulative.NewFactory()
	next, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		var terr error
		p.last, terr = prometheusTranslate(t, md, cfg)
		return terr
	})
	if err != nil {
		t.Fatal(err)
	}
	set := processor.Settings{ID: component.NewID(fac.Type()), TelemetrySettings: component.TelemetrySettings{MeterProvider: noop.NewMeterProvider()}}
	if p.proc, err = fac.CreateMetrics(context.Background(), set, fac.CreateDefaultConfig(), next); err != nil {
		t.Fatal(err)
	}
	return p
}

// translate sends a copy of md the way Prometheus's OTLP handler does:
// through the processor when it holds a delta metric, else straight to
// FromMetrics.
func (p *prometheusD2C) translate(md pmetric.Metrics) (*promAppender, error) {
	c := pmetric.NewMetrics()
	md.CopyTo(c)
	if !hasDeltaMetric(c) {
		return prometheusTranslate(p.t, c, p.cfg)
	}
	p.last = &promAppender{}
	err := p.proc.ConsumeMetrics(context.Background(), c)
	return p.last, err
}

func hasDeltaMetric(md pmetric.Metrics) bool {
	found := false
	walkMetrics(md, func(m pmetric.Metric) { found = found || isDelta(m) })
	return found
}
