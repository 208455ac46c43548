// Package queryapi is the Prometheus HTTP query API over the series store:
// /api/v1/query and /api/v1/query_range (PromQL), /api/v1/series,
// /api/v1/labels, /api/v1/label/<name>/values, /api/v1/metadata,
// /api/v1/query_exemplars, /api/v1/format_query, /api/v1/parse_query,
// /api/v1/status/{buildinfo,runtimeinfo,flags,tsdb} and
// /api/v1/admin/tsdb/delete_series, so that Grafana (or anything speaking
// Prometheus's API) can use acta-remote as a Prometheus data source.
//
// Nothing here parses a request, evaluates PromQL or encodes an answer:
// Prometheus's own web/api/v1 package does, as Thanos and Mimir embed it,
// with Prometheus's own engine (promql.NewEngine). Request parameters, the
// JSON envelope, error types and status codes are therefore Prometheus's
// (bad_data 400, execution 422, timeout 503, canceled 499, internal 500).
// What this package adds:
//
//   - storage.Queryable over the store (queryable.go): Select for PromQL,
//     a series' float samples and native histograms handed to Prometheus's
//     own in-memory iterator (iterator.go); series and label lookups from
//     the label index (labels.go); store errors mapped to the engine's
//     error kinds (errors.go).
//   - exemplars, metadata (the store's metadata stands in for the metadata
//     cache of one scrape target, which is where Prometheus's handler reads
//     it), cardinality statistics for /api/v1/status/tsdb and series
//     deletion behind the admin switch (exemplars.go, metadata.go, tsdb.go).
//   - request slots shared by every data endpoint, waiting at most
//     Options.MaxQueueWait, then 429 with Retry-After (api.go), as every
//     other endpoint of the server does (package admission).
//
// Times: the store's ranges are inclusive milliseconds [mint, maxt]; the
// engine's selector ranges are left-open and it filters what it gets, so
// handing it the closed range loses nothing.
package queryapi
