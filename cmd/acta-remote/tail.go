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

// rescanEvery is how often tail looks for new series (the WAL and catalog
// records added since) and new files (one listing per shard directory of
// the followed series); open files are polled every --poll.
const rescanEvery = 2 * time.Second

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
	ro, err := actastore.OpenReadOnly(fa.vals["data-dir"])
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	tl := &tailer{ro: ro, ms: ms, p: printer{w: out, json: fa.bools["json"], inline: true}, series: map[uint64]*followed{}}
	tl.cutoff = time.Now().Add(-since).UnixMilli()
	if err := tl.cycle(true, tl.cutoff); err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote tail: %v\n", err)
		return exitError
	}
	out.Flush()
	var fresh freshness
	for ref := range tl.series {
		fresh.add(ro, ref)
	}
	fmt.Fprintf(os.Stderr, "acta-remote tail: following %d series (new blocks every %s, new series and files every %s); Ctrl-C ends\n", len(tl.series), poll, rescanEvery)
	fresh.report(os.Stderr, "acta-remote tail", time.Now())

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
		if err := tl.cycle(rescan, math.MinInt64); err != nil {
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
	ro      *actastore.ReadOnly
	ms      []*labels.Matcher
	p       printer
	cutoff  int64 // ms: the start-up history begins here
	series  map[uint64]*followed
	order   []*followed // by labels, so output is stable within a poll
	printed int
}

// cycle prints what the followed files gained since the last cycle; with
// rescan it first picks up new series and new files, whose samples are
// printed from minT on (earlier ones only move the watermark).
//
// The order matters. A series' next file is created only after the last
// block of its previous file is committed, so files are listed first, then
// the open ones are polled, and only then are new files read: the old
// file's last block is in hand before the new file's samples move the
// watermark past it.
func (tl *tailer) cycle(rescan bool, minT int64) error {
	var fresh map[*followed][]actastore.SeriesFile
	var err error
	if rescan {
		fresh, err = tl.rescan()
	}
	for _, f := range tl.order {
		smps, reopen := f.poll()
		smps = append(smps, f.catchUp(reopen, math.MinInt64)...)
		// Sealed files wholly before minT (the start-up history) are known
		// from their names not to matter: they are never opened.
		files := fresh[f]
		if kept := actastore.SkipSealedBefore(files, minT); len(kept) < len(files) {
			for _, fl := range files[:len(files)-len(kept)] {
				f.retired[fl.Path] = true
			}
			files = kept
		}
		smps = append(smps, f.catchUp(files, minT)...)
		tl.emit(f, smps, minT)
		f.retireOld()
	}
	return err
}

// rescan reads series defined since the last call and lists the files of
// every followed series, returning those not followed yet.
func (tl *tailer) rescan() (map[*followed][]actastore.SeriesFile, error) {
	_, err := tl.ro.Reload()
	added := false
	for _, s := range tl.ro.Series(tl.ms...) {
		if tl.series[s.Ref] != nil {
			continue
		}
		f := &followed{info: s, last: math.MinInt64, files: map[string]*fileTail{}, retired: map[string]bool{}}
		tl.series[s.Ref], added = f, true
		tl.order = append(tl.order, f)
	}
	if added {
		sortFollowed(tl.order)
	}
	refs := make([]uint64, len(tl.order))
	for i, f := range tl.order {
		refs[i] = f.info.Ref
	}
	all, lerr := tl.ro.ListFilesOf(refs)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	fresh := map[*followed][]actastore.SeriesFile{}
	for _, f := range tl.order {
		for _, fl := range all[f.info.Ref] {
			if f.files[fl.Path] == nil && !f.retired[fl.Path] {
				fresh[f] = append(fresh[f], fl)
			}
		}
	}
	return fresh, err
}

// emit prints the samples after the series' watermark, in timestamp order,
// once each; samples before minT only move the watermark.
func (tl *tailer) emit(f *followed, smps []actastore.Sample, minT int64) {
	headed := false
	for _, s := range sortDedupe(smps) {
		if s.T <= f.last {
			continue
		}
		f.last = s.T
		if s.T < minT {
			continue
		}
		if !headed {
			tl.p.series(f.info.Labels)
			headed = true
		}
		tl.p.sample(f.info.Labels, s)
		if minT == math.MinInt64 {
			tl.printed++
		}
	}
}

func (tl *tailer) close() {
	for _, f := range tl.order {
		for _, ft := range f.files {
			ft.close()
		}
	}
}
