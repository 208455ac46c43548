package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
)

// The file I/O of series files, for every kind: paths, block reads pruned
// by time, the newest sample, tail repair, and the look-ups duplicate
// detection makes. Only this file, writers.go and compact.go touch Acta.

// fileOptions are what writers need from the store's Options.
type fileOptions struct {
	zstd        bool
	zstdMinRows int // with zstd: smaller blocks are written uncompressed
	zstdLevel   int
	blockRows   int
}

// filePath is the path of kind k's file of series ref starting at start
// (ms): <root>/<k.dir()>/<ab>/<ref>-<start>.acta.
func filePath[S any](root string, k kind[S], ref uint64, start int64) string {
	return filepath.Join(root, k.dir(), shardName(ref), seriesFileName(ref, start))
}

// seriesFilePath is the path of a float series file.
func seriesFilePath(root string, ref uint64, start int64) string {
	return filePath(root, floats, ref, start)
}

// histFilePath is the path of a histogram series file.
func histFilePath(root string, ref uint64, start int64) string {
	return filePath(root, histograms, ref, start)
}

// readFile calls fn with the samples in [mint, maxt] of each committed
// block of the file whose bounds overlap the range, block by block in file
// order, each run sorted by timestamp (a stable sort keeps the stored order
// of equal timestamps); other blocks are skipped undecoded. An incomplete
// final frame is ignored (it is not committed). It also returns the
// smallest and greatest timestamps in the file from the block bounds (ok
// false for a file without rows).
//
// rc caches readers across calls; nil opens the file afresh.
func readFile[S any](k kind[S], rc *readerCache, path string, mint, maxt int64, fn func(run []S) error) (lo, hi int64, ok bool, err error) {
	return readFileStats(k, rc, path, mint, maxt, nil, fn)
}

// readFileStats is readFile counting, in st (nil: not counted), the bytes
// of the blocks it reads from the object store.
func readFileStats[S any](k kind[S], rc *readerCache, path string, mint, maxt int64, st *readStats, fn func(run []S) error) (lo, hi int64, ok bool, err error) {
	var fs func(run []S, sts []StartTime) error
	if fn != nil {
		fs = func(run []S, _ []StartTime) error { return fn(run) }
	}
	return readFileStarts(k, rc, path, mint, maxt, st, fs)
}

