package otlp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"go.yaml.in/yaml/v3"
)

// decodeConfig decodes a YAML file over the defaults, strictly, the way the
// server's config package decodes the `otlp:` block.
func decodeConfig(t *testing.T, name string) (Config, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return cfg, dec.Decode(&cfg)
}

func TestDefaultConfigIsValidAndPrometheusLike(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TranslationStrategy != otlptranslator.UnderscoreEscapingWithSuffixes || !c.TargetInfo || c.PromoteScopeMetadata ||
		!c.LabelNameUnderscoreSanitization || !c.LabelNamePreserveMultipleUnderscores || c.DeltaTemporality != DeltaReject ||
		c.DeltaConversion.MaxStreams != 100_000 || c.DeltaConversion.MaxStale != 5*time.Minute ||
		c.MaxBodyBytes != 16<<20 || c.MaxDecompressedBytes != 64<<20 || c.MaxConcurrent != 16 || !c.GRPC.Enabled || c.GRPC.ListenAddress != "127.0.0.1:4317" {
		t.Fatalf("defaults changed: %+v", c)
	}
}

func TestConfigGood(t *testing.T) {
	c, err := decodeConfig(t, "config_good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TranslationStrategy != otlptranslator.NoUTF8EscapingWithSuffixes ||
		strings.Join(c.PromoteResourceAttributes, ",") != "k8s.namespace.name,cloud.region" ||
		!c.KeepIdentifyingResourceAttributes || c.TargetInfo || !c.PromoteScopeMetadata ||
		c.MaxBodyBytes != 8<<20 || c.MaxDecompressedBytes != 32<<20 || c.GRPC.Enabled ||
		c.DeltaTemporality != DeltaConvert || c.DeltaConversion.MaxStreams != 5000 || c.DeltaConversion.MaxStale != 10*time.Minute {
		t.Fatalf("decoded %+v", c)
	}
	// Keys the file omits keep their defaults.
	if c.GRPC.ListenAddress != "127.0.0.1:4317" || !c.LabelNameUnderscoreSanitization {
		t.Fatalf("defaults lost: %+v", c)
	}
}

func TestConfigBadNamesEveryKey(t *testing.T) {
	c, err := decodeConfig(t, "config_bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{
		`translation_strategy: unknown strategy "Underscores"`,
		"promote_resource_attributes: cannot be set together with promote_all_resource_attributes",
		`ignore_resource_attributes: attribute "b" listed twice`,
		`delta_temporality: unknown value "cumulative" (want reject, convert or native)`,
		"delta_conversion.max_streams: must be at least 1, got 0",
		"delta_conversion.max_stale: must be positive, got -1m0s",
		"max_body_bytes: must be positive, got 0",
		`grpc.listen_address: want host:port, got "4317"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// One problem per line: the config package prefixes each with "otlp.".
	if n := strings.Count(err.Error(), "\n") + 1; n != 8 {
		t.Errorf("%d lines, want 8:\n%v", n, err)
	}
}

// The removed convert_delta_to_cumulative is an unknown key here; the
// config package names its successor (config.TestRemovedKeyNamesSuccessor).
func TestConfigUnknownKey(t *testing.T) {
	_, err := decodeConfig(t, "config_typo.yaml")
	if err == nil || !strings.Contains(err.Error(), "max_body_byte") {
		t.Fatalf("typo not reported by name: %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	f := func(s string, want ByteSize, ok bool) {
		t.Helper()
		got, err := ParseByteSize(s)
		if (err == nil) != ok || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok=%v", s, got, err, want, ok)
		}
	}
	f("4096", 4096, true)
	f("64KiB", 64<<10, true)
	f("1 MB", 1e6, true)
	f("2GiB", 2<<30, true)
	f("12B", 12, true)
	f("-1", 0, false)
	f("1.5MiB", 0, false)
	f("lots", 0, false)
	f("9999999999GiB", 0, false)
}
