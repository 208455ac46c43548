package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/prometheus/otlptranslator"
)

// OTLPConfig is the `otlp:` block: the OTLP receiver's keys. Keys named like
// Prometheus's `otlp:` block mean the same thing there; default.yaml holds
// Prometheus's defaults. The server maps it onto otlp.Config.
type OTLPConfig struct {
	// TranslationStrategy names metrics and labels, as Prometheus's
	// otlp.translation_strategy: UnderscoreEscapingWithSuffixes (default),
	// UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or
	// NoTranslation.
	TranslationStrategy string `yaml:"translation_strategy"`
	// PromoteResourceAttributes are resource attributes copied onto every
	// series of the resource as labels (a data point attribute of the same
	// name wins).
	PromoteResourceAttributes []string `yaml:"promote_resource_attributes"`
	// PromoteAllResourceAttributes promotes every resource attribute except
	// IgnoreResourceAttributes; it excludes PromoteResourceAttributes.
	PromoteAllResourceAttributes bool     `yaml:"promote_all_resource_attributes"`
	IgnoreResourceAttributes     []string `yaml:"ignore_resource_attributes"`
	// KeepIdentifyingResourceAttributes keeps service.name,
	// service.namespace and service.instance.id on target_info as well as
	// turning them into job and instance.
	KeepIdentifyingResourceAttributes bool `yaml:"keep_identifying_resource_attributes"`
	// TargetInfo writes the non-identifying resource attributes as a
	// target_info series (value 1) per resource. Default true, as Prometheus.
	TargetInfo bool `yaml:"target_info"`
	// PromoteScopeMetadata adds otel_scope_name, otel_scope_version,
	// otel_scope_schema_url and otel_scope_<attribute> labels. Default false,
	// as Prometheus.
	PromoteScopeMetadata bool `yaml:"promote_scope_metadata"`
	// LabelNameUnderscoreSanitization prefixes "key" to label names that
	// start with a single '_'; LabelNamePreserveMultipleUnderscores keeps
	// runs of '_' in escaped label names. Both default true, as Prometheus
	// (for backwards compatibility); both matter only with escaping.
	LabelNameUnderscoreSanitization      bool `yaml:"label_name_underscore_sanitization"`
	LabelNamePreserveMultipleUnderscores bool `yaml:"label_name_preserve_multiple_underscores"`
	// DeltaTemporality says what becomes of delta sums, histograms and
	// exponential histograms: reject (default, as Prometheus without a
	// feature flag), convert (cumulative per stream, as Prometheus's
	// otlp-deltatocumulative) or native (stored as sent, as Prometheus's
	// otlp-native-delta-ingestion). It replaces the removed
	// convert_delta_to_cumulative.
	DeltaTemporality string `yaml:"delta_temporality"`
	// DeltaConversion bounds the per-stream state of DeltaConvert.
	DeltaConversion OTLPDeltaConversionConfig `yaml:"delta_conversion"`

	// MaxBodyBytes caps the HTTP request body as received (compressed or
	// not); larger bodies get 413. Default 16 MiB.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxDecompressedBytes caps a gzip body after decompression (413 above
	// it) and a gRPC message (RESOURCE_EXHAUSTED above it). Default 64 MiB.
	MaxDecompressedBytes ByteSize `yaml:"max_decompressed_bytes"`
	// MaxConcurrent bounds requests (HTTP and gRPC together) being decoded,
	// translated and appended at once, so memory stays bounded by about
	// MaxConcurrent decoded requests; more wait for a slot. Default 16.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxQueueWait is how long a request waits for a slot before it is
	// refused as retryable (HTTP 429 + Retry-After, gRPC UNAVAILABLE with
	// RetryInfo); 0 refuses at once. Default 250ms.
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`

	GRPC OTLPGRPCConfig `yaml:"grpc"`
}

// OTLPDeltaConversionConfig limits the state delta_temporality: convert keeps: one running
// sum per stream (resource, scope, metric and data point attributes),
// in memory only.
type OTLPDeltaConversionConfig struct {
	// MaxStreams is how many streams are tracked at once; a data point of
	// a new stream beyond it is rejected until stale streams are dropped.
	// Default 100000: about 70 to 110 MB of state (measured 690 B for a
	// counter stream, 1.1 KiB for an exponential histogram with 40 buckets:
	// BenchmarkDeltaStreamMemory).
	MaxStreams int `yaml:"max_streams"`
	// MaxStale drops a stream that got no data point for this long (checked
	// once a minute); its next delta starts a new sum. Default 5m, as the
	// processor's and Prometheus's.
	MaxStale time.Duration `yaml:"max_stale"`
}

// OTLPGRPCConfig is the OTLP/gRPC listener.
type OTLPGRPCConfig struct {
	// Enabled starts MetricsService on ListenAddress. Default true.
	Enabled bool `yaml:"enabled"`
	// ListenAddress is host:port; default 127.0.0.1:4317 (OTLP's gRPC port,
	// loopback only).
	ListenAddress string `yaml:"listen_address"`
}

// validate reports every invalid key of the otlp block, each error naming
// it relative to the block (Validate prefixes "otlp.").
func (c *OTLPConfig) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch otlptranslator.TranslationStrategyOption(c.TranslationStrategy) {
	case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
	default:
		bad("translation_strategy", "unknown strategy %q (want UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or NoTranslation)", c.TranslationStrategy)
	}
	if c.PromoteAllResourceAttributes {
		if len(c.PromoteResourceAttributes) > 0 {
			bad("promote_resource_attributes", "cannot be set together with promote_all_resource_attributes")
		}
		if err := checkAttributeList(c.IgnoreResourceAttributes); err != nil {
			bad("ignore_resource_attributes", "%v", err)
		}
	} else {
		if len(c.IgnoreResourceAttributes) > 0 {
			bad("ignore_resource_attributes", "needs promote_all_resource_attributes: true")
		}
		if err := checkAttributeList(c.PromoteResourceAttributes); err != nil {
			bad("promote_resource_attributes", "%v", err)
		}
	}
	switch c.DeltaTemporality {
	case "reject", "convert", "native":
	default:
		bad("delta_temporality", "unknown value %q (want reject, convert or native)", c.DeltaTemporality)
	}
	if c.DeltaConversion.MaxStreams < 1 {
		bad("delta_conversion.max_streams", "must be at least 1, got %d", c.DeltaConversion.MaxStreams)
	}
	if c.DeltaConversion.MaxStale <= 0 {
		bad("delta_conversion.max_stale", "must be positive, got %s", c.DeltaConversion.MaxStale)
	}
	if c.MaxBodyBytes <= 0 {
		bad("max_body_bytes", "must be positive, got %d", c.MaxBodyBytes)
	}
	if c.MaxDecompressedBytes <= 0 {
		bad("max_decompressed_bytes", "must be positive, got %d", c.MaxDecompressedBytes)
	}
	if c.MaxQueueWait < 0 || c.MaxQueueWait > time.Minute {
		bad("max_queue_wait", "must be between 0s and 1m, got %s", c.MaxQueueWait)
	}
	if c.MaxConcurrent < 1 {
		bad("max_concurrent", "must be at least 1, got %d", c.MaxConcurrent)
	}
	// gRPC takes its message cap as an int.
	if int64(c.MaxDecompressedBytes) > int64(maxInt) {
		bad("max_decompressed_bytes", "must be at most %d, got %d", maxInt, c.MaxDecompressedBytes)
	}
	if c.GRPC.Enabled {
		if _, _, err := net.SplitHostPort(c.GRPC.ListenAddress); err != nil {
			bad("grpc.listen_address", "want host:port, got %q: %v", c.GRPC.ListenAddress, err)
		}
	}
	return errors.Join(errs...)
}

const maxInt = int(^uint(0) >> 1)

// checkAttributeList refuses empty and repeated names, as Prometheus does.
func checkAttributeList(attrs []string) error {
	seen := make(map[string]bool, len(attrs))
	for _, a := range attrs {
		switch {
		case strings.TrimSpace(a) == "":
			return errors.New("empty attribute name")
		case a != strings.TrimSpace(a):
			return fmt.Errorf("attribute %q has leading or trailing spaces", a)
		case seen[a]:
			return fmt.Errorf("attribute %q listed twice", a)
		}
		seen[a] = true
	}
	return nil
}
