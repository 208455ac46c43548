package queryapi

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"

	"github.com/acta-remote/acta-remote/actastore"
)

// Prometheus's /api/v1/metadata reads the metadata caches of its active
// scrape targets. Here one stand-in target carries the store's metadata
// (per metric family, the latest that remote write 1.0 and 2.0 or OTLP
// sent), so Prometheus's handler answers with its own parameters (metric,
// limit, limit_per_metric) and shapes. No other target API is mounted.

// metadataTargets is v1.TargetRetriever for one request.
type metadataTargets struct {
	target *scrape.Target
}

func newMetadataTargets(ctx context.Context, st actastore.MetadataQuerier, log *slog.Logger) *metadataTargets {
	t := scrape.NewTarget(labels.EmptyLabels(), nil, nil, nil)
	t.SetMetadataStore(&metadataStore{ctx: ctx, st: st, log: log})
	return &metadataTargets{target: t}
}

func (m *metadataTargets) TargetsActive() map[string][]*scrape.Target {
	return map[string][]*scrape.Target{"acta-remote": {m.target}}
}
func (*metadataTargets) TargetsDropped() map[string][]*scrape.Target { return nil }
func (*metadataTargets) TargetsDroppedCounts() map[string]int        { return nil }
func (*metadataTargets) ScrapePoolConfig(string) (*config.ScrapeConfig, error) {
	return nil, errors.New("acta-remote scrapes nothing")
}

// metadataStore is scrape.MetricMetadataStore over the store. The
// interface has no error results: a failed lookup is logged and answers
// nothing.
type metadataStore struct {
	ctx context.Context
	st  actastore.MetadataQuerier
	log *slog.Logger
}

func (m *metadataStore) lookup(name string) []scrape.MetricMetadata {
	md, err := m.st.Metadata(m.ctx, name)
	if err != nil {
		m.log.Warn("cannot read metadata", "metric", name, "err", err)
		return nil
	}
	out := make([]scrape.MetricMetadata, len(md))
	for i, x := range md {
		out[i] = scrape.MetricMetadata{MetricFamily: x.Name, Type: x.Type, Help: x.Help, Unit: x.Unit}
	}
	return out
}

func (m *metadataStore) ListMetadata() []scrape.MetricMetadata { return m.lookup("") }

func (m *metadataStore) GetMetadata(name string) (scrape.MetricMetadata, bool) {
	if name == "" {
		return scrape.MetricMetadata{}, false
	}
	md := m.lookup(name)
	if len(md) == 0 {
		return scrape.MetricMetadata{}, false
	}
	return md[0], true
}

func (m *metadataStore) SizeMetadata() int {
	n := 0
	for _, md := range m.lookup("") {
		n += len(md.MetricFamily) + len(md.Help) + len(md.Unit)
	}
	return n
}

func (m *metadataStore) LengthMetadata() int { return len(m.lookup("")) }
