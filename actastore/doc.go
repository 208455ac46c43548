// Package actastore is the series store: a durable series catalog with an
// in-memory label index, a write-ahead log, in-memory head buffers, and one
// Acta v0.2 file per series that head buffers are flushed into.
//
// Data flow (see DESIGN.md): Append validates and interns labels into
// series refs, appends the batch to the WAL (group commit, fsync), returns,
// and adds the samples to head buffers; flushes encode head buffers as
// TS_SORTED Acta blocks; Select merges file blocks (pruned by their time
// bounds) with the head.
//
// # Units
//
// Timestamps are int64 milliseconds since the Unix epoch everywhere (the
// Acta timestamp column is timestamp64(ms, UTC), so nothing is converted).
// Select ranges [mint, maxt] are inclusive at both ends. Durations in
// Options are time.Duration.
//
// # Series identity
//
// A series is its label set: sorted, unique, non-empty UTF-8 names, non-empty
// UTF-8 values, __name__ required. Its ref is xxhash64 of the canonical label
// encoding (docs/format/catalog.md); when two label sets share a hash, the
// later one takes the next free value. Refs are stored in the WAL and the
// catalog and read back, never recomputed, so they are stable across
// restarts. File paths derive from the ref only: series/<top byte>/<ref>-
// <start ms>.acta (filenames.go).
//
// # Rotation, compaction, retention
//
// A series has a sequence of files (Options.Rotation, package rotation):
// flushes append to the newest only, and a new one starts at each
// UTC-aligned period boundary or after a full file. Every sample of a file
// is older than the next file's start, so Select skips files by name and by
// their known smallest timestamp (an out-of-order sample for an older
// period goes to the newest file). A background pass (Maintain) deletes
// files retention no longer keeps, removes series left without files from
// the index and the catalog (a type 4 record), and compacts sealed files by
// rewrite and rename (docs/format/series.md).
//
// # Sample semantics
//
//   - An exact duplicate (same timestamp, same value bits) is dropped
//     silently and counted as written.
//   - The same timestamp with different value bits is rejected with
//     ErrDuplicateSample. Values compare by bits: NaNs with different
//     payloads differ, 0 and -0 differ.
//   - A sample more than OutOfOrderWindow behind the newest sample the series
//     accepted is rejected with ErrOutOfOrder (0: any age is accepted).
//     Out-of-order samples are read back in timestamp order. "Newest" is
//     known since start-up, across clean restarts (the flush state), and
//     after a crash from the replayed WAL and the series files it touches.
//   - Every float bit pattern is stored exactly, stale markers included.
//   - Duplicates are detected against the head, the samples being flushed,
//     and the newest flushed sample of the series (kept across clean
//     restarts; after a crash, read from the file of every series with
//     samples in the WAL; otherwise known again once the series flushes).
//     A resent sample older than that, already in the file, is not detected:
//     it is written again (as its own sorted block) and Select returns one
//     sample per timestamp, the one stored first (file blocks in file order,
//     then the head). After a restart, WAL samples already in a series file
//     are removed from the head before it is flushed again.
//   - Rejections are per sample or per series and never fail the batch; the
//     AppendResult counts them and carries a few errors wrapping the
//     sentinels. Append's own error means nothing was acknowledged.
//
// # Native histograms, exemplars, metadata
//
// AppendExtras (hist_store.go) stores native histograms, integer and float,
// under the same series identity as floats: a series may hold both (a
// metric that changed type), each in its own file, and Select returns both
// (HistogramSeries). Histograms follow the float sample semantics above,
// compared bit for bit over every field; a histogram that fails
// model/histogram's Validate is ErrInvalidHistogram (stale markers exempt).
// They, the exemplars (newest 32 per series) and metric metadata (per
// family) go to their own WAL before Append returns, and are flushed to
// their files when a series buffers BlockRows histograms or after
// 4 × MaxHeadAge. Histogram files are not rotated, compacted or removed by
// retention yet.
//
// # Durability
//
// With SyncAlways (the default) Append returns only after the WAL records of
// its batch are fsynced; concurrent appenders share fsyncs. A new series'
// definition is in the WAL in the same group as its first samples and is
// copied to the catalog before the WAL segment holding it is deleted.
// Heads are flushed into series files when they reach BlockRows samples or
// their oldest sample arrived MaxHeadAge ago; WAL segments are deleted only
// after every sample in them is in a series file and the files are synced
// (one syncfs on Linux). A store that was not closed cleanly has the tails
// of its series files checked at Open — only of series with samples in the
// WAL, the only ones whose files can be mid-append: an incomplete final
// frame (a block whose append was interrupted) is cut, and its samples come
// back from the WAL. Only one process may open a directory (flock on LOCK).
//
// # Errors
//
// Sentinels in api.go, tested with errors.Is: ErrInvalidSeries,
// ErrOutOfOrder, ErrDuplicateSample, ErrTooManySeries (data errors, 400),
// ErrOverloaded (retry), ErrQueryLimit, ErrClosed. I/O errors are wrapped
// with the series ref or path; WAL corruption before its tail fails Open
// with a *wal.CorruptionError.
package actastore
