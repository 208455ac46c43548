package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/acta-remote/acta-remote/rotation"
)

// Retention of histogram files: they are planned with the float series
// files (rotation.File.Kind tells them apart), so max_age deletes both and
// the size cap removes the oldest sealed files of either kind first.

const (
	fileKindFloat     = 0
	fileKindHistogram = 1
)

// retentionFiles lists every histogram file for the retention plan. End is
// the next file's start for a sealed file, the newest sample + 1 for a
// newest file with an empty head, MaxInt64 otherwise (as for floats).
func (h *histStore) retentionFiles(sizes bool) []rotation.File {
	h.smu.Lock()
	all := make([]*histSeries, 0, len(h.series))
	for _, st := range h.series {
		all = append(all, st)
	}
	h.smu.Unlock()
	var files []rotation.File
	for _, st := range all {
		st.mu.Lock()
		starts := slices.Clone(st.files)
		busy := len(st.head) > 0
		newestMax := st.newestMax
		st.mu.Unlock()
		for i, start := range starts {
			f := rotation.File{Ref: st.ref, Start: start, End: math.MaxInt64, Sealed: i < len(starts)-1, Kind: fileKindHistogram}
			switch {
			case f.Sealed:
				f.End = starts[i+1]
			case !busy && newestMax != noTime:
				f.End = newestMax + 1
			}
			if sizes {
				if fi, err := os.Stat(histFilePath(h.s.dir, st.ref, start)); err == nil {
					f.Bytes = rotation.Allocated(fi)
				}
			}
			files = append(files, f)
		}
	}
	return files
}

// deleteFile removes one planned histogram file if the plan still holds
// (the file is the series', and a newest file got nothing since). It
// holds mu exclusively, so no flush writes and no reader reads the file
// meanwhile.
func (h *histStore) deleteFile(f rotation.File) (freed int64, gone bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.smu.Lock()
	st := h.series[f.Ref]
	h.smu.Unlock()
	if st == nil {
		return 0, false, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := slices.Index(st.files, f.Start)
	newest := i == len(st.files)-1
	if i < 0 || (newest && (f.Sealed || len(st.head) > 0 || st.newestMax == noTime || st.newestMax+1 != f.End)) {
		return 0, false, nil
	}
	path := histFilePath(h.s.dir, st.ref, f.Start)
	if fi, err := os.Stat(path); err == nil {
		freed = rotation.Allocated(fi)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, fmt.Errorf("retention: delete histogram file %s: %w", path, err)
	}
	st.files = slices.Delete(st.files, i, i+1)
	if newest {
		if err := st.noteNewestLocked(h.s.dir); err != nil {
			h.s.log.Warn("retention: newest sample of histogram file", "ref", fmt.Sprintf("%016x", st.ref), "err", err)
		}
	}
	return freed, true, nil
}

// hasData reports whether series ref has histogram files or buffered
// histograms (mu held).
func (h *histStore) hasData(ref uint64) bool {
	h.smu.Lock()
	st := h.series[ref]
	h.smu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.files) > 0 || len(st.head) > 0
}

// forgetLocked drops the histogram state of removed series and their
// exemplar files (mu held exclusively).
func (h *histStore) forgetLocked(refs []uint64) {
	for _, ref := range refs {
		h.smu.Lock()
		delete(h.series, ref)
		h.smu.Unlock()
		p := exemplarFilePath(h.s.dir, ref)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			h.s.log.Warn("cannot delete exemplar file of a removed series", "path", p, "err", err)
		}
	}
}
