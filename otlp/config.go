package otlp

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/otlptranslator"
)

// Config is the OTLP receiver configuration, embedded by the server config
// under the `otlp:` key. Keys named like Prometheus's `otlp:` block mean the
// same thing there; DefaultConfig gives Prometheus's defaults.
type Config struct {
	// TranslationStrategy names metrics and labels, as Prometheus's
	// otlp.translation_strategy: UnderscoreEscapingWithSuffixes (default),
	// UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or
	// NoTranslation.
	TranslationStrategy otlptranslator.TranslationStrategyOption `yaml:"translation_strategy"`
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
	// exponential histograms: DeltaReject (default, as Prometheus without a
	// feature flag), DeltaConvert (cumulative per stream, as Prometheus's
	// otlp-deltatocumulative) or DeltaNative (stored as sent, as
	// Prometheus's otlp-native-delta-ingestion). It replaces the removed
	// convert_delta_to_cumulative.
	DeltaTemporality DeltaMode `yaml:"delta_temporality"`
	// DeltaConversion bounds the per-stream state of DeltaConvert.
	DeltaConversion DeltaConversionConfig `yaml:"delta_conversion"`

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

	GRPC GRPCConfig `yaml:"grpc"`
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
	MaxStreams int `yaml:"max_streams"`
	// MaxStale drops a stream that got no data point for this long (checked
	// once a minute); its next delta starts a new sum. Default 5m, as the
	// processor's and Prometheus's.
	MaxStale time.Duration `yaml:"max_stale"`
}

// GRPCConfig is the OTLP/gRPC listener.
type GRPCConfig struct {
	// Enabled starts MetricsService on ListenAddress. Default true.
	Enabled bool `yaml:"enabled"`
	// ListenAddress is host:port; default 127.0.0.1:4317 (OTLP's gRPC port,
	// loopback only).
	ListenAddress string `yaml:"listen_address"`
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

// Validate reports every invalid key, each error naming it (relative to the
// `otlp:` block).
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch c.TranslationStrategy {
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
	case DeltaReject, DeltaConvert, DeltaNative:
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

// ByteSize is a size in bytes. In YAML it is a plain integer or a number
// with a binary (KiB, MiB, GiB) or decimal (KB, MB, GB) unit, like the
// server config's sizes: "16MiB".
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{ // longest suffixes first, so "MiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// ParseByteSize parses "4096", "64KiB" or "1MB".
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("want a non-negative integer with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)")
	}
	if n > (1<<62)/mult {
		return 0, errors.New("size overflows int64")
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML accepts an integer or a size string. It uses the
// callback form, which both yaml.v2 and yaml.v3 honour, so this package
// needs no YAML import.
func (b *ByteSize) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return fmt.Errorf("invalid size %q: %w", s, err)
	}
	*b = v
	return nil
}
