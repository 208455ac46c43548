package actastore

import (
	"fmt"
	"strconv"
	"strings"
)

// Every file and directory name the store creates under its root:
//
//	<dir>/
//	  wal/00000000 ...            write-ahead log segments (package wal)
//	  catalog/00000000 ...        series catalog: framed series records (docs/format/catalog.md)
//	  series/<ab>/<ref>-<start>.acta   the Acta v0.2 files of a series, one per
//	                              rotation period (or size): <ab> is the ref's
//	                              top byte in hex, <ref> the 16-hex-digit ref,
//	                              <start> the file's start in ms: the UTC-aligned
//	                              period start of its first sample, or the first
//	                              sample itself without a period or after a
//	                              size rotation (docs/format/series.md)
//	  series/<ab>/<ref>-<start>.acta.tmp   a compaction's new file before it is
//	                              renamed over its original; swept at Open
//	  series/<ab>/<ref>-<a>-<b>.merge   a tier merge's commit marker (empty): the
//	                              files of ref starting in (a, b] are merged into
//	                              <ref>-<a>.acta; Open finishes the merge (sealed.go)
//	  histograms/<ab>/<ref>-<start>.acta   the native histogram files of a series,
//	                              named and rotated like float series files
//	                              (histfile schema, docs/format/histogram.md)
//	  histograms/<ab>/<ref>.exemplars.acta the series' newest exemplars (exemplars.go)
//	  histograms/metadata.acta    metric family metadata (metadata.go)
//	  histograms/wal/             only in a directory of an earlier release:
//	                              its histogram WAL, retired at Open (upgrade.go)
//	  tier/manifest/00000000 ...  files uploaded to the object store (tier_manifest.go)
//	  tier/blockindex/<hash>.bidx block indexes of bucket files (bucket.IndexCache)
//	  <kind dir>/<ab>/<name>.download.tmp  a file being restored from the bucket
//	  clean                       present only after a clean Close
//	  flushstate                  per-series newest flushed sample, valid with clean (flushstate.go)
//	  LOCK                        flock'ed while a process has the store open
//
// Paths derive from the series ref only, never from label text, so any label
// value is safe and the path length is fixed.
const (
	walDirName      = "wal"
	catalogDirName  = "catalog"
	seriesDirName   = "series"
	cleanMarkerName = "clean"
	lockFileName    = "LOCK"
	flushStateName  = "flushstate"
	seriesFileExt   = ".acta"
	tmpSuffix       = ".tmp"
	mergeMarkerExt  = ".merge"

	histDirName      = "histograms"
	exemplarFileExt  = ".exemplars.acta"
	metadataFileName = "metadata.acta"
)

// shardName is the shard directory of ref: its top byte, two hex digits.
func shardName(ref uint64) string {
	const hex = "0123456789abcdef"
	b := ref >> 56
	return string([]byte{hex[b>>4], hex[b&15]})
}

// seriesFileName names the file of series ref whose data starts at startMs.
// startMs may be negative (before 1970); it is written in decimal with sign.
func seriesFileName(ref uint64, startMs int64) string {
	// Built by hand, not with fmt: every read of a series makes its files'
	// paths, and a wide read makes ten thousand.
	b := make([]byte, 0, 16+1+20+len(seriesFileExt))
	for sh := 60; sh >= 0; sh -= 4 {
		b = append(b, "0123456789abcdef"[ref>>uint(sh)&15])
	}
	b = append(b, '-')
	b = strconv.AppendInt(b, startMs, 10)
	return string(append(b, seriesFileExt...))
}

// parseSeriesFileName is seriesFileName's inverse; ok is false for names the
// store did not make (they are left alone).
func parseSeriesFileName(name string) (ref uint64, startMs int64, ok bool) {
	base, found := strings.CutSuffix(name, seriesFileExt)
	if !found || len(base) < 18 || base[16] != '-' {
		return 0, 0, false
	}
	ref, err := strconv.ParseUint(base[:16], 16, 64)
	if err != nil {
		return 0, 0, false
	}
	startMs, err = strconv.ParseInt(base[17:], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return ref, startMs, true
}

// compactTmpPath is where maintenance (compaction, tier merges: one pass
// at a time) writes the new version of a series file before renaming it
// over path; a merge's commit protocol names it. It ends in tmpSuffix, so
// Open removes a leftover of a crash.
func compactTmpPath(path string) string { return path + tmpSuffix }

// lockedTmpPath is compactTmpPath for the rewrites made under the series'
// flush lock (a flush's for a value the file's type does not hold, a
// deletion's), which run while maintenance may be writing its version of
// the same file outside that lock: with one name for both, either could
// remove the other's and rename its own older version into place.
func lockedTmpPath(path string) string { return path + ".locked" + tmpSuffix }

// mergeMarkerName names the commit marker of a merge of ref's files
// starting at a through b into the file starting at a.
func mergeMarkerName(ref uint64, a, b int64) string {
	return fmt.Sprintf("%016x-%d-%d%s", ref, a, b, mergeMarkerExt)
}

// parseMergeMarkerName is mergeMarkerName's inverse.
func parseMergeMarkerName(name string) (ref uint64, a, b int64, ok bool) {
	base, found := strings.CutSuffix(name, mergeMarkerExt)
	if !found || len(base) < 20 || base[16] != '-' {
		return 0, 0, 0, false
	}
	ref, err := strconv.ParseUint(base[:16], 16, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	rest := base[17:]
	// a may be negative: the separator is the first '-' after its first
	// character.
	k := strings.IndexByte(rest[1:], '-')
	if k < 0 {
		return 0, 0, 0, false
	}
	k++
	if a, err = strconv.ParseInt(rest[:k], 10, 64); err != nil {
		return 0, 0, 0, false
	}
	if b, err = strconv.ParseInt(rest[k+1:], 10, 64); err != nil || b <= a {
		return 0, 0, 0, false
	}
	return ref, a, b, true
}
