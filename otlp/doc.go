// Package otlp is the OpenTelemetry metrics receiver: OTLP/HTTP (protobuf
// and JSON, optionally gzip- or zstd-compressed) and OTLP/gRPC
// MetricsService/Export, translated into Prometheus series, exemplars and
// metadata and handed to an actastore.Appender, one Commit per request.
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
//	encoder.go             protobuf vs JSON, chosen once from Content-Type
//	handler_http.go        POST /v1/metrics and its aliases, bounded bodies
//	decompress.go          gzip and zstd request bodies, pooled decoders
//	grpc.go                MetricsService/Export on its own listener
//	translate.go           resource/scope/metric walk, temporality, batching
//	translate_timestamps.go data points at or before the epoch refused
//	delta.go               delta_temporality convert: the deltatocumulative
//	                       processor, run inside the request
//	translate_labels.go    attributes -> labels, job/instance, target_info
//	translate_number.go    gauge and sum data points
//	translate_histogram.go classic histograms and summaries
//	translate_exphist.go   exponential histograms -> native histograms, as
//	                       Prometheus's OTLP receiver converts them
//	translate_exemplar.go  exemplars: trace_id/span_id and attributes
//	translate_metadata.go  metric family metadata (type, unit, help)
//
// Delta temporality follows Config.DeltaTemporality: rejected (as
// Prometheus by default), converted per stream by the Collector-contrib
// deltatocumulative processor (as Prometheus's otlp-deltatocumulative), or
// stored as sent (as its otlp-native-delta-ingestion).
//
// Deliberate differences from Prometheus's receiver, mostly on the
// failure path: Prometheus rolls back the whole request on any translation
// or storage error (refused temporality, an attribute that cannot become a
// label name, a sample out of bounds such as time 0) and answers 4xx/5xx;
// we reject only the offending data points and report them in the OTLP
// partial_success, as the OTLP spec asks. An exemplar without a time takes
// its data point's, one with a negative time is dropped (Prometheus stores
// both where no query finds them); converted deltas keep their own
// exemplars (Prometheus's conversion repeats the stream's first ones).
// Start timestamps (start_time_unix_nano, truncated to ms) go with every
// sample of their data point to the store, which keeps them
// (actastore.StartTime), as Prometheus's translator passes them to its
// appender; target_info samples have none. target_info samples per resource are
// capped (see maxTargetInfoSamples).
package otlp
