package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// Report is the JSON output.
type Report struct {
	Started    string                        `json:"started"`
	Finished   string                        `json:"finished"`
	Machine    string                        `json:"machine"`
	Config     map[string]any                `json:"config"`
	Metrics    []metricInfo                  `json:"metrics"`
	Summary    []SystemSummary               `json:"summary"`               // medians over runs
	Ratios     map[string]map[string]float64 `json:"ratios_vs_acta_remote"` // peer -> metric -> median(peer) / median(acta-remote)
	Conclusion string                        `json:"correctness"`
	Runs       [][]*SystemResult             `json:"runs"` // by run, then system
}

// SystemSummary is one system's figures over all runs.
type SystemSummary struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Notes   []string        `json:"notes,omitempty"`
	Values  map[string]Cell `json:"values"` // by metric key
	Verify  VerifyResult    `json:"verify"` // summed over runs
	Errors  []string        `json:"errors,omitempty"`
}

// Cell is one metric of one system: median, min and max over the runs
// that produced it.
type Cell struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

type metricInfo struct {
	Key          string `json:"key"`
	Label        string `json:"label"`
	HigherBetter bool   `json:"higher_is_better"`
}

type metric struct {
	metricInfo
	get func(*SystemResult) (float64, bool)
}

func ingestMetric(proto, what string) func(*SystemResult) (float64, bool) {
	return func(r *SystemResult) (float64, bool) {
		ing, ok := r.Ingest[proto]
		if !ok {
			return 0, false
		}
		switch what {
		case "sps":
			return ing.SamplesPerSec, true
		case "p50":
			return ing.P50Ms, true
		}
		return ing.P99Ms, true
	}
}

func readMetric(i int) func(*SystemResult) (float64, bool) {
	return func(r *SystemResult) (float64, bool) {
		if i >= len(r.Reads) || r.Reads[i].Err != "" || r.Reads[i].Reps == 0 {
			return 0, false
		}
		return r.Reads[i].P50Ms, true
	}
}

func positive(v float64) (float64, bool) { return v, v > 0 }

