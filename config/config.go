// Package config is the acta-remote server configuration: one YAML file whose
// every key has a default, strict decoding (unknown keys are errors), and
// validation whose errors name the offending key and the reason.
//
// The key reference with defaults and meanings lives in
// docs/configuration.md (TestDocsDocumentEveryKey holds it to every key) and in
// default.yaml (embedded: the server runs on it when no --config is given).
package config

import (
	_ "embed"
	"time"
)

// DefaultYAML is the embedded default configuration file. Default() parses it,
// so the documented file and the built-in defaults cannot drift apart.
//
//go:embed default.yaml
var DefaultYAML []byte

// Config is the whole server configuration.
type Config struct {
	// Listen is the HTTP listen address (host:port). Default 127.0.0.1:9201,
	// loopback only: exposing the server is a deliberate choice.
	Listen string `yaml:"listen"`
	// DataDir holds the WAL, the series catalog and the series files.
	DataDir string `yaml:"data_dir"`
	// Mode is "write" (ingest; the default) or "query" (read-only over a
	// bucket's every writer prefix: storage.object_store).
	Mode        string            `yaml:"mode"`
	Log         LogConfig         `yaml:"log"`
	Storage     StorageConfig     `yaml:"storage"`
	RemoteWrite RemoteWriteConfig `yaml:"remote_write"`
	RemoteRead  RemoteReadConfig  `yaml:"remote_read"`
	// Query is the Prometheus HTTP query API (PromQL, series, labels, ...).
	Query QueryConfig `yaml:"query"`
	// OTLP is the OTLP metrics receiver's block (otlp.go).
	OTLP OTLPConfig `yaml:"otlp"`
	// Rotation seals series files, deletes them for retention and
	// compacts sealed ones.
	Rotation RotationConfig `yaml:"rotation"`
	// Auth and TLS guard the HTTP endpoints and the OTLP gRPC service alike.
	Auth AuthConfig `yaml:"auth"`
	TLS  TLSConfig  `yaml:"tls"`
	// Debug holds operator tools served on the HTTP listener.
	Debug DebugConfig `yaml:"debug"`
	// Runtime tunes the Go runtime, as Prometheus's runtime section does.
	Runtime RuntimeConfig `yaml:"runtime"`
}

// RuntimeConfig tunes the Go runtime.
type RuntimeConfig struct {
	// GOGC is the garbage collector's target (runtime/debug.SetGCPercent):
	// the heap may grow by this percentage of what is live before a
	// collection. Go's default, 100, lets garbage double a store's resident
	// memory; Prometheus runs at 75, VictoriaMetrics at 30. The GOGC
	// environment variable wins.
	GOGC int `yaml:"gogc"`
}

// DebugConfig turns operator tools on the HTTP listener on or off.
type DebugConfig struct {
	// Pprof serves Go's runtime profiles (net/http/pprof) at /debug/pprof/,
	// behind the same auth as the data. On by default, as in Prometheus
	// and VictoriaMetrics: a slowdown is profiled while it happens, not
	// after a restart with another config; a profile costs only while one
	// is taken.
	Pprof bool `yaml:"pprof"`
}

// AuthConfig turns on client authentication; both kinds may be set (either
// credential is then accepted). Secrets live in files, never in this config,
// so the config can be shared and logged.
type AuthConfig struct {
	Basic BasicAuthConfig `yaml:"basic"`
	// BearerTokenFile holds the token expected in "Authorization: Bearer".
	BearerTokenFile string `yaml:"bearer_token_file"`
}

// BasicAuthConfig is HTTP basic auth: both keys or neither.
type BasicAuthConfig struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
}

// TLSConfig serves HTTP and OTLP gRPC over TLS when CertFile and KeyFile
// are set; ClientCAFile additionally requires client certificates (mTLS).
type TLSConfig struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

// LogConfig selects the slog handler.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn or error
	Format string `yaml:"format"` // text or json
}

