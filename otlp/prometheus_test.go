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

	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// promAppender records what Prometheus's own OTLP translation appends:
// float samples and native histograms, grouped by series, and metadata.
type promAppender struct {
	series     []actastore.SeriesSamples
	hists      []actastore.SeriesExtras
	histograms int
	meta       map[string]actastore.Metadata
}

func (a *promAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.meta == nil {
		a.meta = map[string]actastore.Metadata{}
	}
	if opts.MetricFamilyName != "" {
		a.meta[strings.Clone(opts.MetricFamilyName)] = actastore.Metadata{Type: opts.Metadata.Type, Unit: opts.Metadata.Unit, Help: opts.Metadata.Help}
	}
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
// settings its OTLP write handler derives from an equivalent config.
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
	})
	return app, err
}
