// Package otlp is the OpenTelemetry metrics receiver: OTLP/HTTP (protobuf
// and JSON, optionally gzip- or zstd-compressed) and OTLP/gRPC
// MetricsService/Export, translated into Prometheus series and handed to an
// actastore.Appender.
//
// Translation follows Prometheus's own OTLP receiver (Prometheus v0.316.0,
// storage/remote/otlptranslator/prometheusremotewrite) so that a series
// pushed here reads back under exactly the name and labels a Prometheus user
// would get from Prometheus itself; names come from
// github.com/prometheus/otlptranslator, the library Prometheus uses.
//
// Files by concern:
//
//	config.go              Config, defaults, Validate
//	receiver.go            Receiver: translate, append, build the response
//	status.go              the one mapping from store errors to HTTP/gRPC status
//	encoder.go             protobuf vs JSON, chosen once from Content-Type
//	handler_http.go        POST /v1/metrics and its aliases, bounded bodies
//	decompress.go          gzip and zstd request bodies, pooled decoders
//	grpc.go                MetricsService/Export on its own listener
//	translate.go           resource/scope/metric walk, temporality, batching
//	translate_labels.go    attributes -> labels, job/instance, target_info
//	translate_number.go    gauge and sum data points
//	translate_histogram.go classic histograms and summaries
//	translate_exphist.go   exponential histograms -> native histograms, as
//	                       Prometheus's OTLP receiver converts them
//	translate_metadata.go  metric family metadata (type, unit, help)
//
// Deliberate differences from Prometheus's receiver, all on the failure
// path: Prometheus rolls back the whole request on any translation error
// (delta temporality, an attribute that cannot become a label name) and
// answers 500; we reject only the offending data points and report them in
// the OTLP partial_success, as the OTLP spec asks. Exemplars and start
// timestamps are dropped (the store keeps neither). target_info samples per
// resource are capped (see maxTargetInfoSamples).
package otlp
