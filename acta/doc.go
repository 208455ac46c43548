// Package acta reads and writes Acta v0.2 files: append-only, typed,
// block-columnar time-series files with per-frame commit trailers and
// CRC32C checksums everywhere. It knows nothing about Prometheus.
//
// Spec sections implemented (chengus/Acta spec/v0.2/format_v0.2.md):
//
//   - §2, §2.1 conventions and versioning: version (0,2) only; any other
//     well-formed version is ErrUnsupportedVersion, never ErrCorrupt;
//     unknown feature bits are refused. (format.go, prologue.go)
//   - §3 logical types, nullability with dense values; floats bit-exact.
//     (types.go, array.go, convert.go)
//   - §4, §5 top-level grammar and the 64-byte prologue. (prologue.go)
//   - §6 generic frame: 48-byte prefix checked before its lengths are
//     trusted, 32-byte trailer, header/body/trailer CRCs. (frame.go)
//   - §7, §7.1 schema frame and primary selection (name, "auto", none).
//     (schema_codec.go, types.go)
//   - §8, §8.1, §8.2 data frame header, column and stream descriptors, with
//     every MUST checked on read: schema ID, column count, empty blocks,
//     ROW_IDS flag and row-ID chain, zero bounds without a primary column,
//     table offsets, statistics area, stream ranges, alignment and overlap.
//     (block.go)
//   - §9, §10, §11, §12 transforms, codecs, statistics and encoding
//     selection live in internal/encoding; this package frames them.
//     (decode.go, writer_block.go)
//   - §13.1 sequential discovery and growth (discover.go, refresh.go);
//     §13.2 recovery to the last complete frame (recovery.go) and salvage
//     mode (salvage.go): frames found on 8-byte boundaries past a corrupt
//     region are kept only when every check holds (and they decode),
//     written renumbered to a new file, and every skipped byte range is
//     reported.
//
// Reading: Open gives a snapshot (Blocks, ReadBlock, Scan with projection
// and half-open primary ranges, binary search inside TS_SORTED blocks);
// Refresh and Tail follow a file a writer is still appending to. Limits
// bound every size a file declares before anything is allocated.
//
// Writing: Create or OpenWriter take a cooperative flock; Append buffers
// rows and publishes a block at the row or byte target; Flush publishes;
// Sync makes published blocks durable. A failed write poisons the writer.
//
// Opening a Reader checks every frame's prefix, header and trailer but
// defers each data frame's body CRC to the first read of that block
// (§6.2 allows it); the writer's OpenWriter, InspectRecovery and Validate
// check every body CRC.
package acta
