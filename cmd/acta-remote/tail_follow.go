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

// kindOps is what tail needs to know of a kind of sample: its timestamp
// and how a series file's batch decodes (actastore's codecs).
type kindOps[S any] struct {
	ts     func(S) int64
	decode func(*acta.Schema, *acta.Batch) ([]S, error)
}

var (
	floatOps = &kindOps[actastore.Sample]{ts: func(s actastore.Sample) int64 { return s.T }, decode: actastore.BatchSamples}
	histOps  = &kindOps[actastore.HistogramSample]{ts: func(h actastore.HistogramSample) int64 { return h.T }, decode: actastore.BatchHistograms}
)

// followed is one series being tailed, one kindFollow per kind.
type followed struct {
	info actastore.SeriesInfo
	// minT is where the series' output begins: the start-up history's
	// cutoff for a series known at start, -inf for one that appeared
	// later (all it holds is new). Reset after its first emit.
	minT int64
	fl   kindFollow[actastore.Sample]
	hs   kindFollow[actastore.HistogramSample]
}

func newFollowed(info actastore.SeriesInfo, minT int64) *followed {
	return &followed{info: info, minT: minT,
		fl: newKindFollow(floatOps), hs: newKindFollow(histOps)}
}

// kindFollow follows one kind of one series: an open reader per file, the
// samples its files gained this cycle, and the watermark.
//
// The watermark (last) is the newest timestamp printed. It is what keeps a
// sample from printing twice: every sample reaches the WAL before a file,
// is printed from there, and is behind the watermark when its block shows
// up in a file; and a file rewritten by compaction can be read again from
// the start. File samples print only above it: a sample whose WAL segment
// the server deleted before tail read it (tail fell behind a truncation)
// is printed from its file when it is in order, lost when it is behind.
type kindFollow[S any] struct {
	ops   *kindOps[S]
	last  int64
	files map[string]*fileTail
	// retired files were superseded by a later file of the series; they
	// are not reopened (see retireOld).
	retired map[string]bool
	pending []S // from the files, since the last emit
}

func newKindFollow[S any](ops *kindOps[S]) kindFollow[S] {
	return kindFollow[S]{ops: ops, last: math.MinInt64, files: map[string]*fileTail{}, retired: map[string]bool{}}
}

// read gathers what the series' files of this kind gained: new blocks of
// the open files, files replaced since (read again from the start), and
// fresh files (listed since), of which sealed ones wholly before minT are
// known from their names not to matter and never opened.
func (k *kindFollow[S]) read(fresh []actastore.SeriesFile, minT int64) {
	smps, reopen := k.poll()
	k.pending = append(k.pending, smps...)
	k.pending = append(k.pending, k.catchUp(reopen, math.MinInt64)...)
	if kept := actastore.SkipSealedBefore(fresh, minT); len(kept) < len(fresh) {
		for _, fl := range fresh[:len(fresh)-len(kept)] {
			k.retired[fl.Path] = true
		}
		fresh = kept
	}
	k.pending = append(k.pending, k.catchUp(fresh, minT)...)
	k.retireOld()
}

// merge returns what to print of this cycle, sorted by timestamp: every
// sample the WAL gained (wal, in the order acknowledged: each once, out
// of order ones included), and the file samples above the watermark that
// the WAL did not give. It moves the watermark.
func (k *kindFollow[S]) merge(wal []S) []S {
	out := wal
	if len(k.pending) > 0 {
		inWAL := make(map[int64]bool, len(wal))
		for _, s := range wal {
			inWAL[k.ops.ts(s)] = true
		}
		for _, s := range k.pending {
			if t := k.ops.ts(s); t > k.last && !inWAL[t] {
				out = append(out, s)
				inWAL[t] = true
			}
		}
		k.pending = k.pending[:0]
	}
	slices.SortStableFunc(out, func(a, b S) int { return cmp.Compare(k.ops.ts(a), k.ops.ts(b)) })
	out = slices.CompactFunc(out, func(a, b S) bool { return k.ops.ts(a) == k.ops.ts(b) })
	if n := len(out); n > 0 && k.ops.ts(out[n-1]) > k.last {
		k.last = k.ops.ts(out[n-1])
	}
	return out
}

// retireOld closes every file but the newest, so a long tail holds one open
// file per series and kind. Nothing is lost: a file gets a successor only
// after its last block is committed, and that block was polled in the
// cycle that found the successor; whatever lands in an older file later is
// behind the newer file's samples, hence behind the watermark.
func (k *kindFollow[S]) retireOld() {
	var newest *fileTail
	for _, ft := range k.files {
		if newest == nil || ft.start > newest.start {
			newest = ft
		}
	}
	for path, ft := range k.files {
		if ft != newest {
			ft.close()
			delete(k.files, path)
			k.retired[path] = true
		}
	}
}

func (k *kindFollow[S]) close() {
	for _, ft := range k.files {
		ft.close()
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
func (k *kindFollow[S]) catchUp(files []actastore.SeriesFile, from int64) []S {
	var out []S
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
			out, err = scanAll(k.ops, sc, r.Schema(), out)
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
		k.files[path] = &fileTail{path: path, start: fl.Start, r: r, t: t}
	}
	return out
}

func scanAll[S any](ops *kindOps[S], sc *acta.Scan, s *acta.Schema, out []S) ([]S, error) {
	for {
		b, err := sc.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		smps, err := ops.decode(s, b)
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
func (k *kindFollow[S]) poll() (smps []S, reopen []actastore.SeriesFile) {
	fts := make([]*fileTail, 0, len(k.files))
	for _, ft := range k.files {
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
					delete(k.files, ft.path)
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
			got, err := k.ops.decode(ft.r.Schema(), b)
			if err != nil {
				fmt.Fprintf(os.Stderr, "acta-remote tail: %s: %v\n", ft.path, err)
				continue
			}
			smps = append(smps, got...)
		}
	}
	return smps, reopen
}

func sortFollowed(l []*followed) {
	slices.SortFunc(l, func(a, b *followed) int { return labels.Compare(a.info.Labels, b.info.Labels) })
}
