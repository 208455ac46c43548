package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func init() {
	register("query", "print the samples and native histograms of the series matching a selector, read from a data directory", runQuery)
}

const queryUsage = "usage: acta-remote query --data-dir DIR [--config FILE] [--start T] [--end T] [--json] 'SELECTOR'  (T: RFC 3339 or Unix ms; --config: the server's, to read files that exist only in its storage.object_store bucket)"

// runQuery reads the data directory directly, without the server and
// without its lock, so it works while the server runs (and when it does
// not): the series files merged with what the WAL holds, so it prints
// every sample of both kinds the server acknowledged, flushed or not.
func runQuery(args []string) int {
	fa, err := parseSelectorArgs(args, []string{"json"}, []string{"data-dir", "start", "end", "config"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote query: %v\n%s\n", err, queryUsage)
		return exitError
	}
	ms, err := parseSelector(fa.file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
		return exitError
	}
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	for name, dst := range map[string]*int64{"start": &mint, "end": &maxt} {
		if v, ok := fa.vals[name]; ok {
			if *dst, err = parseTime(v); err != nil {
				fmt.Fprintf(os.Stderr, "acta-remote query: --%s: %v\n", name, err)
				return exitError
			}
		}
	}
	ro, err := actastore.OpenReadOnlyFor(fa.vals["data-dir"], ms...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
		return exitError
	}
	bucketOnly := 0
	if path := fa.vals["config"]; path != "" {
		if err := useBucket(ro, path); err != nil {
			fmt.Fprintf(os.Stderr, "acta-remote query: --config: %v\n", err)
			return exitError
		}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	p := printer{w: out, json: fa.bools["json"]}
	var sum querySummary
	for _, s := range ro.Series(ms...) {
		rd, err := ro.Read(s.Ref, mint, maxt)
		if err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
			return exitError
		}
		if fa.vals["config"] == "" {
			bucketOnly += ro.BucketOnlyFiles(s.Ref)
		}
		if len(rd.Floats)+len(rd.Histograms) == 0 {
			continue
		}
		sum.add(rd)
		p.series(s.Labels)
		p.mergedStarts(s.Labels, rd.Floats, rd.Histograms, rd.FloatStarts, rd.HistogramStarts)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
		return exitError
	}
	sum.report(os.Stderr, fa.vals["data-dir"], time.Now())
	if bucketOnly > 0 {
		fmt.Fprintf(os.Stderr, "acta-remote query: %d files of these series exist only in the object store and were left out; --config FILE (the server's) reads them\n", bucketOnly)
	}
	return exitOK
}

// querySummary counts what query printed, and where it was: in the series
// files, or only in the WAL so far (acknowledged, in the server's head).
type querySummary struct {
	series, floats, hists, walOnly int
	newest                         int64
}

func (q *querySummary) add(rd actastore.SeriesRead) {
	q.series++
	q.floats += len(rd.Floats)
	q.hists += len(rd.Histograms)
	q.walOnly += rd.WALOnly
	if q.series == 1 {
		q.newest = math.MinInt64
	}
	q.newest = max(q.newest, lastT(rd.Floats, floatOps), lastT(rd.Histograms, histOps))
}

func lastT[S any](ss []S, ops *kindOps[S]) int64 {
	if len(ss) == 0 {
		return math.MinInt64
	}
	return ops.ts(ss[len(ss)-1])
}

func (q *querySummary) report(w io.Writer, dir string, now time.Time) {
	n := q.floats + q.hists
	fmt.Fprintf(w, "acta-remote query: %d series, %d samples and %d native histograms from %s: %d in the series files, %d only in the WAL so far (acknowledged, not flushed yet)\n",
		q.series, q.floats, q.hists, dir, n-q.walOnly, q.walOnly)
	if n > 0 {
		fmt.Fprintf(w, "acta-remote query: newest: %s (%s)\n", fmtMs(q.newest), describeAge(now.Sub(time.UnixMilli(q.newest)).Round(100*time.Millisecond)))
	}
}

// parseSelectorArgs is parseFileArgs for "--data-dir DIR [flags] SELECTOR".
func parseSelectorArgs(args, boolFlags, valFlags []string) (fileArgs, error) {
	fa, err := parseFileArgs(args, boolFlags, valFlags)
	if err != nil && fa.file == "" && err.Error() == "missing FILE" {
		err = errors.New("missing SELECTOR")
	}
	if err == nil && fa.vals["data-dir"] == "" {
		err = errors.New("--data-dir is required")
	}
	return fa, err
}

// parseSelector parses a PromQL series selector: `up`, `{job="api"}`,
// `up{instance=~"10\\..*"}`.
func parseSelector(s string) ([]*labels.Matcher, error) {
	if s == "" {
		return nil, errors.New("missing SELECTOR")
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
	if err != nil {
		return nil, fmt.Errorf("selector %q: %w", s, err)
	}
	return ms, nil
}

// parseTime reads RFC 3339 or an integer of Unix milliseconds.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither RFC 3339 nor Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
}

// describeAge says how old a sample is, or how far in the future a sample
// timestamped ahead of this clock lies.
func describeAge(age time.Duration) string {
	if age < 0 {
		return fmt.Sprintf("%s in the future", -age)
	}
	return fmt.Sprintf("%s old", age)
}