// StorageConfig maps onto actastore.Options.
type StorageConfig struct {
	// WALSync is "always" (fsync before acknowledging; group commit) or
	// "interval" (fsync every WALSyncInterval; a crash may lose that much).
	WALSync         string        `yaml:"wal_sync"`
	WALSyncInterval time.Duration `yaml:"wal_sync_interval"`
	WALSegmentSize  ByteSize      `yaml:"wal_segment_size"`
	// WALPreallocate zero-fills WAL space ahead of the writer: each fsync
	// then writes data only, and every WAL byte is written twice.
	WALPreallocate bool `yaml:"wal_preallocate"`
	// WALCheckpointBytes: once the WAL holds this much, the heads are
	// written to a checkpoint and the segments before it deleted; 0: never.
	WALCheckpointBytes ByteSize `yaml:"wal_checkpoint_bytes"`
	// BlockRows flushes a series' head into one Acta block at this many samples.
	BlockRows int `yaml:"block_rows"`
	// MaxHeadAge flushes a series' head when its oldest sample is this old.
	MaxHeadAge time.Duration `yaml:"max_head_age"`
	// OutOfOrderWindow: how far behind a series' newest sample a sample may
	// be and still be accepted; 0 accepts any age.
	OutOfOrderWindow time.Duration `yaml:"out_of_order_window"`
	// MaxHeadSamples: while the head holds more unflushed items (float
	// samples and histograms) than this, writes get 503 with Retry-After
	// (flushing has fallen behind); past half of it the largest heads are
	// flushed. 0 is unlimited.
	MaxHeadSamples int64 `yaml:"max_head_samples"`
	// MaxHeadBytes is the same bound in bytes of memory, for every kind
	// (float heads are XOR-compressed, about 230 bytes for 20 samples at
	// 15 s; a native histogram costs a few hundred).
	// 0 is unlimited; storage.memory_budget lowers it to half the budget.
	MaxHeadBytes ByteSize `yaml:"max_head_bytes"`
	// MaxFuture refuses samples, histograms and exemplars more than this
	// ahead of the server's clock (400, out of bounds), as Prometheus
	// refuses anything beyond now+10m. 0 disables the bound.
	MaxFuture time.Duration `yaml:"max_future"`
	// MinTimestamp refuses samples and histograms older than this, in ms
	// since the Unix epoch (400, out of bounds). The default 0 refuses
	// negative timestamps, as Prometheus does.
	MinTimestamp int64 `yaml:"min_timestamp"`
	// CreatedTimestampZeroIngestion presents, to queries and remote read,
	// a zero sample at each stored start timestamp, as Prometheus stores
	// one with --enable-feature=created-timestamp-zero-ingestion (named
	// after that flag). Read time only: the files keep what was sent.
	CreatedTimestampZeroIngestion bool `yaml:"created_timestamp_zero_ingestion"`
	MaxOpenFiles                  int  `yaml:"max_open_files"`
	// FlushCodec is "auto" (default: zstd at ZstdLevel for flushed blocks
	// of at least FlushAutoMinRows rows, none for the small blocks of
	// age-triggered flushes, which compaction compresses later), "none"
	// or "zstd" (every block).
	FlushCodec string `yaml:"flush_codec"`
	ZstdLevel  int    `yaml:"zstd_level"`
	// MaxSeries is the cardinality limit; 0 means unlimited.
	MaxSeries int `yaml:"max_series"`
	// MemoryBudget (0: none) caps what the limits may add up to: half for
	// the head and the read caches (ReadCacheBytes; MaxHeadBytes is
	// lowered to fit), half for requests in flight (Validate refuses
	// max_concurrent x body sizes above it).
	MemoryBudget ByteSize `yaml:"memory_budget"`
	// ObjectStore uploads sealed series files to an S3-compatible bucket
	// and reads them from there (objectstore.go).
	ObjectStore ObjectStoreConfig `yaml:"object_store"`
}

// RemoteWriteConfig bounds what one remote-write request may cost.
type RemoteWriteConfig struct {
	// MaxBodyBytes caps the snappy-compressed request body (413 above it).
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxDecodedBytes caps the length the snappy header declares, checked
	// before anything is allocated (413 above it).
	MaxDecodedBytes     ByteSize `yaml:"max_decoded_bytes"`
	MaxSeriesPerRequest int      `yaml:"max_series_per_request"`
	MaxLabelsPerSeries  int      `yaml:"max_labels_per_series"`
	MaxLabelNameLength  int      `yaml:"max_label_name_length"`  // bytes
	MaxLabelValueLength int      `yaml:"max_label_value_length"` // bytes
	// MaxConcurrent requests decoded at once; more wait for a slot.
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxQueueWait: how long a request waits for a slot before it gets
	// 503 with Retry-After (0 answers 503 at once; apistatus says why not 429).
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
}

// RemoteReadConfig bounds what one remote-read request may cost.
type RemoteReadConfig struct {
	MaxBodyBytes    ByteSize `yaml:"max_body_bytes"`
	MaxDecodedBytes ByteSize `yaml:"max_decoded_bytes"`
	// MaxSamplesPerQuery: a query selecting more samples fails with 400
	// (Prometheus's --storage.remote.read-sample-limit).
	MaxSamplesPerQuery int64 `yaml:"max_samples_per_query"`
	// MaxSeriesPerQuery: a query selecting more series fails with 400.
	MaxSeriesPerQuery int `yaml:"max_series_per_query"`
	// MaxConcurrent read requests served at once; more wait for a slot
	// (Prometheus's --storage.remote.read-concurrent-limit).
	MaxConcurrent int `yaml:"max_concurrent"`
	// MaxQueueWait: how long a read waits for a slot before it gets 429.
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
	// MaxBytesPerFrame bounds one STREAMED_XOR_CHUNKS frame, give or take a
	// chunk (Prometheus's --storage.remote.read-max-bytes-in-frame).
	MaxBytesPerFrame ByteSize `yaml:"max_bytes_per_frame"`
}

// RotationConfig maps onto actastore.Options' Rotation, Retention,
// Compaction and MaintenanceInterval.
type RotationConfig struct {
	// Period seals each series' file at UTC-aligned multiples of Period
	// (1d: midnight UTC), so every series rotates at the same instants.
	// 0 rotates by size only.
	Period Period `yaml:"period"`
	// MaxFileSize seals a file once it holds this many bytes; 0: no limit.
	// It also bounds what one compaction holds in memory.
	MaxFileSize ByteSize `yaml:"max_file_size"`
	// Interval: how often retention, then compaction, run.
	Interval   time.Duration    `yaml:"interval"`
	Retention  RetentionConfig  `yaml:"retention"`
	Compaction CompactionConfig `yaml:"compaction"`
}

// RetentionConfig deletes old series files; 0 disables each rule.
type RetentionConfig struct {
	// MaxAge deletes files whose every sample is older than this.
	MaxAge Period `yaml:"max_age"`
	// MaxSize deletes the oldest sealed files while the data directory
	// allocates more than this.
	MaxSize ByteSize `yaml:"max_size"`
}

// CompactionConfig rewrites sealed files into large blocks.
type CompactionConfig struct {
	Enabled           bool     `yaml:"enabled"`
	BlockRows         int      `yaml:"block_rows"`
	ZstdLevel         int      `yaml:"zstd_level"`
	MaxBytesPerSecond ByteSize `yaml:"max_bytes_per_second"` // 0: unpaced
	// Tiers merge runs of sealed files into one file per UTC-aligned
	// window of each tier (rotation.Tiers); empty: no merges.
	Tiers []Period `yaml:"tiers"`
}
