package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
	"github.com/acta-remote/acta-remote/queryapi"
	"github.com/acta-remote/acta-remote/remoteread"
	"github.com/acta-remote/acta-remote/remotewrite"
	"github.com/acta-remote/acta-remote/rotation"
)

// storeOptions maps the storage block, plus the remote-read query limits the
// store enforces before a single byte is answered.
func storeOptions(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) actastore.Options {
	s := cfg.Storage
	sync := actastore.SyncAlways
	if s.WALSync == "interval" {
		sync = actastore.SyncInterval
	}
	chunks, readers := cfg.ReadCacheBytes()
	return actastore.Options{
		MaxChunkCacheBytes: chunks,
		MaxReaderBytes:     readers,
		WALSync:            sync,
		WALSyncInterval:    s.WALSyncInterval,
		WALSegmentSize:     int64(s.WALSegmentSize),
		WALPreallocate:     s.WALPreallocate,
		WALCheckpointBytes: walCheckpointBytes(s.WALCheckpointBytes),
		BlockRows:          s.BlockRows,
		MaxHeadAge:         s.MaxHeadAge,
		OutOfOrderWindow:   s.OutOfOrderWindow,
		MaxHeadSamples:     cfg.MaxHeadSamples(),
		MaxHeadBytes:       cfg.MaxHeadBytes(),
		MaxFuture:          s.MaxFuture,
		MinTimestamp:       s.MinTimestamp,
		// Named after Prometheus's feature flag; read time (actastore).
		StartTimeZeroSamples: s.CreatedTimestampZeroIngestion,
		MaxOpenFiles:         s.MaxOpenFiles,
		WarmReaders:          true,
		MaxSeries:            s.MaxSeries,
		MaxQuerySeries:       cfg.RemoteRead.MaxSeriesPerQuery,
		MaxQuerySamples:      cfg.RemoteRead.MaxSamplesPerQuery,
		FlushZstd:            s.FlushCodec != "none",
		FlushZstdMinRows:     flushZstdMinRows(s.FlushCodec),
		ZstdLevel:            s.ZstdLevel,
		Rotation: rotation.Policy{
			Period:       time.Duration(cfg.Rotation.Period),
			MaxFileBytes: int64(cfg.Rotation.MaxFileSize),
		},
		Retention: rotation.Retention{
			MaxAge:   time.Duration(cfg.Rotation.Retention.MaxAge),
			MaxBytes: int64(cfg.Rotation.Retention.MaxSize),
		},
		Compaction: actastore.CompactionOptions{
			Disabled:    !cfg.Rotation.Compaction.Enabled,
			BlockRows:   cfg.Rotation.Compaction.BlockRows,
			ZstdLevel:   cfg.Rotation.Compaction.ZstdLevel,
			BytesPerSec: int64(cfg.Rotation.Compaction.MaxBytesPerSecond),
			Tiers:       tiers(cfg, log),
		},
		MaintenanceInterval: cfg.Rotation.Interval,
		Logger:              log.With("component", "store"),
		Registerer:          reg,
	}
}

func writeLimits(c config.RemoteWriteConfig) remotewrite.Limits {
	return remotewrite.Limits{
		MaxBodyBytes:        int64(c.MaxBodyBytes),
		MaxDecodedBytes:     int64(c.MaxDecodedBytes),
		MaxSeriesPerRequest: c.MaxSeriesPerRequest,
		MaxLabelsPerSeries:  c.MaxLabelsPerSeries,
		MaxLabelNameLength:  c.MaxLabelNameLength,
		MaxLabelValueLength: c.MaxLabelValueLength,
		MaxConcurrent:       c.MaxConcurrent,
		MaxQueueWait:        c.MaxQueueWait,
	}
}

func readLimits(c config.RemoteReadConfig) remoteread.Limits {
	return remoteread.Limits{
		MaxBodyBytes:       int64(c.MaxBodyBytes),
		MaxDecodedBytes:    int64(c.MaxDecodedBytes),
		MaxSamplesPerQuery: c.MaxSamplesPerQuery,
		MaxSeriesPerQuery:  c.MaxSeriesPerQuery,
		MaxConcurrent:      c.MaxConcurrent,
		MaxQueueWait:       c.MaxQueueWait,
		MaxBytesPerFrame:   int(c.MaxBytesPerFrame),
	}
}

