package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/durable"
	"github.com/acta-remote/acta-remote/rotation"
)

// Rewrites of sealed files, for every kind: compaction (one file into
// itself, compact.go) and tier merges (a run of consecutive sealed files
// into the first, tiermerge.go). Both decode the files with the kind's codec,
// sort and deduplicate (the first stored wins: files in start order, then
// blocks in file order, then rows — what Select returns), re-encode with
// the kind's sealed representation (sealedBatches) and write a temporary
// file that is fsynced and fully validated, all without locks. Only the
// swap takes the series' flush lock, and first checks that the inputs are
// still the track's sealed files and unchanged since they were read (same
// inode, size and modification time): a deletion (DeleteSeries) that
// rewrote one meanwhile makes the rewrite stale, and it is retried on a
// later pass instead of bringing deleted samples back.
//
// Merge protocol (crash safety; docs/format/series.md "Tier merges"). For
// a run of files starting at a < x1 < ... < b, merged into the file named
// a, with T = a.acta.tmp and the marker M = <ref>-<a>-<b>.merge:
//
//  1. write T, fsync it and its directory entry, validate it fully;
//  2. create M and fsync the directory: the commit point. From here a
//     restart finishes the merge (finishMerges): if T is still there it is
//     validated and renamed over a; then every file starting in (a, b] is
//     deleted, then M.
//  3. rename T over a, fsync the directory;
//  4. drop x1..b from the track (readers listing from now on read a alone);
//  5. delete x1..b, fsync the directory;
//  6. delete M, fsync the directory.
//
// Before step 2 a crash leaves the old files and a stray T (swept at
// Open); after it, the restart completes the merge. No sample is ever in
// two visible files after a restart: the old files and a are both visible
// only between steps 3 and 5, and M is there to say which go. A reader of
// the running store that listed the old files may read a's old or new
// version and find x gone (ENOENT): it reads again from a fresh listing
// (readTrack), and Select keeps one sample per timestamp anyway.

// compactBlocks reports whether a final file's blocks are as compaction
// wrote them: sorted, in time order, and none but a lone one smaller than a
// cut block (blockBounds), so a flush block appended to a compacted newest
// file makes it due again.
func compactBlocks(bs []acta.BlockInfo) bool {
	for i, b := range bs {
		if !b.Sorted || (len(bs) > 1 && b.Rows < minCutBlock) || (i > 0 && b.Min <= bs[i-1].Max) {
			return false
		}
	}
	return true
}

// errStale: the files changed between the read and the swap.
var errStale = errors.New("sealed files changed during the rewrite")

// sealedInput is one input file of a rewrite and what it was when read.
type sealedInput struct {
	start int64
	path  string
	fi    os.FileInfo
}

