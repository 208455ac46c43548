// Package actastore is the series store: a durable series catalog with an
// in-memory label index, one write-ahead log, in-memory heads, and Acta v0.2
// files per series that heads are flushed into.
//
// Data flow (docs/architecture.md, "Data flow"): a receiver fills a Batch
// with a request's float samples, native histograms, exemplars and
// metadata and calls Commit, which checks every series and item, writes
// the accepted ones to the WAL with one write (group commit, one fsync
// shared with concurrent commits), returns, and adds them to the heads;
// flushes encode heads as TS_SORTED Acta blocks; Select merges file blocks
// (pruned by their time bounds) with the heads.
//
// # The series model
//
// A series is its label set and a ref. What it holds comes in kinds —
// float64 samples and native histograms (integer and float) — and a kind is
// one small codec (kind.go; kind_float.go, kind_histogram.go): its Acta
// schema and block conversion (histfile is the histogram codec), bit-exact
// equality for duplicates, its WAL payload, its head footprint. A series has
// a track per kind it holds (track.go: head, the samples being flushed, its
// files); the head, commit, flush and rotation routing, compaction,
// retention, start-up scan and repair and Select are written once over the
// kind. A series may hold both kinds (a metric that changed type), each in
// its own files: series/ for floats, histograms/ for histograms
// (filenames.go).
//
// # Units
//
// Timestamps are int64 milliseconds since the Unix epoch everywhere (the
// Acta timestamp column is timestamp64(ms, UTC), so nothing is converted).
// Select ranges [mint, maxt] are inclusive at both ends. Durations in
// Options are time.Duration, sizes bytes.
//
// # Series identity
//
// A series is its label set: unique, non-empty UTF-8 names, non-empty UTF-8
// values, __name__ required. A permutation of a valid label set is sorted
// into its canonical series (as Prometheus and Mimir do), counted in
// acta_store_series_labels_sorted_total. Its ref is xxhash64 of the
// canonical label encoding (docs/format/catalog.md); when two label sets
// share a hash, the later one takes the next free value. Refs are stored in
// the WAL and the catalog and read back, never recomputed, so they are
// stable across restarts. File paths derive from the ref only.
//
// # Sample semantics
//
//   - A sample more than Options.MaxFuture ahead of the store's clock, or
//     older than Options.MinTimestamp, is ErrOutOfBounds. Rejected samples
//     never move a series' newest timestamp.
//   - Duplicates are detected against everything stored: the head, the
//     samples being flushed, and the files. Same timestamp, same value bits
//     (every field of a histogram): dropped silently and counted as
//     written. Other bits: ErrDuplicateSample. Values compare by bits: NaNs
//     with different payloads differ, 0 and -0 differ. Only a sample at or
//     below the newest timestamp its files hold pays a file read (and only
//     the blocks whose bounds hold it); in-order samples never do.
//   - A sample more than OutOfOrderWindow behind the newest sample the
//     series accepted is ErrOutOfOrder (0: any age is accepted), after the
//     duplicate checks (a resent old sample is a duplicate, not out of
//     order). Out-of-order samples are read back in timestamp order.
//   - A histogram failing model/histogram's Validate is ErrInvalidHistogram
//     (stale markers exempt). Exemplars: the newest 32 per series are kept;
//     one whose labels exceed 128 UTF-8 characters (OpenMetrics) is dropped
//     and counted, never failing the batch. Metadata: the latest per family.
//   - Every float bit pattern is stored exactly, stale markers included.
//   - Start timestamps (StartTime, starttime*.go) are kept beside the
//     samples that have one: a WAL record of their own (type 9), a
//     nullable start_timestamp column in the files that hold one, nothing
//     per sample for a series without them. One at or after its sample,
//     or below MinTimestamp, is dropped and counted, the sample kept (the
//     rules of Prometheus's appender). With StartTimeZeroSamples, Select
//     presents Prometheus's zero sample at each (read time only).
//   - Rejections are per item or per series and never fail the batch; the
//     Result counts them per kind and by reason with a few errors wrapping
//     the sentinels. Commit's own error means nothing was acknowledged.
//
// # Rotation, compaction, retention, deletion
//
// Each track, of every kind (float and histogram files alike), has a
// sequence of files (Options.Rotation, package rotation): flushes append
// to the newest only, and a new one starts at each
// UTC-aligned period boundary or after a full file. Every sample of a file
// is older than the next file's start, so Select skips files by name and by
// their known smallest timestamp. A background pass (Maintain) deletes files
// retention no longer keeps (files of every kind planned together), removes
// series left without files from the index and the catalog (a type 4
// record), merges runs of sealed files into tier files (tiermerge.go; a commit
// marker makes a merge finish at Open after a crash, sealed.go), and
// compacts the other sealed files of every kind, and the newest file of an
// idle series, by rewrite and rename (compact.go). A rewritten float file
// takes the narrowest value type that holds every value bit for bit
// (valuetype.go: int64, decimal64, float64; exceptions in value_float64),
// cut into blocks at outliers (blocksplit.go); flushes append to it in
// that type. The head flushes its largest series when it outgrows an
// eighth of MaxHeadBytes (flush.go).
// DeleteSeries removes a range of matching series durably: WAL tombstones
// (type 8) first, then heads and files (delete.go).
//
// # Object storage
//
// With Options.Tier, sealed files are uploaded to an S3-compatible bucket
// (package bucket), verified, published in the bucket's index, and their
// local copies deleted after the local retention; such a file stays in
// its track's file list and reads fetch its blocks from the bucket
// (tier*.go, the rules in tier.go). BucketView is the read-only store
// over every writer prefix of a bucket (query mode).
//
// # Durability
//
// With SyncAlways (the default) Commit returns only after the WAL records of
// its batch are fsynced; under SyncInterval one loop fsyncs the WAL (every
// kind) every WALSyncInterval. A new series' definition is in the WAL in the
// same write as its first items and is copied to the catalog before the WAL
// segment holding it is deleted. Heads are flushed into series files when
// they reach their block size or their oldest sample arrived their kind's
// head age ago; WAL segments are deleted only after everything in them is in
// synced files (one syncfs on Linux) and the metadata file is written, or,
// once the WAL outgrows WALCheckpointBytes, in a checkpoint of the heads
// (checkpoint.go), which a restart replays before the segments after it. A
// store that was not closed cleanly has the tails of the files the WAL says
// may be mid-append checked at Open: an incomplete final frame is cut, and
// its samples come back from the WAL. Only one process may open a directory
// (flock on LOCK). A directory of an earlier release opens without loss
// (upgrade.go).
//
// # Lock order
//
// Locks are taken in this order, never the reverse; a lock not listed is a
// leaf (taken alone, last):
//
//  1. Store.maint.mu — one maintenance pass at a time.
//  2. Store.truncMu — one WAL truncation, checkpoint, series removal or
//     deletion at a time.
//  3. Store.appendMu — shared by Commit, exclusive by truncation's scan, a
//     checkpoint's cut (checkpoint.go), series removal and a deletion's
//     tombstone (delete.go).
//  4. a series' flush lock (Store.flushLock: striped over refs) — its
//     flushes, and removal or rewrite of its files; a deletion takes the
//     stripes of all its series at once, in stripe order. One exception
//     to the order: a deletion holding its stripes takes appendMu shared
//     to log its tombstones-done record. It cannot deadlock, because every
//     exclusive taker of appendMu either takes truncMu first (which the
//     deletion holds) or takes no flush lock (Close, abandon), and Commit
//     takes no flush lock.
//  5. registry.mu — series maps, the label index and its symbols: a
//     series' labels are read under it (symbols.go), never under 6.
//  6. memSeries.mu — one series' tracks and exemplars; never two at once.
//  7. writerCache.mu, then (after releasing it) writerEntry.mu; metaStore.mu,
//     maintainer.cmu, tier.mu and checkpointCopy.mu (taken with a
//     memSeries.mu held, by commits copying a head for a checkpoint) are
//     leaves. The WAL's own locks are below all. tier.cycleLock (one
//     upload cycle at a time) is taken before anything else the cycle
//     takes, as maint.mu is.
//
// No file I/O happens under registry.mu or memSeries.mu: file reads for
// duplicate detection and for Select run between critical sections.
//
// # Errors
//
// Sentinels in api.go, tested with errors.Is: ErrInvalidSeries,
// ErrInvalidHistogram, ErrOutOfOrder, ErrOutOfBounds, ErrDuplicateSample,
// ErrTooManySeries (data errors, 400), ErrOverloaded (retry), ErrQueryLimit,
// ErrClosed. I/O errors are wrapped with the series ref or path; WAL
// corruption before its tail fails Open with a *wal.CorruptionError.
package actastore
