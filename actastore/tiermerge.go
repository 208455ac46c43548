package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/durable"
	"github.com/acta-remote/acta-remote/rotation"
)

// Tier merges (rotation.Tiers): each maintenance pass, after retention and
// before compaction, merges runs of consecutive sealed files of a track
// into one (sealed.go has the protocol). Planning reads only the track's
// file starts; the sizes and row counts that bound a merge are read for
// the files of planned runs only, and a track whose plan those bounds
// empty is not planned again until its files change.

// maxMergeRows bounds the samples one merge holds in memory (4 Mi rows:
// 64 MiB of float samples; a month of a 1 s series is 2.6 Mi).
const maxMergeRows = 1 << 22

// activeTiers are the configured tiers retention allows (Options.Tiers).
func (s *Store) activeTiers() rotation.Tiers {
	t := s.opts.Compaction.Tiers
	if age := s.opts.Retention.MaxAge; age > 0 {
		var keep rotation.Tiers
		for _, p := range t {
			if p <= age/2 {
				keep = append(keep, p)
			}
		}
		t = keep
	}
	return t
}

// mergeSealed runs every planned merge of every track, paced like
// compaction.
func (s *Store) mergeSealed(res *MaintenanceResult) {
	tiers := s.activeTiers()
	if len(tiers) == 0 {
		return
	}
	co := s.opts.Compaction
	opts := rotation.CompactOptions{BlockRows: co.BlockRows, ZstdLevel: co.ZstdLevel,
		Limiter: rotation.NewLimiter(co.BytesPerSec, s.stop)}
	for ms := range s.reg.all() {
		for _, merge := range []func() bool{
			func() bool { return mergeTrack(s, floats, ms, tiers, opts, res) },
			func() bool { return mergeTrack(s, histograms, ms, tiers, opts, res) },
		} {
			if !merge() {
				return // stopping
			}
		}
	}
}

// mergeTrack merges what the plan says for one track, re-planning after
// each round so one pass can go up the tiers. It returns false when the
// store is stopping.
func mergeTrack[S any](s *Store, k kind[S], ms *memSeries, tiers rotation.Tiers, o rotation.CompactOptions, res *MaintenanceResult) bool {
	for round := 0; round < 2*len(tiers)+2; round++ {
		ms.mu.Lock()
		tr := k.track(ms, false)
		var starts []int64
		if tr != nil {
			starts = slices.Clone(tr.files())
		}
		ms.mu.Unlock()
		files := make([]rotation.MergeFile, len(starts))
		for i, st := range starts {
			files[i].Start = st
		}
		runs := localRuns(s, k.id(), ms.ref, starts, tiers.Plan(files, 0, 0))
		if len(runs) == 0 {
			return true
		}
		key := mergePlanKey(k.id(), ms.ref, starts)
		if s.maint.done(key) {
			return true // bounded away since these files were planned
		}
		// The bounds need sizes and rows: read them for the planned files.
		for _, r := range runs {
			for i := r.Lo; i < r.Hi; i++ {
				files[i].Bytes, files[i].Rows = fileBytesRows(s, filePath(s.dir, k, ms.ref, starts[i]))
			}
		}
		maxBytes := s.opts.Rotation.MaxFileBytes
		runs = localRuns(s, k.id(), ms.ref, starts, tiers.Plan(files, maxBytes, maxMergeRows))
		if len(runs) == 0 {
			s.maint.mark(key)
			return true
		}
		for _, r := range runs {
			select {
			case <-s.stop:
				return false
			default:
			}
			began := time.Now()
			tier := strconv.Itoa(r.Tier)
			cr, err := rewriteSealed(s, k, ms, starts[r.Lo:r.Hi], false, o)
			switch {
			case errors.Is(err, errStale), errors.Is(err, os.ErrNotExist):
				s.rm.Merges.WithLabelValues(tier, "stale").Inc()
				return true // the track changed: the next pass plans again
			case err != nil:
				res.Errors++
				s.rm.Merges.WithLabelValues(tier, "error").Inc()
				s.log.Error("tier merge failed; files left as they were", "kind", k.name(),
					"ref", fmt.Sprintf("%016x", ms.ref), "files", r.Hi-r.Lo, "err", err)
				s.maint.mark(key) // not retried before the next start
				return true
			}
			res.Merged++
			res.MergedFiles += r.Hi - r.Lo
			res.BytesBefore += cr.AllocatedIn
			res.BytesAfter += cr.AllocatedOut
			s.rm.Merges.WithLabelValues(tier, "done").Inc()
			s.rm.MergedFiles.Add(float64(r.Hi - r.Lo))
			s.rm.CompactionSeconds.Observe(time.Since(began).Seconds())
			s.rm.CompactedIn.Add(float64(cr.AllocatedIn))
			s.rm.CompactedOut.Add(float64(cr.AllocatedOut))
			s.rm.Written.Add(float64(cr.BytesOut))
			s.rm.DuplicatesDropped.Add(float64(cr.RowsIn - cr.RowsOut))
			s.log.Debug("merged sealed files", "kind", k.name(), "path", filePath(s.dir, k, ms.ref, starts[r.Lo]),
				"files", r.Hi-r.Lo, "tier", r.Tier, "rows", cr.RowsOut, "bytes_before", cr.AllocatedIn, "bytes_after", cr.AllocatedOut)
		}
	}
	return true
}