// readSealed decodes every committed block of the inputs into one sorted,
// deduplicated run. final reports a single input written by compaction
// already and not appended to since (nothing is decoded then), blocks its
// block index.
func readSealed[S any](k kind[S], in []sealedInput) (all []S, sts []StartTime, final bool, blocks []acta.BlockInfo, err error) {
	for _, f := range in {
		r, err := acta.Open(f.path)
		if err != nil {
			return nil, nil, false, nil, err
		}
		if len(in) == 1 && k.final(r.Schema()) && compactBlocks(r.Blocks()) {
			blocks = r.Blocks()
			r.Close()
			return nil, nil, true, blocks, nil
		}
		for i := range r.Blocks() {
			b, err := r.ReadBlock(i)
			if err == nil {
				all, sts, err = decodeWithStarts(k, all, sts, r.Schema(), b, math.MinInt64, math.MaxInt64)
			}
			if err != nil {
				r.Close()
				return nil, nil, false, nil, fmt.Errorf("block %d of %s: %w", i, f.path, err)
			}
		}
		r.Close()
	}
	slices.SortStableFunc(all, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
	return dedupeSorted(k, all), sortStarts(sts), false, nil, nil
}

// statInputs records what the inputs are before they are read.
func statInputs[S any](s *Store, k kind[S], ref uint64, starts []int64) ([]sealedInput, error) {
	in := make([]sealedInput, len(starts))
	for i, st := range starts {
		p := filePath(s.dir, k, ref, st)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		in[i] = sealedInput{start: st, path: p, fi: fi}
	}
	return in, nil
}

// stillSealed reports whether starts are consecutive files of the track,
// none the newest (newest: exactly the newest one), and their files
// unchanged since in was taken. The series' flush lock is held.
func stillSealed[S any](k kind[S], ms *memSeries, in []sealedInput, newest bool) bool {
	ms.mu.Lock()
	tr := k.track(ms, false)
	ok := tr != nil
	if ok {
		i := slices.Index(tr.files(), in[0].start)
		ok = i >= 0 && i+len(in) < len(tr.files())
		if newest {
			ok = i >= 0 && len(in) == 1 && i == len(tr.files())-1
		}
		for j := 0; ok && j < len(in); j++ {
			ok = tr.files()[i+j] == in[j].start
		}
	}
	ms.mu.Unlock()
	for _, f := range in {
		if !ok {
			break
		}
		fi, err := os.Stat(f.path)
		ok = err == nil && os.SameFile(fi, f.fi) && fi.Size() == f.fi.Size() && fi.ModTime().Equal(f.fi.ModTime())
	}
	return ok
}

// rewriteSealed rewrites the consecutive sealed files of ms' track of kind
// k that start at starts into one file named after starts[0]: a
// compaction for one start (skipped when the file is final already), a
// tier merge for several. With newest, starts is the track's newest file,
// which flushes append to: it is rewritten all the same (under the flush
// lock no flush runs, and its writer is closed first; later flushes append
// to the new file, adapted to its value type). It returns errStale, with
// nothing changed, when the files changed meanwhile.
func rewriteSealed[S any](s *Store, k kind[S], ms *memSeries, starts []int64, newest bool, o rotation.CompactOptions) (rotation.CompactResult, error) {
	in, err := statInputs(s, k, ms.ref, starts)
	if err != nil {
		return rotation.CompactResult{}, err
	}
	all, sts, final, blocks, err := readSealed(k, in)
	if err != nil {
		return rotation.CompactResult{}, err
	}
	if final {
		return rotation.Skipped(in[0].path, blocks)
	}
	if len(in) == 1 && len(all) == 0 {
		return rotation.Skipped(in[0].path, nil) // nothing to choose a layout from
	}
	rows := o.BlockRows
	if rows <= 0 {
		rows = 65536
	}
	rows = min(rows, k.maxBlockRows(fileOptions{blockRows: rows}))
	batches, err := sealedBatchesWithStarts(k, all, sts, rows)
	if err != nil {
		return rotation.CompactResult{}, err
	}
	paths := make([]string, len(in))
	for i, f := range in {
		paths[i] = f.path
	}
	tmp := compactTmpPath(in[0].path)
	res, err := rotation.WriteTemp(paths, tmp, k.schema(), batches, o)
	if err != nil {
		return res, err
	}
	if testHookSealedSwap != nil {
		testHookSealedSwap(len(in))
	}
	mu := s.flushLock(ms)
	mu.Lock()
	defer mu.Unlock()
	if !stillSealed(k, ms, in, newest) {
		os.Remove(tmp)
		return res, errStale
	}
	var lo int64
	known := len(all) > 0
	if known {
		lo = k.ts(all[0])
	}
	// Kept chunks of the inputs: the output's are kept too
	// (xorcache_kept.go).
	hot := k.xorHead() && s.readers.hasKept(paths...)
	if len(in) == 1 {
		s.writers.forget(fileKey{ref: ms.ref, kind: k.id()}, in[0].path) // the next flush opens the new file
		if err := rotation.Install(tmp, in[0].path, &res); err != nil {
			return res, err
		}
		s.readers.invalidate(in[0].path)
		if hot {
			s.readers.keepRewritten(in[0].path, rewrittenChunks(k, all, len(sts) > 0))
		}
		ms.mu.Lock()
		if tr := k.track(ms, false); tr != nil {
			if known {
				tr.forgetFileMin(in[0].start)
				noteFileMin(tr, in[0].start, lo)
			}
			if newest {
				tr.setNewestRows(len(all))
			}
		}
		ms.mu.Unlock()
		return res, nil
	}
	if err := installMerge(s, k, ms, in, tmp, known, lo, &res); err != nil {
		return res, err
	}
	if hot {
		s.readers.keepRewritten(in[0].path, rewrittenChunks(k, all, len(sts) > 0))
	}
	return res, nil
}

// installMerge runs steps 2-6 of the merge protocol (the series' flush
// lock held; T = tmp is written and validated).
func installMerge[S any](s *Store, k kind[S], ms *memSeries, in []sealedInput, tmp string, known bool, lo int64, res *rotation.CompactResult) error {
	first, last := in[0], in[len(in)-1]
	dir := filepath.Dir(first.path)
	marker := filepath.Join(dir, mergeMarkerName(ms.ref, first.start, last.start))
	if err := durable.WriteFile(marker, nil); err != nil { // creates, fsyncs, syncs the directory
		os.Remove(marker)
		os.Remove(tmp)
		return fmt.Errorf("merge into %s: commit marker: %w", first.path, err)
	}
	if testHookMerge != nil {
		testHookMerge("committed")
	}
	if err := os.Rename(tmp, first.path); err != nil {
		// Not renamed: the old files stand. The marker goes first; should
		// that fail, T stays too, and a restart finishes the merge.
		if rerr := os.Remove(marker); rerr == nil && durable.SyncDir(dir) == nil {
			os.Remove(tmp)
		}
		return fmt.Errorf("merge into %s: %w", first.path, err)
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("merge into %s: %w", first.path, err) // the marker finishes it at restart
	}
	s.readers.invalidate(first.path)
	if testHookMerge != nil {
		testHookMerge("renamed")
	}
	dropMerged(k, ms, in, known, lo)
	s.maint.mark(first.path)
	var errs []error
	for _, f := range in[1:] {
		if _, err := s.removeFile(k, ms, f.path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// The marker stays: a restart deletes what is left of the run.
		return fmt.Errorf("merge into %s: %w", first.path, errors.Join(errs...))
	}
	if testHookMerge != nil {
		testHookMerge("deleted")
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("merge into %s: remove marker: %w", first.path, err)
	}
	// Durable before anything else touches these files: a marker coming
	// back after a crash would finish this merge again over newer ones.
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("merge into %s: %w", first.path, err)
	}
	res.BytesOut, res.AllocatedOut, _ = fileSizes(first.path)
	return nil
}

// dropMerged takes the merged files but the first out of the track, and
// records the merged file's smallest timestamp.
func dropMerged[S any](k kind[S], ms *memSeries, in []sealedInput, known bool, lo int64) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	tr := k.track(ms, false)
	if tr == nil {
		return
	}
	for _, f := range in[1:] {
		dropFile(tr, f.start)
	}
	tr.forgetFileMin(in[0].start)
	if known {
		noteFileMin(tr, in[0].start, lo)
	}
}

// fileSizes returns a file's apparent and allocated sizes.
func fileSizes(path string) (apparent, allocated int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	return fi.Size(), rotation.Allocated(fi), nil
}

// Test hooks, set by tests only: testHookSealedSwap runs after a rewrite's
// temporary file is written, before the swap takes the flush lock (with
// the number of input files); testHookMerge at each step of the merge
// protocol ("committed", "renamed", "deleted").
var (
	testHookSealedSwap func(inputs int)
	testHookMerge      func(step string)
)
