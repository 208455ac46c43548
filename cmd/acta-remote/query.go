package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func init() {
	register("query", "print the samples of the series matching a selector, read from a data directory", runQuery)
}

const queryUsage = "usage: acta-remote query --data-dir DIR [--config FILE] [--start T] [--end T] [--json] 'SELECTOR'  (T: RFC 3339 or Unix ms; --config: the server's, to read files that exist only in its storage.object_store bucket)"

// runQuery reads the series files directly, without the server and without
// its lock, so it works while the server runs (and when it does not).
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
	ro, err := actastore.OpenReadOnly(fa.vals["data-dir"])
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
	var fresh freshness
	nseries, nsamples := 0, 0
	for _, s := range ro.Series(ms...) {
		smps, err := ro.Samples(s.Ref, mint, maxt)
		if err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
			return exitError
		}
		if err := fresh.add(ro, s.Ref); err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
			return exitError
		}
		if fa.vals["config"] == "" {
			bucketOnly += ro.BucketOnlyFiles(s.Ref)
		}
		if len(smps) == 0 {
			continue
		}
		nseries++
		nsamples += len(smps)
		p.series(s.Labels)
		for _, smp := range smps {
			p.sample(s.Labels, smp)
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote query: %v\n", err)
		return exitError
	}
	fmt.Fprintf(os.Stderr, "acta-remote query: %d series, %d samples from the files in %s\n", nseries, nsamples, fa.vals["data-dir"])
	if bucketOnly > 0 {
		fmt.Fprintf(os.Stderr, "acta-remote query: %d files of these series exist only in the object store and were left out; --config FILE (the server's) reads them\n", bucketOnly)
	}
	fresh.report(os.Stderr, "acta-remote query", time.Now())
	return exitOK
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

// printer writes samples as text (a labels line, then one tab-separated line
// per sample; with inline, the labels start every line, for tail's
// interleaved series) or JSON (one object per sample). Values are printed
// with their exact bits: NaN payloads (stale markers) and -0 are told apart.
type printer struct {
	w      io.Writer
	json   bool
	inline bool
}

func (p printer) series(lset labels.Labels) {
	if !p.json && !p.inline {
		fmt.Fprintln(p.w, lset.String())
	}
}

func (p printer) sample(lset labels.Labels, s actastore.Sample) {
	bits := math.Float64bits(s.V)
	if !p.json {
		prefix := "  "
		if p.inline {
			prefix = lset.String() + "\t"
		}
		fmt.Fprintf(p.w, "%s%d\t%s\t%s\t0x%016x\n", prefix, s.T, fmtMs(s.T), strconv.FormatFloat(s.V, 'g', -1, 64), bits)
		return
	}
	var sb strings.Builder
	sb.WriteString(`{"labels":{`)
	i := 0
	lset.Range(func(l labels.Label) {
		if i++; i > 1 {
			sb.WriteByte(',')
		}
		sb.WriteString(jsonString(l.Name) + ":" + jsonString(l.Value))
	})
	fmt.Fprintf(&sb, `},"t":%d,"v":%s,"bits":"0x%016x"}`, s.T, floatJSON(s.V, 64), bits)
	fmt.Fprintln(p.w, sb.String())
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// freshness tracks how far the files lag behind what the server accepted,
// so the commands can say that the head is not visible.
type freshness struct {
	fileNewest, walNewest int64
	hasFile, hasWAL       bool
}

func (f *freshness) add(ro *actastore.ReadOnly, ref uint64) error {
	t, ok, err := ro.Newest(ref)
	if err != nil {
		return err
	}
	if ok && (!f.hasFile || t > f.fileNewest) {
		f.fileNewest, f.hasFile = t, true
	}
	if t, ok := ro.NewestInWAL(ref); ok && (!f.hasWAL || t > f.walNewest) {
		f.walNewest, f.hasWAL = t, true
	}
	return nil
}

func (f *freshness) report(w io.Writer, who string, now time.Time) {
	if !f.hasFile {
		fmt.Fprintf(w, "%s: no matching sample is in the files yet; samples still in the server's head are not visible here\n", who)
	} else {
		fmt.Fprintf(w, "%s: newest flushed sample of the matching series: %s (%s); samples still in the server's head are not in the files yet\n",
			who, fmtMs(f.fileNewest), describeAge(now.Sub(time.UnixMilli(f.fileNewest)).Round(time.Second)))
	}
	if f.hasWAL && (!f.hasFile || f.walNewest > f.fileNewest) {
		fmt.Fprintf(w, "%s: the WAL holds acknowledged samples up to %s; those after the newest flushed one are in the head only\n", who, fmtMs(f.walNewest))
	}
}

// describeAge says how old a sample is, or how far in the future a sample
// timestamped ahead of this clock lies.
func describeAge(age time.Duration) string {
	if age < 0 {
		return fmt.Sprintf("%s in the future", -age)
	}
	return fmt.Sprintf("%s old", age)
}
