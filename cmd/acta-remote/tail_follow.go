package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
	"github.com/prometheus/prometheus/model/labels"
)

// followed is one series being tailed: an open reader per file, and the
// newest timestamp printed. The watermark is what makes a rewritten file
// safe to read again from the start: whatever compaction copied into it was
// printed already, so only later samples go out. The price: a sample that
// reaches the files behind the watermark (an out-of-order write) is not
// printed.
type followed struct {
	info  actastore.SeriesInfo
	last  int64 // newest timestamp printed (or skipped as history)
	files map[string]*fileTail
	// retired files were superseded by a later file of the series; they
	// are not reopened (see retireOld).
	retired map[string]bool
}

// retireOld closes every file but the newest, so a long tail holds one open
// file per series. Nothing is lost: a file gets a successor only after its
// last block is committed, and that block was polled in the cycle that
// found the successor; whatever lands in an older file later is behind the
// newer file's samples, hence behind the watermark.
func (f *followed) retireOld() {
	var newest *fileTail
	for _, ft := range f.files {
		if newest == nil || ft.start > newest.start {
			newest = ft
		}
	}
	for path, ft := range f.files {
		if ft != newest {
			ft.close()
			delete(f.files, path)
			f.retired[path] = true
		}
	}
}

// fileTail follows one series file from its snapshot on.
type fileTail struct {
	path  string
	start int64 // from the name, for ordering
	r     *acta.Reader
	t     *acta.Tail
}

func (ft *fileTail) close() {
	if ft.r != nil {
		ft.r.Close()
	}
}

// catchUp opens files and returns the samples at or after from that their
// snapshots hold (blocks wholly before from are not decoded); later polls
// follow each from there, so nothing committed in between is lost. A file
// not created completely yet is left for the next rescan.
func (f *followed) catchUp(files []actastore.SeriesFile, from int64) []actastore.Sample {
	var out []actastore.Sample
	for _, fl := range files {
		path := fl.Path
		r, err := actastore.OpenSeriesFile(path)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
			}
			continue
		}
		if r == nil {
			continue
		}
		var o acta.ScanOptions
		if from != math.MinInt64 {
			o.Range = &acta.PrimaryRange{Start: from, End: math.MaxInt64}
		}
		sc, err := r.Scan(o)
		if err == nil {
			out, err = scanAll(sc, r.Schema(), out)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "acta-remote tail: %s: %v\n", path, err)
		}
		t, err := r.Tail(acta.ScanOptions{})
		if err != nil {
			r.Close()
			fmt.Fprintf(os.Stderr, "acta-remote tail: %s: %v\n", path, err)
			continue
		}
		f.files[path] = &fileTail{path: path, start: fl.Start, r: r, t: t}
	}
	return out
}

func scanAll(sc *acta.Scan, s *acta.Schema, out []actastore.Sample) ([]actastore.Sample, error) {
	for {
		b, err := sc.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		smps, err := actastore.BatchSamples(s, b)
		if err != nil {
			return out, err
		}
		out = append(out, smps...)
	}
}

// poll returns the samples of the blocks committed since the last poll, in
// file start order, and the paths to read again from the start: replaced by
// a rewrite (compaction renames a new file over the old one) or cut short.
// A removed file (retention, or merged into another by compaction) is
// dropped; its successor shows up at the next rescan.
func (f *followed) poll() (smps []actastore.Sample, reopen []actastore.SeriesFile) {
	fts := make([]*fileTail, 0, len(f.files))
	for _, ft := range f.files {
		fts = append(fts, ft)
	}
	slices.SortFunc(fts, func(a, b *fileTail) int { return cmp.Compare(a.start, b.start) })
	for _, ft := range fts {
		for {
			b, err := ft.t.Poll()
			if err != nil {
				again := errors.Is(err, acta.ErrFileReplaced) || errors.Is(err, acta.ErrFileTruncated)
				if again || errors.Is(err, os.ErrNotExist) {
					ft.close()
					delete(f.files, ft.path)
				} else {
					// A bad block (Poll has moved past it) or a failed
					// refresh: say so and try again at the next poll.
					fmt.Fprintf(os.Stderr, "acta-remote tail: %s: %v\n", ft.path, err)
				}
				if again {
					reopen = append(reopen, actastore.SeriesFile{Path: ft.path, Start: ft.start})
				}
				break
			}
			if b == nil {
				break
			}
			got, err := actastore.BatchSamples(ft.r.Schema(), b)
			if err != nil {
				fmt.Fprintf(os.Stderr, "acta-remote tail: %s: %v\n", ft.path, err)
				continue
			}
			smps = append(smps, got...)
		}
	}
	return smps, reopen
}

// sortDedupe sorts samples by timestamp, keeping the first of equal ones
// (the one stored first, as Select does).
func sortDedupe(s []actastore.Sample) []actastore.Sample {
	slices.SortStableFunc(s, func(a, b actastore.Sample) int { return cmp.Compare(a.T, b.T) })
	return slices.CompactFunc(s, func(a, b actastore.Sample) bool { return a.T == b.T })
}

func sortFollowed(l []*followed) {
	slices.SortFunc(l, func(a, b *followed) int { return labels.Compare(a.info.Labels, b.info.Labels) })
}
