package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("embedded default is invalid: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:9201"},
		{"data_dir", c.DataDir, "./data"},
		{"log.level", c.Log.Level, "info"},
		{"storage.wal_sync", c.Storage.WALSync, "always"},
		{"storage.block_rows", c.Storage.BlockRows, 4096},
		{"storage.max_head_age", c.Storage.MaxHeadAge, 5 * time.Minute},
		{"storage.max_head_samples", c.Storage.MaxHeadSamples, int64(200_000_000)},
		{"storage.wal_segment_size", c.Storage.WALSegmentSize, ByteSize(64 << 20)},
		{"remote_write.max_body_bytes", c.RemoteWrite.MaxBodyBytes, ByteSize(32 << 20)},
		{"remote_write.max_decoded_bytes", c.RemoteWrite.MaxDecodedBytes, ByteSize(128 << 20)},
		{"remote_read.max_samples_per_query", c.RemoteRead.MaxSamplesPerQuery, int64(50_000_000)},
		{"remote_read.max_concurrent", c.RemoteRead.MaxConcurrent, 10},
		{"remote_read.max_bytes_per_frame", c.RemoteRead.MaxBytesPerFrame, ByteSize(1 << 20)},
		// Prometheus's own flag defaults.
		{"query.max_samples", c.Query.MaxSamples, 50_000_000},
		{"query.timeout", c.Query.Timeout, 2 * time.Minute},
		{"query.max_concurrent", c.Query.MaxConcurrent, 20},
		{"query.lookback_delta", c.Query.LookbackDelta, 5 * time.Minute},
		{"query.default_subquery_step", c.Query.DefaultSubqueryStep, time.Minute},
		{"query.admin_api_enabled", c.Query.AdminAPIEnabled, false},
		// Prometheus's otlp: defaults (the server checks they match
		// otlp.DefaultConfig: TestOTLPOptionsDefault).
		{"otlp.translation_strategy", c.OTLP.TranslationStrategy, "UnderscoreEscapingWithSuffixes"},
		{"otlp.target_info", c.OTLP.TargetInfo, true},
		{"otlp.promote_scope_metadata", c.OTLP.PromoteScopeMetadata, false},
		{"otlp.label_name_underscore_sanitization", c.OTLP.LabelNameUnderscoreSanitization, true},
		{"otlp.label_name_preserve_multiple_underscores", c.OTLP.LabelNamePreserveMultipleUnderscores, true},
		{"otlp.delta_temporality", c.OTLP.DeltaTemporality, "reject"},
		{"otlp.delta_conversion.max_streams", c.OTLP.DeltaConversion.MaxStreams, 100_000},
		{"otlp.delta_conversion.max_stale", c.OTLP.DeltaConversion.MaxStale, 5 * time.Minute},
		{"otlp.max_body_bytes", c.OTLP.MaxBodyBytes, ByteSize(16 << 20)},
		{"otlp.max_decompressed_bytes", c.OTLP.MaxDecompressedBytes, ByteSize(64 << 20)},
		{"otlp.max_concurrent", c.OTLP.MaxConcurrent, 16},
		{"otlp.max_queue_wait", c.OTLP.MaxQueueWait, 250 * time.Millisecond},
		{"otlp.grpc.enabled", c.OTLP.GRPC.Enabled, true},
		{"otlp.grpc.listen_address", c.OTLP.GRPC.ListenAddress, "127.0.0.1:4317"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("default %s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestLoadGood(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good_partial.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:0" || c.DataDir != "/tmp/acta" || c.Storage.BlockRows != 120 ||
		c.Storage.MaxSeries != 5000 || c.RemoteWrite.MaxBodyBytes != 1<<20 ||
		c.RemoteWrite.MaxDecodedBytes != 8_000_000 || c.Log.Format != "json" {
		t.Errorf("overrides not applied: %+v", c)
	}
	// Keys the file omits keep their defaults.
	if c.Storage.MaxHeadAge != 5*time.Minute || c.RemoteRead.MaxConcurrent != 10 || c.Log.Level != "info" {
		t.Errorf("defaults lost: %+v", c)
	}
	e, err := Load(filepath.Join("testdata", "good_empty.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, Default()) {
		t.Errorf("empty file should be all defaults: %+v", e)
	}
}

// Each bad file holds one mistake; the error must name the key and why.
func TestLoadBad(t *testing.T) {
	f := func(file, key, reason string) {
		t.Helper()
		_, err := Load(filepath.Join("testdata", file))
		if err == nil {
			t.Errorf("%s: no error", file)
			return
		}
		msg := err.Error()
		if !strings.Contains(msg, key) || !strings.Contains(msg, reason) {
			t.Errorf("%s: error %q should name key %q and reason %q", file, msg, key, reason)
		}
	}
	f("bad_unknown_top.yaml", "listne: unknown key (line 1)", "unknown key")
	f("bad_unknown_nested.yaml", "storage.block_row: unknown key (line 2)", "unknown key")
	f("bad_type_int.yaml", "storage.block_rows:", "cannot unmarshal !!str `many`")
	f("bad_size.yaml", "remote_write.max_body_bytes:", `invalid size "32 parsecs"`)
	f("bad_duration.yaml", "storage.max_head_age:", "soon")
	f("bad_enum.yaml", "storage.wal_sync:", `got "sometimes"`)
	f("bad_range.yaml", "storage.block_rows:", "must be between 1 and 1048576, got 0")
	f("bad_listen.yaml", "listen:", "want host:port")
	f("bad_decoded_below_body.yaml", "remote_write.max_decoded_bytes:", "must be at least remote_write.max_body_bytes")
	f("bad_zstd.yaml", "storage.zstd_level:", "got 30")
	f("bad_log_format.yaml", "log.format:", `got "xml"`)
	f("bad_negative.yaml", "remote_read.max_concurrent:", "got -1")
	f("bad_data_dir.yaml", "data_dir:", "must not be empty")
	f("bad_head_samples.yaml", "storage.max_head_samples:", "got -5")
	f("bad_otlp.yaml", "otlp.translation_strategy:", "unknown strategy")
	f("bad_otlp_unknown.yaml", "otlp.grpc.listen_adress: unknown key", "unknown key")
	f("bad_otlp_removed_delta.yaml", "otlp.convert_delta_to_cumulative: removed; use otlp.delta_temporality", "convert_delta_to_cumulative: true is delta_temporality: convert; false is reject, the default) (line 3)")
	f("bad_otlp_delta.yaml", "otlp.delta_conversion.max_streams:", "must be at least 1, got 0")
	f("bad_otlp_typo.yaml", "otlp.max_body_byte: unknown key", "unknown key")
	f("bad_auth_basic.yaml", "auth.basic:", `username and password_file must be set together, got username "prometheus" and password_file ""`)
	f("bad_tls_half.yaml", "tls:", "cert_file and key_file must be set together")
	f("bad_tls_client_ca.yaml", "tls.client_ca_file:", "needs tls.cert_file and tls.key_file")
	f("bad_query_timeout.yaml", "query.timeout:", "must be between 1s and 24h0m0s, got 0s")
	f("bad_objstore_endpoint.yaml", "storage.object_store.endpoint:", `without a scheme, got "https://s3.example.com"`)
	f("bad_objstore_bucket.yaml", "storage.object_store.bucket:", `got "Metrics_Bucket"`)
	f("bad_objstore_instance.yaml", "storage.object_store.instance_id:", "each writer needs its own")
	f("bad_objstore_max_age.yaml", "rotation.retention.max_age:", "storage.object_store.local_retention")
	f("bad_objstore_retention_owner.yaml", "storage.object_store.retention.max_age:", `invalid duration "1y"`)
	f("bad_objstore_retention_notowner.yaml", "storage.object_store.retention.max_age:", "storage.object_store.retention.owner: true")
	f("bad_objstore_keys.yaml", "storage.object_store.access_key_id_file:", "must be set together")
	f("bad_mode_query.yaml", "mode:", "set storage.object_store.enabled")
	f("bad_mode.yaml", "mode:", `got "read"`)
	f("bad_objstore_writers.yaml", "storage.object_store.query.writers:", "only a query-mode server")
	f("bad_objstore_query_url.yaml", "storage.object_store.query.writers:", `entry 0: want an http(s) remote-read URL`)
	f("bad_memory_budget.yaml", "storage.memory_budget:", "requests in flight may hold 12457082880 bytes (remote_write 64 x (33554432 + 134217728)")
}

func TestObjectStoreQueryMode(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good_objstore_query.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Storage.ObjectStore
	if c.Mode != ModeQuery || !o.Enabled || o.Prefix != "prod/eu" || !o.Retention.Owner || time.Duration(o.Retention.MaxAge) != 90*24*time.Hour ||
		len(o.Query.Writers) != 2 || !o.Query.PartialResponse || o.PartSize != 64<<20 || o.Query.RefreshInterval != time.Minute {
		t.Errorf("query-mode config: %+v", c)
	}
}

func TestParseByteSize(t *testing.T) {
	f := func(in string, want ByteSize, ok bool) {
		t.Helper()
		got, err := ParseByteSize(in)
		if (err == nil) != ok || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok=%v", in, got, err, want, ok)
		}
	}
	f("4096", 4096, true)
	f("64KiB", 64<<10, true)
	f("32MiB", 32<<20, true)
	f("2GiB", 2<<30, true)
	f("1MB", 1_000_000, true)
	f("10B", 10, true)
	f("-1", 0, false)
	f("1.5MiB", 0, false)
	f("MiB", 0, false)
	f("9999999999GiB", 0, false)
	if s := ByteSize(32 << 20).String(); s != "32MiB" {
		t.Errorf("String() = %q", s)
	}
}

func TestMemoryBudget(t *testing.T) {
	c, err := Parse([]byte(`
storage:
  memory_budget: 256MiB
  max_head_samples: 20000000
remote_write: {max_concurrent: 4, max_body_bytes: 1MiB, max_decoded_bytes: 4MiB}
remote_read: {max_concurrent: 2, max_body_bytes: 1MiB, max_decoded_bytes: 4MiB}
otlp: {max_concurrent: 2, max_body_bytes: 4MiB, max_decompressed_bytes: 16MiB}
`))
	if err != nil {
		t.Fatal(err)
	}
	// Half of 256 MiB less the read caches' share (an eighth and a
	// sixteenth: 32 and 16 MiB), below the default max_head_bytes of 1 GiB;
	// the item limit stays what is configured.
	if got := c.MaxHeadBytes(); got != 80<<20 {
		t.Errorf("MaxHeadBytes() = %d, want %d", got, 80<<20)
	}
	if chunks, readers := c.ReadCacheBytes(); chunks != 32<<20 || readers != 16<<20 {
		t.Errorf("ReadCacheBytes() = %d, %d, want 32 and 16 MiB", chunks, readers)
	}
	if got := c.MaxHeadSamples(); got != 20000000 {
		t.Errorf("MaxHeadSamples() = %d, want 20000000", got)
	}
	c.Storage.MaxHeadBytes = 1 << 20
	if got := c.MaxHeadBytes(); got != 1<<20 {
		t.Errorf("a lower max_head_bytes must win: %d", got)
	}
	c.Storage.MemoryBudget = 4 << 30 // the caches' full bounds fit
	if chunks, readers := c.ReadCacheBytes(); chunks != 128<<20 || readers != 64<<20 {
		t.Errorf("4 GiB budget: ReadCacheBytes() = %d, %d, want 128 and 64 MiB", chunks, readers)
	}
	c.Storage.MemoryBudget = 0
	if got := c.MaxHeadBytes(); got != 1<<20 {
		t.Errorf("no budget: %d", got)
	}
	if chunks, readers := c.ReadCacheBytes(); chunks != 0 || readers != 0 {
		t.Errorf("no budget: ReadCacheBytes() = %d, %d, want the store's defaults (0, 0)", chunks, readers)
	}
}

// The otlp block decodes over its defaults; keys the file omits keep them.
func TestLoadOTLP(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good_otlp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := c.OTLP
	if o.TranslationStrategy != "NoUTF8EscapingWithSuffixes" ||
		strings.Join(o.PromoteResourceAttributes, ",") != "k8s.namespace.name,cloud.region" ||
		!o.KeepIdentifyingResourceAttributes || o.TargetInfo || !o.PromoteScopeMetadata ||
		o.MaxBodyBytes != 8<<20 || o.MaxDecompressedBytes != 32<<20 || o.GRPC.Enabled ||
		o.DeltaTemporality != "convert" || o.DeltaConversion.MaxStreams != 5000 || o.DeltaConversion.MaxStale != 10*time.Minute {
		t.Fatalf("decoded %+v", o)
	}
	if o.GRPC.ListenAddress != "127.0.0.1:4317" || !o.LabelNameUnderscoreSanitization || o.MaxConcurrent != 16 {
		t.Fatalf("defaults lost: %+v", o)
	}
}

// Every mistake in the otlp block is reported, one line each, by key.
func TestLoadOTLPBadNamesEveryKey(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "bad_otlp_all.yaml"))
	if err == nil {
		t.Fatal("invalid otlp block accepted")
	}
	want := []string{
		`otlp.translation_strategy: unknown strategy "Underscores"`,
		"otlp.promote_resource_attributes: cannot be set together with promote_all_resource_attributes",
		`otlp.ignore_resource_attributes: attribute "b" listed twice`,
		`otlp.delta_temporality: unknown value "cumulative" (want reject, convert or native)`,
		"otlp.delta_conversion.max_streams: must be at least 1, got 0",
		"otlp.delta_conversion.max_stale: must be positive, got -1m0s",
		"otlp.max_body_bytes: must be positive, got 0",
		`otlp.grpc.listen_address: want host:port, got "4317"`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if n := strings.Count(err.Error(), "otlp."); n != len(want) {
		t.Errorf("%d otlp errors, want %d:\n%v", n, len(want), err)
	}
}
