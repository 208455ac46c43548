// Package rotation is the life cycle of sealed series files: when a series
// file is sealed and the next one begins (Policy), which files retention
// deletes (Retention), and the compaction rewrite of a sealed file into
// large, sorted, well-compressed blocks (CompactFile). Background work is
// paced by a Limiter and reported through Metrics.
//
// The package knows Acta files and timestamps, not series, labels or the
// store: the store (actastore) calls it, never the other way round.
//
// # File sequence of a series
//
// A series owns files named by their start S (ms). Every file starts a new
// UTC-aligned period (Policy.Period) or follows a full file
// (Policy.MaxFileBytes). Writes go to the newest file only. The guarantee
// readers prune by:
//
//   - every sample in file i is < S(i+1), the next file's start: a file is
//     sealed before any sample at or after its successor's start reaches it;
//   - samples >= S(i) normally; a sample older than the newest file's start
//     (out of order, into an older period) is appended to the newest file,
//     so a file's lower bound is its start or the smallest block bound in it.
//
// So a reader skips file i without opening it when S(i+1) <= mint, and
// otherwise prunes by the block bounds Acta stores in each frame header.
package rotation