// readFileStarts is readFileStats passing fn, with each run, the start
// timestamps of its samples (sorted by T; nil when none).
func readFileStarts[S any](k kind[S], rc *readerCache, path string, mint, maxt int64, st *readStats, fn func(run []S, sts []StartTime) error) (lo, hi int64, ok bool, err error) {
	r, done, remote, err := rc.open(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer done()
	if remote && st != nil && st.localOnly {
		// The local copy went between the listing and the open (the
		// tier evicted it): a local-only read must not fetch it; the
		// caller treats it as missing and lists again.
		return 0, 0, false, fmt.Errorf("%w: %s is in the object store only", os.ErrNotExist, path)
	}
	return readOpened(k, r, remote, mint, maxt, st, fn)
}

// readOpened is readFileStarts on an open reader (remote: its reads go to
// the object store).
func readOpened[S any](k kind[S], r *acta.Reader, remote bool, mint, maxt int64, st *readStats, fn func(run []S, sts []StartTime) error) (lo, hi int64, ok bool, err error) {
	for _, bi := range r.Blocks() {
		if bi.Rows == 0 {
			continue
		}
		if !ok {
			lo, hi, ok = bi.Min, bi.Max, true
		}
		lo, hi = min(lo, bi.Min), max(hi, bi.Max)
	}
	if fn == nil || !ok || hi < mint || lo > maxt {
		return lo, hi, ok, nil
	}
	s := r.Schema()
	for i, bi := range r.Blocks() {
		if bi.Rows == 0 || bi.Max < mint || bi.Min > maxt {
			continue
		}
		b, err := r.ReadBlock(i)
		if remote {
			st.fetched(bi.Bytes)
		}
		if err != nil {
			return lo, hi, ok, fmt.Errorf("read block %d (offset %d): %w", i, bi.Offset, err)
		}
		run, sts, err := decodeWithStarts(k, nil, nil, s, b, mint, maxt)
		if err != nil {
			return lo, hi, ok, fmt.Errorf("decode block %d (offset %d): %w", i, bi.Offset, err)
		}
		if len(run) == 0 {
			continue
		}
		if !bi.Sorted {
			slices.SortStableFunc(run, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
			sts = sortStarts(sts)
		}
		if err := fn(run, sts); err != nil {
			return lo, hi, ok, err
		}
	}
	return lo, hi, ok, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fileSpan is a file of a track that a read must open.
type fileSpan struct {
	start    int64
	minKnown bool
	sealed   bool // not the newest: never appended to again
}

// filesInRange lists the track's files that may hold samples in [mint,
// maxt] without opening any: file i holds only samples below the next
// file's start (rotation package doc), and none below its known minimum.
// Called with the series' mu held.
func filesInRange[S any](tr *track[S], mint, maxt int64) []fileSpan {
	var out []fileSpan
	for i, start := range tr.files() {
		if i+1 < len(tr.files()) && tr.files()[i+1] <= mint {
			continue
		}
		m, known := tr.fileMin(start)
		if known && m > maxt {
			continue
		}
		out = append(out, fileSpan{start: start, minKnown: known, sealed: i+1 < len(tr.files())})
	}
	return out
}

// noteFileMin records a file's smallest timestamp (the series' mu held).
func noteFileMin[S any](tr *track[S], start, lo int64) {
	i := slices.Index(tr.files(), start)
	if i < 0 {
		return
	}
	c := tr.coldState()
	for len(c.mins) < len(tr.files()) {
		c.mins = append(c.mins, noTime)
	}
	if m := c.mins[i]; m == noTime || lo < m {
		c.mins[i] = lo
	}
}

// lookupFiles reads, from the files of ms' track of kind k, the samples at
// the timestamps in need, adding what it finds (or does not) to hits. It
// also learns the files' newest timestamp when the track did not know it.
// A file it cannot read is logged and taken as not holding them: duplicate
// detection must not stop ingestion.
func lookupFiles[S any](s *Store, k kind[S], ms *memSeries, need []int64, hits map[int64]fileHit[S]) map[int64]fileHit[S] {
	if len(need) == 0 {
		return hits
	}
	if hits == nil {
		hits = make(map[int64]fileHit[S], len(need))
	}
	mint, maxt := slices.Min(need), slices.Max(need)
	ms.mu.Lock()
	tr := k.track(ms, false)
	var spans []fileSpan
	learn := false
	if tr != nil {
		spans = filesInRange(tr, mint, maxt)
		_, known := tr.fileMax()
		learn = !known && len(tr.files()) > 0
		if learn && (len(spans) == 0 || spans[len(spans)-1].start != tr.files()[len(tr.files())-1]) {
			spans = append(spans, fileSpan{start: tr.files()[len(tr.files())-1]})
		}
	}
	ms.mu.Unlock()
	want := make(map[int64]bool, len(need))
	for _, t := range need {
		want[t] = true
	}
	newest, newestOK := noTime, false
	for i, f := range spans {
		path := filePath(s.dir, k, ms.ref, f.start)
		_, hi, ok, err := readFile(k, s.readers, path, mint, maxt, func(run []S) error {
			for _, smp := range run {
				t := k.ts(smp)
				if h, done := hits[t]; want[t] && !(done && h.found) {
					hits[t] = fileHit[S]{s: smp, found: true} // the first stored wins
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("cannot read series file for duplicate detection; its samples are taken as absent", "path", path, "err", err)
		}
		if i == len(spans)-1 && learn && err == nil {
			newest, newestOK = hi, ok
		}
	}
	for _, t := range need {
		if _, done := hits[t]; !done {
			hits[t] = fileHit[S]{}
		}
	}
	if learn {
		ms.mu.Lock()
		if tr := k.track(ms, false); tr != nil {
			if fmax, known := tr.fileMax(); !known {
				if newestOK {
					fmax = max(fmax, newest)
					tr.maxT = max(tr.maxT, newest)
				}
				tr.setFileMax(fmax, true)
			}
		}
		ms.mu.Unlock()
	}
	return hits
}

// newestInFile returns the sample with the greatest timestamp in the file
// (the later one if a timestamp repeats), reading only the block whose
// bounds hold it. ok is false for a file without rows.
func newestInFile[S any](k kind[S], path string) (newest S, ok bool, err error) {
	_, hi, any, err := readFile(k, nil, path, 0, 0, nil)
	if err != nil || !any {
		return newest, false, err
	}
	_, _, _, err = readFile(k, nil, path, hi, hi, func(run []S) error {
		newest, ok = run[len(run)-1], true
		return nil
	})
	return newest, ok, err
}

// repairResult says what repairFile did.
type repairResult uint8

const (
	repairNone    repairResult = iota
	repairCut                  // an incomplete final frame was cut
	repairRemoved              // the file ended inside its prologue or schema: it held no block and was removed
)

// repairFile cuts an incomplete final frame left by a crash. A file that
// ends before its schema is complete holds no block (it was being
// created); it is removed, and its samples are still in the WAL because the
// WAL is only truncated after the series files are synced.
func repairFile(path string) (repairResult, error) {
	plan, err := acta.InspectRecovery(path)
	if err != nil {
		return repairNone, err
	}
	if plan.SchemaIncomplete {
		if err := os.Remove(path); err != nil {
			return repairNone, err
		}
		return repairRemoved, nil
	}
	if !plan.RequiresRepair() {
		return repairNone, nil
	}
	if _, err := acta.RepairIncompleteTail(path); err != nil {
		return repairNone, err
	}
	return repairCut, nil
}

// validateFile runs Acta's full validation (every stream decoded).
func validateFile(path string) error {
	return acta.Validate(path, acta.ValidateFull)
}
