package config

import "time"

// QueryConfig is the Prometheus HTTP query API (/api/v1/query and the
// other read endpoints Grafana uses): the PromQL engine's limits, the
// request slots every query endpoint shares, and the admin endpoints. The
// keys mirror Prometheus's own flags, named in each comment.
type QueryConfig struct {
	// MaxSamples: a query that would hold more samples in memory at once
	// fails with 422 (--query.max-samples).
	MaxSamples int `yaml:"max_samples"`
	// Timeout: a query running longer fails with 503 (--query.timeout). The
	// request's own timeout parameter may only shorten it.
	Timeout time.Duration `yaml:"timeout"`
	// MaxConcurrent query API requests run at once (--query.max-concurrency);
	// the others wait up to MaxQueueWait.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxQueueWait: how long a request waits for a slot before it gets 429
	// with Retry-After (0 answers 429 at once).
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
	// LookbackDelta: how far back an instant selector looks for a sample
	// (--query.lookback-delta); the lookback_delta parameter overrides it.
	LookbackDelta time.Duration `yaml:"lookback_delta"`
	// DefaultSubqueryStep is the step of a subquery written without one
	// (`x[5m:]`); Prometheus takes its global.evaluation_interval.
	DefaultSubqueryStep time.Duration `yaml:"default_subquery_step"`
	// AdminAPIEnabled serves /api/v1/admin/tsdb/* (--web.enable-admin-api);
	// off, they answer as Prometheus does when its admin APIs are disabled.
	AdminAPIEnabled bool `yaml:"admin_api_enabled"`
}

func (c *Config) validateQuery(v *validator) {
	q := c.Query
	v.rangeInt("query.max_samples", int64(q.MaxSamples), 1, 1<<40)
	v.durationRange("query.timeout", q.Timeout, time.Second, 24*time.Hour)
	v.rangeInt("query.max_concurrent", int64(q.MaxConcurrent), 1, 1<<16)
	v.durationRange("query.max_queue_wait", q.MaxQueueWait, 0, 10*time.Minute)
	v.durationRange("query.lookback_delta", q.LookbackDelta, time.Second, 24*time.Hour)
	v.durationRange("query.default_subquery_step", q.DefaultSubqueryStep, time.Millisecond, 24*time.Hour)
}
