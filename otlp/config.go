package otlp

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/otlptranslator"
)

// Config is the OTLP receiver's options, as the server maps them from its
// config's `otlp:` block (package config validates them there, naming the
// keys). DefaultConfig gives Prometheus's defaults.
type Config struct {
	// TranslationStrategy names metrics and labels, as Prometheus's
	// otlp.translation_strategy: UnderscoreEscapingWithSuffixes (default),
	// UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or
	// NoTranslation.
	TranslationStrategy otlptranslator.TranslationStrategyOption
	// PromoteResourceAttributes are resource attributes copied onto every
	// series of the resource as labels (a data point attribute of the same
	// name wins).
	PromoteResourceAttributes []string
	// PromoteAllResourceAttributes promotes every resource attribute except
	// IgnoreResourceAttributes; it excludes PromoteResourceAttributes.
	PromoteAllResourceAttributes bool
	IgnoreResourceAttributes     []string
	// KeepIdentifyingResourceAttributes keeps service.name,
	// service.namespace and service.instance.id on target_info as well as
	// turning them into job and instance.
	KeepIdentifyingResourceAttributes bool
	// TargetInfo writes the non-identifying resource attributes as a
	// target_info series (value 1) per resource. Default true, as Prometheus.
	TargetInfo bool
	// PromoteScopeMetadata adds otel_scope_name, otel_scope_version,
	// otel_scope_schema_url and otel_scope_<attribute> labels. Default false,
	// as Prometheus.
	PromoteScopeMetadata bool
	// LabelNameUnderscoreSanitization prefixes "key" to label names that
	// start with a single '_'; LabelNamePreserveMultipleUnderscores keeps
	// runs of '_' in escaped label names. Both default true, as Prometheus
	// (for backwards compatibility); both matter only with escaping.
	LabelNameUnderscoreSanitization      bool
	LabelNamePreserveMultipleUnderscores bool
	// DeltaTemporality says what becomes of delta sums, histograms and
	// exponential histograms: DeltaReject (default, as Prometheus without a
	// feature flag), DeltaConvert (cumulative per stream, as Prometheus's
	// otlp-deltatocumulative) or DeltaNative (stored as sent, as
	// Prometheus's otlp-native-delta-ingestion). It replaces the removed
	// convert_delta_to_cumulative.
	DeltaTemporality DeltaMode
	// DeltaConversion bounds the per-stream state of DeltaConvert.
	DeltaConversion DeltaConversionConfig

	// MaxBodyBytes caps the HTTP request body as received (compressed or
	// not); larger bodies get 413. Default 16 MiB.
	MaxBodyBytes int64
	// MaxDecompressedBytes caps a gzip body after decompression (413 above
	// it) and a gRPC message (RESOURCE_EXHAUSTED above it). Default 64 MiB.
	MaxDecompressedBytes int64
	// MaxConcurrent bounds requests (HTTP and gRPC together) being decoded,
	// translated and appended at once, so memory stays bounded by about
	// MaxConcurrent decoded requests; more wait for a slot. Default 16.
	MaxConcurrent int
	// MaxQueueWait is how long a request waits for a slot before it is
	// refused as retryable (HTTP 429 + Retry-After, gRPC UNAVAILABLE with
	// RetryInfo); 0 refuses at once. Default 250ms.
	MaxQueueWait time.Duration

	GRPC GRPCConfig
}

// DeltaMode is the value of otlp.delta_temporality.
type DeltaMode string

// The delta_temporality values.
const (
	// DeltaReject refuses delta data points in partial_success.
	DeltaReject DeltaMode = "reject"
	// DeltaConvert adds each stream's deltas up in memory and stores the
	// running sums as cumulative series, with the OpenTelemetry
	// Collector-contrib deltatocumulative processor, as Prometheus's
	// otlp-deltatocumulative feature does.
	DeltaConvert DeltaMode = "convert"
	// DeltaNative stores delta values as sent, with metadata type unknown
	// and exponential histograms as gauge histograms, as Prometheus's
	// otlp-native-delta-ingestion feature does.
	DeltaNative DeltaMode = "native"
)

// DeltaConversionConfig limits the state DeltaConvert keeps: one running
// sum per stream (resource, scope, metric and data point attributes),
// in memory only.
type DeltaConversionConfig struct {
	// MaxStreams is how many streams are tracked at once; a data point of
	// a new stream beyond it is rejected until stale streams are dropped.
	// Default 100000: about 70 to 110 MB of state (measured 690 B for a
	// counter stream, 1.1 KiB for an exponential histogram with 40 buckets:
	// BenchmarkDeltaStreamMemory).
	MaxStreams int
	// MaxStale drops a stream that got no data point for this long (checked
	// once a minute); its next delta starts a new sum. Default 5m, as the
	// processor's and Prometheus's.
	MaxStale time.Duration
}

// GRPCConfig is the OTLP/gRPC listener.
type GRPCConfig struct {
	// Enabled starts MetricsService on ListenAddress. Default true.
	Enabled bool
	// ListenAddress is host:port; default 127.0.0.1:4317 (OTLP's gRPC port,
	// loopback only).
	ListenAddress string
}

// DefaultConfig returns the defaults: Prometheus's OTLP translation
// defaults, a 16 MiB body, 64 MiB decompressed, 16 requests at once, gRPC
// on 127.0.0.1:4317.
func DefaultConfig() Config {
	return Config{
		TranslationStrategy:                  otlptranslator.UnderscoreEscapingWithSuffixes,
		TargetInfo:                           true,
		LabelNameUnderscoreSanitization:      true,
		LabelNamePreserveMultipleUnderscores: true,
		DeltaTemporality:                     DeltaReject,
		DeltaConversion:                      DeltaConversionConfig{MaxStreams: 100_000, MaxStale: 5 * time.Minute},
		MaxBodyBytes:                         16 << 20,
		MaxDecompressedBytes:                 64 << 20,
		MaxConcurrent:                        16,
		MaxQueueWait:                         250 * time.Millisecond,
		GRPC: GRPCConfig{
			Enabled:       true,
			ListenAddress: "127.0.0.1:4317",
		},
	}
}

// Validate refuses options the receiver cannot run with. The server's
// config checks every key first, naming it (config.OTLPConfig); this
// guards other callers of New.
func (c *Config) Validate() error {
	switch c.TranslationStrategy {
	case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
	default:
		return fmt.Errorf("unknown translation strategy %q", c.TranslationStrategy)
	}
	switch c.DeltaTemporality {
	case DeltaReject, DeltaConvert, DeltaNative:
	default:
		return fmt.Errorf("unknown delta temporality %q", c.DeltaTemporality)
	}
	if c.MaxBodyBytes <= 0 || c.MaxDecompressedBytes <= 0 || c.MaxDecompressedBytes > int64(maxInt) || c.MaxConcurrent < 1 ||
		c.DeltaConversion.MaxStreams < 1 || c.DeltaConversion.MaxStale <= 0 || c.MaxQueueWait < 0 {
		return errors.New("sizes, max_concurrent and the delta conversion's limits must be positive")
	}
	return nil
}

const maxInt = int(^uint(0) >> 1)
