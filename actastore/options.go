package actastore

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/rotation"
)

// SyncPolicy says when an appended WAL batch is made durable.
type SyncPolicy uint8

const (
	// SyncAlways fsyncs the WAL before Append returns (group commit: one
	// fsync covers every concurrent appender). The default.
	SyncAlways SyncPolicy = iota
	// SyncInterval fsyncs the WAL every Options.SyncInterval; Append returns
	// once the batch is written to the OS. A crash may lose up to one
	// interval of acknowledged data.
	SyncInterval
)

// Options configure a Store. Zero fields take the defaults documented on
// each field.
type Options struct {
	WALSync         SyncPolicy
	WALSyncInterval time.Duration // with SyncInterval; default 1s
	WALSegmentSize  int64         // bytes; default 64 MiB
	// WALPreallocate zero-fills WAL space ahead of the writer
	// (wal.Options.Preallocate): cheaper syncs, every WAL byte written twice.
	WALPreallocate bool
	// WALCheckpointBytes: once the WAL holds this many bytes (and as
	// much as the last checkpoint), the heads are written to a checkpoint
	// and the segments before it deleted, so a restart after a crash reads
	// the heads' compressed copy instead of every sample's record
	// (checkpoint.go). Default 16 MiB; negative: never.
	WALCheckpointBytes int64

	// BlockRows flushes a series' head into one Acta block when it holds
	// this many samples. Default 4096.
	BlockRows int
	// MaxHeadAge flushes a series' head when its oldest buffered sample
	// arrived this long ago (wall clock). Default 5m.
	MaxHeadAge time.Duration
	// OutOfOrderWindow is how far behind a series' newest sample a sample
	// may be and still be accepted. 0 accepts any age. Default 0.
	OutOfOrderWindow time.Duration

	// MaxHeadSamples makes Commit return ErrOverloaded while the head holds
	// more unflushed items (float samples and histograms) than this
	// (flushing has fallen behind). 0 means unlimited.
	MaxHeadSamples int64
	// MaxHeadBytes is the same bound in bytes of memory: what the head's
	// samples of every kind cost (a float sample 24 bytes, a histogram a few
	// hundred: kind.size). 0 means unlimited.
	MaxHeadBytes int64

	// MaxFuture refuses samples, histograms and exemplars more than this
	// ahead of the store's clock (ErrOutOfBounds), as Prometheus refuses
	// anything beyond now+10m. 0 disables the bound.
	MaxFuture time.Duration
	// MinTimestamp refuses samples and histograms older than this (ms
	// since the epoch; ErrOutOfBounds); the zero Options refuse negative
	// timestamps. Exemplars without a timestamp (0) are exempt.
	MinTimestamp int64
	// StartTimeZeroSamples makes Select present, for a sample stored with a
	// start timestamp, a zero sample (a zero histogram with a counter-reset
	// hint) at that start timestamp, as Prometheus stores one with
	// --enable-feature=created-timestamp-zero-ingestion (starttime_read.go).
	// Read time only: the files hold what was sent, and the option can be
	// switched either way at any restart. Default off, as in Prometheus.
	StartTimeZeroSamples bool

	MaxOpenFiles int // open series file writers kept (LRU); default 256
	// MaxOpenReaders is how many series file readers reads keep open
	// between queries (LRU; file descriptors, which Go raises to the hard
	// limit at start-up); default half that limit, 4096 to 65536
	// (readers_limit_unix.go), negative: none.
	MaxOpenReaders int
	// WarmReaders opens, in the background after Open, the two newest files
	// of every series into the reader cache, up to 90 % of its bounds
	// (readers_warm.go): the first queries after a restart then find
	// their files open. Off in the zero Options; the server turns it on.
	WarmReaders bool
	// MaxReaderBytes bounds the memory those readers' block indexes hold;
	// default 64 MiB.
	MaxReaderBytes  int64
	MaxSeries       int   // 0 means unlimited
	MaxQuerySeries  int   // per Select; 0 means unlimited
	MaxQuerySamples int64 // per Select; 0 means unlimited

	// MaxChunkCacheBytes bounds the XOR chunks of float files that
	// streamed remote reads keep (by path, apart from the open readers),
	// so that a file read again is neither opened nor decoded and encoded
	// again (xorcache.go); default 128 MiB, negative: none.
	MaxChunkCacheBytes int64

	// FlushZstd compresses head-flushed blocks with Zstandard at
	// ZstdLevel (off in the zero Options; the server's default config turns
	// it on with FlushZstdMinRows 128): on the ~20-row blocks a 15 s series
	// flushes every 5 minutes zstd saves 0-15% of the bytes and costs
	// 10-15x the CPU of the flush (rotation.TestFigures,
	// BenchmarkFlushBlock); compaction compresses sealed files instead.
	FlushZstd bool
	ZstdLevel int // with FlushZstd; 0 means the default (3)
	// FlushZstdMinRows, with FlushZstd, writes blocks of fewer rows
	// uncompressed: a live series' small age-triggered blocks skip zstd,
	// while large flushes (a backfill, a busy series, the flush at
	// shutdown) still get it. 0 compresses every block.
	FlushZstdMinRows int

	// Rotation seals a series' newest file at UTC-aligned period
	// boundaries and/or a file size, and starts the next one. The zero
	// value keeps one file per series.
	Rotation rotation.Policy
	// Retention deletes series files by age and by the data directory's
	// allocated size; a series whose last file goes leaves the catalog.
	Retention rotation.Retention
	// Compaction rewrites sealed files into large blocks.
	Compaction CompactionOptions
	// MaintenanceInterval runs retention, then compaction, this often in
	// the background. Default 1m; negative: never in the background
	// (Maintain runs one pass).
	MaintenanceInterval time.Duration

	// Tier uploads sealed files to an object store and reads them from
	// there once their local copy is gone (tier.go); nil keeps everything
	// local.
	Tier *TierOptions

	Logger     *slog.Logger          // default slog.Default()
	Registerer prometheus.Registerer // nil registers nothing
	Now        func() time.Time      // default time.Now; tests inject a clock
}

// CompactionOptions configure the background rewrite of sealed files.
type CompactionOptions struct {
	Disabled    bool
	BlockRows   int   // rows per rewritten block; default 65536
	ZstdLevel   int   // Zstandard level of rewritten blocks; default 3
	BytesPerSec int64 // pacing of reads plus writes; 0: unlimited
	// Tiers merge runs of sealed files into one file per tier window
	// (rotation.Tiers: the server's default is 7d then 28d), each merge
	// bounded by Rotation.MaxFileBytes. A tier longer than half of
	// Retention.MaxAge is not used: a merged file is deleted only once its
	// newest sample expires, so its oldest outlives max_age by up to the
	// tier's length. Empty: no merges.
	Tiers rotation.Tiers
}