func metrics(runs [][]*SystemResult) []metric {
	ms := []metric{
		{metricInfo{"ingest_rw1_samples_per_s", "Ingest RW 1.0, samples/s (sustained)", true}, ingestMetric(protoRW1, "sps")},
		{metricInfo{"ingest_rw1_p50_ms", "RW 1.0 request latency p50, ms", false}, ingestMetric(protoRW1, "p50")},
		{metricInfo{"ingest_rw1_p99_ms", "RW 1.0 request latency p99, ms", false}, ingestMetric(protoRW1, "p99")},
		{metricInfo{"ingest_rw2_samples_per_s", "Ingest RW 2.0, samples/s (sustained)", true}, ingestMetric(protoRW2, "sps")},
		{metricInfo{"ingest_rw2_p50_ms", "RW 2.0 request latency p50, ms", false}, ingestMetric(protoRW2, "p50")},
		{metricInfo{"ingest_rw2_p99_ms", "RW 2.0 request latency p99, ms", false}, ingestMetric(protoRW2, "p99")},
		{metricInfo{"peak_rss_mib", "Peak RSS (VmHWM) while ingesting RW 1.0 + flush, MiB", false}, func(r *SystemResult) (float64, bool) { return positive(float64(r.PeakRSSBytes) / (1 << 20)) }},
	}
	for _, n := range memorySizes(runs) {
		ms = append(ms, metric{metricInfo{fmt.Sprintf("memory_%d_bytes_per_series", n),
			fmt.Sprintf("Resident memory grown per active series, %s live series × %d samples, bytes", fmtCount(n), memorySamples(runs)), false},
			func(r *SystemResult) (float64, bool) {
				for _, m := range r.Memory {
					if m.Series == n {
						return m.BytesPerSeries, true
					}
				}
				return 0, false
			}})
	}
	ms = append(ms, []metric{
		{metricInfo{"compacted_alloc_bytes_per_sample", "Disk after flush/compaction, bytes/sample (allocated, du)", false}, func(r *SystemResult) (float64, bool) { return positive(r.Compacted.AllocPerSample) }},
		{metricInfo{"compacted_apparent_bytes_per_sample", "Disk after flush/compaction, bytes/sample (apparent)", false}, func(r *SystemResult) (float64, bool) { return positive(r.Compacted.ApparentPerSample) }},
		{metricInfo{"data_dir_alloc_bytes_per_sample", "Whole data dir after stop, bytes/sample (allocated)", false}, func(r *SystemResult) (float64, bool) { return positive(r.DataDir.AllocPerSample) }},
	}...)
	settleMetric := func(get func(SettleResult) float64) func(*SystemResult) (float64, bool) {
		return func(r *SystemResult) (float64, bool) {
			if len(r.Settle) == 0 {
				return 0, false
			}
			return get(r.Settle[0]), true
		}
	}
	ms = append(ms,
		metric{metricInfo{"settle_s", "Maintenance settled after the ingest (compaction, merges), s", false}, settleMetric(func(s SettleResult) float64 { return s.Seconds })},
		metric{metricInfo{"settle_restart_s", "... and after the restart, s", false}, func(r *SystemResult) (float64, bool) {
			if len(r.Settle) < 2 {
				return 0, false
			}
			return r.Settle[1].Seconds, true
		}},
		metric{metricInfo{"compaction_cpu_s_per_gib", "Maintenance CPU s per GiB of files compacted or merged", false}, settleMetric(func(s SettleResult) float64 { return s.CPUSecPerGiB })},
		metric{metricInfo{"probe_p99_busy_ms", "Append p99 while maintenance runs, ms (20 series every 100 ms)", false}, settleMetric(func(s SettleResult) float64 { return s.ProbeBusyP99 })},
		metric{metricInfo{"probe_p99_idle_ms", "Append p99 with maintenance idle, ms", false}, settleMetric(func(s SettleResult) float64 { return s.ProbeIdleP99 })},
		metric{metricInfo{"disk_write_amplification", "Bytes written to disk ÷ data dir size (write amplification, WAL included)", false}, func(r *SystemResult) (float64, bool) {
			if r.DiskWriteBytes <= 0 || r.DataDir.AllocBytes <= 0 {
				return 0, false
			}
			return float64(r.DiskWriteBytes) / float64(r.DataDir.AllocBytes), true
		}},
		metric{metricInfo{"series_write_amplification", "Bytes written into series files ÷ their size (flushes, compactions, merges)", false}, func(r *SystemResult) (float64, bool) {
			if r.SeriesWriteBytes <= 0 || r.Compacted.ApparentBytes <= 0 {
				return 0, false
			}
			return r.SeriesWriteBytes / float64(r.Compacted.ApparentBytes), true
		}},
	)
	for _, g := range shapeGroups {
		name := g.name
		ms = append(ms,
			metric{metricInfo{"shape_" + name + "_alloc_bytes_per_sample", "Disk, " + name + " alone, bytes/sample (allocated)", false}, func(r *SystemResult) (float64, bool) {
				d, ok := r.Shapes[name]
				return d.AllocPerSample, ok && d.AllocPerSample > 0
			}},
			metric{metricInfo{"shape_" + name + "_apparent_bytes_per_sample", "Disk, " + name + " alone, bytes/sample (apparent)", false}, func(r *SystemResult) (float64, bool) {
				d, ok := r.Shapes[name]
				return d.ApparentPerSample, ok && d.ApparentPerSample > 0
			}},
		)
	}
	for i, n := range readNames(runs) {
		ms = append(ms, metric{metricInfo{fmt.Sprintf("read_%d_p50_ms", i), "Read " + n + ", p50 ms", false}, readMetric(i)})
	}
	ms = append(ms, metric{metricInfo{"restart_ready_s", "Restart to ready after stop, s", false}, func(r *SystemResult) (float64, bool) { return positive(r.RestartSec) }})
	ms = append(ms, metric{metricInfo{"restart_idle_s", "... then busy in the background (the reads wait), s", false}, func(r *SystemResult) (float64, bool) { return r.IdleSec, r.RestartSec > 0 }})
	if c := crashShape(runs); c != nil {
		head := fmt.Sprintf("%s series × %s samples in the head", fmtCount(c.Series), fmtCount(int(c.Samples/int64(c.Series))))
		crash := func(get func(*CrashResult) float64) func(*SystemResult) (float64, bool) {
			return func(r *SystemResult) (float64, bool) {
				if r.Crash == nil {
					return 0, false
				}
				return positive(get(r.Crash))
			}
		}
		ms = append(ms,
			metric{metricInfo{"restart_kill9_s", "Restart after kill -9, " + head + ", to ready and one series read whole, s", false}, crash(func(c *CrashResult) float64 { return c.QueryableSec })},
			metric{metricInfo{"restart_kill9_ready_s", "... of which to the ready probe's 200, s", false}, crash(func(c *CrashResult) float64 { return c.ReadySec })},
		)
	}
	return ms
}