// queryOptions maps the query block onto the query API; the flags and
// build info it reports are Prometheus's names for the same settings, so
// tools reading /api/v1/status/flags see what this server does.
func queryOptions(cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) queryapi.Options {
	q := cfg.Query
	var retention []string
	if a := cfg.Rotation.Retention.MaxAge; a != 0 {
		retention = append(retention, a.String())
	}
	if s := cfg.Rotation.Retention.MaxSize; s != 0 {
		retention = append(retention, s.String())
	}
	return queryapi.Options{
		MaxSamples:    q.MaxSamples,
		Timeout:       q.Timeout,
		LookbackDelta: q.LookbackDelta,
		SubqueryStep:  q.DefaultSubqueryStep,
		MaxConcurrent: q.MaxConcurrent,
		MaxQueueWait:  q.MaxQueueWait,
		EnableAdmin:   q.AdminAPIEnabled,
		BuildInfo:     buildInfo(),
		Flags: map[string]string{
			"query.lookback-delta":  q.LookbackDelta.String(),
			"query.max-samples":     strconv.Itoa(q.MaxSamples),
			"query.timeout":         q.Timeout.String(),
			"query.max-concurrency": strconv.Itoa(q.MaxConcurrent),
			"web.enable-admin-api":  strconv.FormatBool(q.AdminAPIEnabled),
			"web.listen-address":    cfg.Listen,
			"storage.tsdb.path":     cfg.DataDir,
		},
		StorageRetention: strings.Join(retention, " or "),
		Logger:           log.With("component", "query"),
		Registerer:       reg,
	}
}

// buildInfo is /api/v1/status/buildinfo: acta-remote's module version (a
// tag, or "(devel)" for a local build), the VCS revision when the build
// recorded one, and the Go version.
func buildInfo() v1.PrometheusVersion {
	b := v1.PrometheusVersion{Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.BuildDate = s.Value
		}
	}
	return b
}

// flushZstdMinRows is the block size from which storage.flush_codec "auto"
// compresses flushed blocks. Below it (the few dozen rows a live 15 s series
// flushes every max_head_age) zstd saved 0-15% for 10-15x the flush CPU;
// from about a hundred rows on it halves counter and gauge blocks
// (acta/internal/encoding benchmark table; docs/performance.md, "Disk bytes
// per sample, compaction and write amplification").
func flushZstdMinRows(codec string) int {
	if codec == "auto" {
		return 128
	}
	return 0
}

// tiers maps rotation.compaction.tiers, saying at start-up which tiers
// retention leaves unused (actastore.CompactionOptions.Tiers): a merged file
// outlives max_age by up to its length.
func tiers(cfg *config.Config, log *slog.Logger) rotation.Tiers {
	var out rotation.Tiers
	age := time.Duration(cfg.Rotation.Retention.MaxAge)
	for _, p := range cfg.Rotation.Compaction.Tiers {
		d := time.Duration(p)
		out = append(out, d)
		if age > 0 && d > age/2 {
			log.Info("rotation.compaction.tiers: a tier longer than half of rotation.retention.max_age is not used",
				"tier", p.String(), "max_age", cfg.Rotation.Retention.MaxAge.String())
		}
	}
	return out
}

// otlpOptions maps the otlp block (validated by config) onto the receiver's
// options.
func otlpOptions(c config.OTLPConfig) otlp.Config {
	return otlp.Config{
		TranslationStrategy:                  otlptranslator.TranslationStrategyOption(c.TranslationStrategy),
		PromoteResourceAttributes:            c.PromoteResourceAttributes,
		PromoteAllResourceAttributes:         c.PromoteAllResourceAttributes,
		IgnoreResourceAttributes:             c.IgnoreResourceAttributes,
		KeepIdentifyingResourceAttributes:    c.KeepIdentifyingResourceAttributes,
		TargetInfo:                           c.TargetInfo,
		PromoteScopeMetadata:                 c.PromoteScopeMetadata,
		LabelNameUnderscoreSanitization:      c.LabelNameUnderscoreSanitization,
		LabelNamePreserveMultipleUnderscores: c.LabelNamePreserveMultipleUnderscores,
		DeltaTemporality:                     otlp.DeltaMode(c.DeltaTemporality),
		DeltaConversion:                      otlp.DeltaConversionConfig{MaxStreams: c.DeltaConversion.MaxStreams, MaxStale: c.DeltaConversion.MaxStale},
		MaxBodyBytes:                         int64(c.MaxBodyBytes),
		MaxDecompressedBytes:                 int64(c.MaxDecompressedBytes),
		MaxConcurrent:                        c.MaxConcurrent,
		MaxQueueWait:                         c.MaxQueueWait,
		GRPC:                                 otlp.GRPCConfig{Enabled: c.GRPC.Enabled, ListenAddress: c.GRPC.ListenAddress},
	}
}

// walCheckpointBytes maps storage.wal_checkpoint_bytes (0: never) onto
// actastore.Options.WALCheckpointBytes (0: the default, negative: never).
func walCheckpointBytes(b config.ByteSize) int64 {
	if b == 0 {
		return -1
	}
	return int64(b)
}
