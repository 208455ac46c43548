package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/config"
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
	return actastore.Options{
		WALSync:          sync,
		WALSyncInterval:  s.WALSyncInterval,
		WALSegmentSize:   int64(s.WALSegmentSize),
		BlockRows:        s.BlockRows,
		MaxHeadAge:       s.MaxHeadAge,
		OutOfOrderWindow: s.OutOfOrderWindow,
		MaxHeadSamples:   cfg.MaxHeadSamples(),
		MaxHeadBytes:     cfg.MaxHeadBytes(),
		MaxFuture:        s.MaxFuture,
		MinTimestamp:     s.MinTimestamp,
		MaxOpenFiles:     s.MaxOpenFiles,
		MaxSeries:        s.MaxSeries,
		MaxQuerySeries:   cfg.RemoteRead.MaxSeriesPerQuery,
		MaxQuerySamples:  cfg.RemoteRead.MaxSamplesPerQuery,
		FlushZstd:        s.FlushCodec != "none",
		FlushZstdMinRows: flushZstdMinRows(s.FlushCodec),
		ZstdLevel:        s.ZstdLevel,
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

// flushZstdMinRows is the block size from which storage.flush_codec "auto"
// compresses flushed blocks. Below it (the few dozen rows a live 15 s series
// flushes every max_head_age) zstd saved 0-15% for 10-15x the flush CPU;
// from about a hundred rows on it halves counter and gauge blocks
// (acta/internal/encoding benchmark table, README "Performance").
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