// memorySizes are the memory scenario's sizes that have a result, in
// the order they ran.
func memorySizes(runs [][]*SystemResult) []int {
	var out []int
	for _, run := range runs {
		for _, r := range run {
			for _, m := range r.Memory {
				if !slices.Contains(out, m.Series) {
					out = append(out, m.Series)
				}
			}
		}
	}
	return out
}

// memorySamples is the memory scenario's samples per series.
func memorySamples(runs [][]*SystemResult) int {
	for _, run := range runs {
		for _, r := range run {
			for _, m := range r.Memory {
				return m.Samples
			}
		}
	}
	return 0
}

// crashShape is a kill -9 result, for its size.
func crashShape(runs [][]*SystemResult) *CrashResult {
	for _, run := range runs {
		for _, r := range run {
			if r.Crash != nil {
				return r.Crash
			}
		}
	}
	return nil
}

func readNames(runs [][]*SystemResult) []string {
	for _, run := range runs {
		for _, r := range run {
			if len(r.Reads) > 0 {
				var names []string
				for _, q := range r.Reads {
					names = append(names, q.Query)
				}
				return names
			}
		}
	}
	return nil
}

// buildReport summarises the runs (median, min, max per metric) and
// computes each peer's ratio to acta-remote from the medians.
func buildReport(rep *Report, runs [][]*SystemResult) {
	rep.Runs = runs
	ms := metrics(runs)
	rep.Metrics = nil
	for _, m := range ms {
		rep.Metrics = append(rep.Metrics, m.metricInfo)
	}
	rep.Summary = nil
	if len(runs) > 0 {
		for i := range runs[0] {
			sum := SystemSummary{Name: runs[0][i].Name, Version: runs[0][i].Version, Notes: runs[0][i].Notes, Values: map[string]Cell{}}
			ok := true
			for _, m := range ms {
				var vs []float64
				for _, run := range runs {
					if v, has := m.get(run[i]); has {
						vs = append(vs, v)
					}
				}
				if len(vs) > 0 {
					slices.Sort(vs)
					med := vs[len(vs)/2]
					if len(vs)%2 == 0 {
						med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
					}
					sum.Values[m.Key] = Cell{Median: med, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
				}
			}
			for _, run := range runs {
				r := run[i]
				v := &sum.Verify
				v.Series += r.Verify.Series
				v.Samples += r.Verify.Samples
				v.Mismatches += r.Verify.Mismatches
				v.Tolerance = r.Verify.Tolerance
				v.MaxRelErr = max(v.MaxRelErr, r.Verify.MaxRelErr)
				if v.FirstMismatch == "" {
					v.FirstMismatch = r.Verify.FirstMismatch
				}
				ok = ok && r.Verify.OK
				if r.Err != "" {
					sum.Errors = append(sum.Errors, r.Err)
				}
			}
			sum.Verify.OK = ok
			rep.Summary = append(rep.Summary, sum)
		}
	}
	rep.Ratios = map[string]map[string]float64{}
	acta := findSummary(rep.Summary, sysActa)
	var bad []string
	for _, s := range rep.Summary {
		if !s.Verify.OK {
			bad = append(bad, s.Name)
		}
		if acta == nil || s.Name == sysActa {
			continue
		}
		rep.Ratios[s.Name] = map[string]float64{}
		for _, m := range ms {
			a, ok1 := acta.Values[m.Key]
			p, ok2 := s.Values[m.Key]
			if ok1 && ok2 && a.Median > 0 {
				rep.Ratios[s.Name][m.Key] = p.Median / a.Median
			}
		}
	}
	rep.Conclusion = "every system read back what was generated"
	if len(bad) > 0 {
		rep.Conclusion = "FAILED for " + strings.Join(bad, ", ")
	}
	if checked, diffs := promqlAgreement(runs); len(diffs) > 0 {
		rep.Conclusion += "; PromQL: " + strings.Join(diffs, "; ")
	} else if checked > 0 {
		rep.Conclusion += fmt.Sprintf("; %d PromQL answers identical to Prometheus's, byte for byte", checked)
	}
}

func findSummary(ss []SystemSummary, name string) *SystemSummary {
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}

// writeMarkdown prints one row per metric, one column per system (the
// median, with the range when there were several runs) and, for each peer,
// its ratio to acta-remote with who is ahead.
func writeMarkdown(w io.Writer, rep *Report) {
	ms := metrics(rep.Runs)
	acta := findSummary(rep.Summary, sysActa)
	isPeer := func(s SystemSummary) bool { return acta != nil && s.Name != sysActa }
	fmt.Fprintf(w, "| Metric |")
	for _, s := range rep.Summary {
		fmt.Fprintf(w, " %s |", s.Name)
		if isPeer(s) {
			fmt.Fprintf(w, " %s ÷ acta |", s.Name)
		}
	}
	fmt.Fprintf(w, "\n|---|")
	for _, s := range rep.Summary {
		fmt.Fprintf(w, "---:|")
		if isPeer(s) {
			fmt.Fprintf(w, "---:|")
		}
	}
	fmt.Fprintln(w)
	for _, m := range ms {
		// A row no system has a figure for (a scenario that did not run)
		// is left out.
		if !slices.ContainsFunc(rep.Summary, func(s SystemSummary) bool { _, ok := s.Values[m.Key]; return ok }) {
			continue
		}
		fmt.Fprintf(w, "| %s |", m.Label)
		for _, s := range rep.Summary {
			c, ok := s.Values[m.Key]
			switch {
			case !ok:
				fmt.Fprintf(w, " — |")
			case c.N > 1:
				fmt.Fprintf(w, " %s (%s–%s) |", fmtNum(c.Median), fmtNum(c.Min), fmtNum(c.Max))
			default:
				fmt.Fprintf(w, " %s |", fmtNum(c.Median))
			}
			if !isPeer(s) {
				continue
			}
			ratio, ok := rep.Ratios[s.Name][m.Key]
			if !ok {
				fmt.Fprintf(w, " — |")
				continue
			}
			mark := "acta ahead"
			if ratio > 1 == m.HigherBetter {
				mark = "peer ahead"
			}
			if math.Abs(ratio-1) < 0.02 {
				mark = "even"
			}
			fmt.Fprintf(w, " %.2f× (%s) |", ratio, mark)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| Correctness (series checked, mismatched, max rel. error) |")
	for _, s := range rep.Summary {
		v := s.Verify
		fmt.Fprintf(w, " %d, %d, %.2g |", v.Series, v.Mismatches, v.MaxRelErr)
		if isPeer(s) {
			fmt.Fprintf(w, " |")
		}
	}
	fmt.Fprintln(w)
}

// fmtNum keeps three significant digits or whole numbers.
func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func writeJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