// mergePlanKey names a track's file list in the maintainer's done set.
func mergePlanKey(id kindID, ref uint64, starts []int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "merge:%d:%016x", id, ref)
	for _, st := range starts {
		fmt.Fprintf(&b, ":%d", st)
	}
	return b.String()
}

// localRuns drops the runs holding a file that exists only in the object
// store (Options.Tier): merges rewrite local files only, so a file whose
// local copy retention deleted is not fetched back to be merged (and
// uploaded again).
func localRuns(s *Store, k kindID, ref uint64, starts []int64, runs []rotation.MergeRun) []rotation.MergeRun {
	if s.tier == nil {
		return runs
	}
	return slices.DeleteFunc(runs, func(r rotation.MergeRun) bool {
		return slices.ContainsFunc(starts[r.Lo:r.Hi], func(st int64) bool { return isBucketOnly(s, k, ref, st) })
	})
}

// fileBytesRows returns a file's apparent size and committed rows (0, 0
// when it cannot be read: the merge then fails or goes stale).
func fileBytesRows(s *Store, path string) (int64, int64) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0
	}
	r, done, _, err := s.readers.open(path)
	if err != nil {
		return fi.Size(), 0
	}
	defer done()
	var rows int64
	for _, b := range r.Blocks() {
		rows += int64(b.Rows)
	}
	return fi.Size(), rows
}

// finishMerges completes, at Open, the merges whose commit marker is in
// shard directory sdir (step 2 of the protocol in sealed.go): the
// merged file is validated and renamed into place if the crash came
// before the rename, then the files it replaced are deleted, then the
// marker. It runs before the directory's temporary files are swept.
func (s *Store) finishMerges(sdir string, ents []os.DirEntry) (bool, error) {
	found := false
	for _, e := range ents {
		ref, a, b, ok := parseMergeMarkerName(e.Name())
		if !ok {
			continue
		}
		found = true
		marker := filepath.Join(sdir, e.Name())
		first := filepath.Join(sdir, seriesFileName(ref, a))
		tmp := compactTmpPath(first)
		if _, err := os.Stat(tmp); err == nil {
			if err := acta.Validate(tmp, acta.ValidateFull); err != nil {
				// Cannot happen (T is validated before the marker is
				// made); the old files are still whole, so they stay.
				s.log.Error("merged file of a committed merge fails validation; the merge is dropped", "path", tmp, "err", err)
				os.Remove(tmp)
				if err := os.Remove(marker); err != nil {
					return found, fmt.Errorf("finish merge %s: %w", marker, err)
				}
				continue
			}
			if err := os.Rename(tmp, first); err != nil {
				return found, fmt.Errorf("finish merge %s: %w", marker, err)
			}
		}
		for _, f := range ents {
			if fref, start, ok := parseSeriesFileName(f.Name()); ok && fref == ref && start > a && start <= b {
				if err := os.Remove(filepath.Join(sdir, f.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
					return found, fmt.Errorf("finish merge %s: %w", marker, err)
				}
			}
		}
		if err := durable.SyncDir(sdir); err != nil {
			return found, err
		}
		if err := os.Remove(marker); err != nil {
			return found, fmt.Errorf("finish merge %s: %w", marker, err)
		}
		s.log.Warn("finished a tier merge interrupted by a crash", "path", first, "replaced_up_to", b)
	}
	if found {
		return true, durable.SyncDir(sdir)
	}
	return false, nil
}

// mergedAway returns, for a listing of a shard directory, the files that
// committed but unfinished merges replaced (a reader of a directory the
// server is not running on, or is merging in, must not read them as well as
// the merged file): those whose merge marker says so, when the merged file
// is already in place (its temporary file is gone).
func mergedAway(ents []os.DirEntry) map[string]bool {
	var out map[string]bool
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		ref, a, b, ok := parseMergeMarkerName(e.Name())
		if !ok || names[seriesFileName(ref, a)+tmpSuffix] {
			continue
		}
		for _, f := range ents {
			if fref, start, ok := parseSeriesFileName(f.Name()); ok && fref == ref && start > a && start <= b {
				if out == nil {
					out = make(map[string]bool)
				}
				out[f.Name()] = true
			}
		}
	}
	return out
}
