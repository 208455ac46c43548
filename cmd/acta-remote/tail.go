package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/prometheus/prometheus/model/labels"
)

func init() {
	register("tail", "print recent samples of the series matching a selector, then follow new ones", runTail)
}

const tailUsage = "usage: acta-remote tail --data-dir DIR [--since 5m] [--poll 500ms] [--json] 'SELECTOR'"

// rescanEvery is how often tail lists the followed series' files to find
// new ones (one listing per shard directory and kind); the WAL (new
// samples, new series) and the open files are read every --poll.
const rescanEvery = 2 * time.Second

// maxCatchUpRounds bounds the file reads of one cycle while the server
// keeps truncating its WAL (see tailer.cycle).
const maxCatchUpRounds = 20

func runTail(args []string) int {
	fa, err := parseSelectorArgs(args, []string{"json"}, []string{"data-dir", "since", "poll"})
	since, poll := 5*time.Minute, 500*time.Millisecond
	for name, dst := range map[string]*time.Duration{"since": &since, "poll": &poll} {
		if v, ok := fa.vals[name]; ok && err == nil {
			if *dst, err = time.ParseDuration(v); err == nil && *dst <= 0 && name == "poll" {
				err = fmt.Errorf("--poll must be positive")
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n%s\n", err, tailUsage)
		return exitError
	}
	ms, err := parseSelector(fa.file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		return exitError
	}
	ro, err := actastore.OpenReadOnlyFor(fa.vals["data-dir"], ms...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	tl := &tailer{ro: ro, ms: ms, p: printer{w: out, json: fa.bools["json"], inline: true}, series: map[uint64]*followed{}}
	tl.discover(time.Now().Add(-since).UnixMilli())
	if err := tl.cycle(true); err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		return exitError
	}
	out.Flush()
	fmt.Fprintf(os.Stderr, "acta-remote tail: printed %d samples and %d native histograms of the last %s; following %d series "+
		"(the WAL, hence every acknowledged sample and new series, every %s; new files every %s); Ctrl-C ends\n",
		tl.history[0], tl.history[1], since, len(tl.series), poll, rescanEvery)

	tick := time.NewTicker(poll)
	defer tick.Stop()
	lastScan := time.Now()
	for {
		select {
		case <-ctx.Done():
			out.Flush()
			tl.close()
			fmt.Fprintf(os.Stderr, "acta-remote tail: stopped after %d new samples\n", tl.printed)
			return exitOK
		case <-tick.C:
		}
		rescan := time.Since(lastScan) >= rescanEvery
		if rescan {
			lastScan = time.Now()
		}
		tl.rescanDue = rescan
		if err := tl.cycle(false); err != nil {
			fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
			return exitError
		}
	}
}

// tailer follows every matching series.
type tailer struct {
	ro        *actastore.ReadOnly
	ms        []*labels.Matcher
	p         printer
	series    map[uint64]*followed
	order     []*followed // by labels, so output is stable within a poll
	unlisted  []*followed // discovered, files not listed yet
	rescanDue bool
	printed   int    // samples of both kinds printed after the history
	history   [2]int // floats, histograms printed as the start-up history
}

// cycle prints what the followed series gained since the last cycle.
//
// Every acknowledged sample is in the WAL before it is in any file, so
// the WAL read (Reload, then TakeWAL) is what makes tail live: a sample
// prints within one --poll of its acknowledgement. The files come first
// in a cycle, and the WAL after: a file block holds samples whose WAL
// records were written before it, so the WAL read after the files gives
// every one of them whose segment still exists, and the merge prints each
// once. When the Reload finds that the server deleted WAL segments (it
// does so only once their samples are in synced files) or new series
// appeared, the files are listed and read again before the WAL's samples
// move the watermark: the samples of a segment deleted before tail read
// it are in those files, maybe in one created since the last listing.
func (tl *tailer) cycle(first bool) error {
	var errs []error
	tl.readFiles(first || tl.rescanDue)
	for round := 0; ; round++ {
		tr := tl.ro.Truncations()
		n, err := tl.ro.Reload()
		if err != nil {
			errs = append(errs, err)
			break
		}
		if n > 0 {
			tl.discover(math.MinInt64)
		}
		truncated := tl.ro.Truncations() != tr
		if (!truncated && len(tl.unlisted) == 0) || round == maxCatchUpRounds {
			break
		}
		tl.readFiles(truncated)
	}
	for _, f := range tl.order {
		tl.emit(f, first)
	}
	return errors.Join(errs...)
}

// discover follows the matching series not followed yet; their output
// begins at minT.
func (tl *tailer) discover(minT int64) {
	added := false
	for _, s := range tl.ro.Series(tl.ms...) {
		if tl.series[s.Ref] != nil {
			continue
		}
		f := newFollowed(s, minT)
		tl.series[s.Ref], added = f, true
		tl.order = append(tl.order, f)
		tl.unlisted = append(tl.unlisted, f)
	}
	if added {
		sortFollowed(tl.order)
	}
}

// readFiles polls the open files of every followed series; it lists the
// files of every series first when all is set, else of those discovered
// since the last listing, and reads the new ones.
func (tl *tailer) readFiles(all bool) {
	list := tl.unlisted
	if all {
		list = tl.order
	}
	tl.unlisted = nil
	var flFresh, hsFresh map[uint64][]actastore.SeriesFile
	if len(list) > 0 {
		refs := make([]uint64, len(list))
		for i, f := range list {
			refs[i] = f.info.Ref
		}
		var err error
		if flFresh, err = tl.ro.ListFilesOf(refs); err == nil {
			hsFresh, err = tl.ro.ListHistogramFilesOf(refs)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		}
	}
	for _, f := range tl.order {
		f.fl.read(unfollowed(flFresh[f.info.Ref], f.fl.files, f.fl.retired), f.minT)
		f.hs.read(unfollowed(hsFresh[f.info.Ref], f.hs.files, f.hs.retired), f.minT)
	}
}

// unfollowed returns the listed files neither open nor retired.
func unfollowed(listed []actastore.SeriesFile, open map[string]*fileTail, retired map[string]bool) []actastore.SeriesFile {
	var out []actastore.SeriesFile
	for _, fl := range listed {
		if open[fl.Path] == nil && !retired[fl.Path] {
			out = append(out, fl)
		}
	}
	return out
}

// emit prints what the series gained, both kinds merged by timestamp
// (floats first at equal ones); samples before the series' minT only move
// the watermark.
func (tl *tailer) emit(f *followed, first bool) {
	walF, walH := tl.ro.TakeWAL(f.info.Ref)
	fs := f.fl.merge(walF)
	hs := f.hs.merge(walH)
	fs, hs = since(fs, floatOps, f.minT), since(hs, histOps, f.minT)
	f.minT = math.MinInt64
	if len(fs)+len(hs) == 0 {
		return
	}
	tl.p.series(f.info.Labels)
	tl.p.merged(f.info.Labels, fs, hs)
	if first {
		tl.history[0] += len(fs)
		tl.history[1] += len(hs)
	} else {
		tl.printed += len(fs) + len(hs)
	}
}

// since drops the samples before minT from a sorted slice.
func since[S any](ss []S, ops *kindOps[S], minT int64) []S {
	for len(ss) > 0 && ops.ts(ss[0]) < minT {
		ss = ss[1:]
	}
	return ss
}

func (tl *tailer) close() {
	for _, f := range tl.order {
		f.fl.close()
		f.hs.close()
	}
}
