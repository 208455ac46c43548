package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Report is the JSON output.
type Report struct {
	Started    string                        `json:"started"`
	Finished   string                        `json:"finished"`
	Machine    string                        `json:"machine"`
	Config     map[string]any                `json:"config"`
	Systems    []*SystemResult               `json:"systems"`
	Ratios     map[string]map[string]float64 `json:"ratios_vs_acta_remote"` // peer -> metric -> peer / acta-remote
	Metrics    []metricInfo                  `json:"metrics"`
	Conclusion string                        `json:"correctness"`
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

func metrics(readNames []string) []metric {
	ms := []metric{
		{metricInfo{"ingest_rw1_samples_per_s", "Ingest RW 1.0, samples/s (sustained)", true}, ingestMetric(protoRW1, "sps")},
		{metricInfo{"ingest_rw1_p50_ms", "RW 1.0 request latency p50, ms", false}, ingestMetric(protoRW1, "p50")},
		{metricInfo{"ingest_rw1_p99_ms", "RW 1.0 request latency p99, ms", false}, ingestMetric(protoRW1, "p99")},
		{metricInfo{"ingest_rw2_samples_per_s", "Ingest RW 2.0, samples/s (sustained)", true}, ingestMetric(protoRW2, "sps")},
		{metricInfo{"ingest_rw2_p50_ms", "RW 2.0 request latency p50, ms", false}, ingestMetric(protoRW2, "p50")},
		{metricInfo{"ingest_rw2_p99_ms", "RW 2.0 request latency p99, ms", false}, ingestMetric(protoRW2, "p99")},
		{metricInfo{"peak_rss_mib", "Peak RSS (VmHWM) while ingesting RW 1.0 + flush, MiB", false}, func(r *SystemResult) (float64, bool) { return positive(float64(r.PeakRSSBytes) / (1 << 20)) }},
		{metricInfo{"compacted_alloc_bytes_per_sample", "Disk after flush/compaction, bytes/sample (allocated, du)", false}, func(r *SystemResult) (float64, bool) { return positive(r.Compacted.AllocPerSample) }},
		{metricInfo{"compacted_apparent_bytes_per_sample", "Disk after flush/compaction, bytes/sample (apparent)", false}, func(r *SystemResult) (float64, bool) { return positive(r.Compacted.ApparentPerSample) }},
		{metricInfo{"data_dir_alloc_bytes_per_sample", "Whole data dir after stop, bytes/sample (allocated)", false}, func(r *SystemResult) (float64, bool) { return positive(r.DataDir.AllocPerSample) }},
	}
	for i, n := range readNames {
		ms = append(ms, metric{metricInfo{fmt.Sprintf("read_%d_p50_ms", i), "Read " + n + ", p50 ms", false}, readMetric(i)})
	}
	ms = append(ms, metric{metricInfo{"restart_ready_s", "Restart to ready after stop, s", false}, func(r *SystemResult) (float64, bool) { return positive(r.RestartSec) }})
	return ms
}

// buildReport fills ratios: peer value / acta-remote value for each metric.
func buildReport(rep *Report, results []*SystemResult) {
	rep.Systems = results
	var names []string
	if len(results) > 0 {
		for _, q := range results[0].Reads {
			names = append(names, q.Query)
		}
	}
	ms := metrics(names)
	rep.Metrics = nil
	for _, m := range ms {
		rep.Metrics = append(rep.Metrics, m.metricInfo)
	}
	rep.Ratios = map[string]map[string]float64{}
	acta := find(results, sysActa)
	var bad []string
	for _, r := range results {
		if !r.Verify.OK {
			bad = append(bad, r.Name)
		}
		if acta == nil || r == acta {
			continue
		}
		rep.Ratios[r.Name] = map[string]float64{}
		for _, m := range ms {
			a, ok1 := m.get(acta)
			p, ok2 := m.get(r)
			if ok1 && ok2 && a > 0 {
				rep.Ratios[r.Name][m.Key] = p / a
			}
		}
	}
	rep.Conclusion = "every system read back what was generated"
	if len(bad) > 0 {
		rep.Conclusion = "FAILED for " + strings.Join(bad, ", ")
	}
}

func find(rs []*SystemResult, name string) *SystemResult {
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// writeMarkdown prints one row per metric, one column per system and, for
// each peer, its ratio to acta-remote with an arrow saying who is ahead.
func writeMarkdown(w io.Writer, rep *Report) {
	var names []string
	if len(rep.Systems) > 0 {
		for _, q := range rep.Systems[0].Reads {
			names = append(names, q.Query)
		}
	}
	ms := metrics(names)
	acta := find(rep.Systems, sysActa)
	fmt.Fprintf(w, "| Metric |")
	for _, r := range rep.Systems {
		fmt.Fprintf(w, " %s |", r.Name)
		if acta != nil && r != acta {
			fmt.Fprintf(w, " %s ÷ acta |", r.Name)
		}
	}
	fmt.Fprintf(w, "\n|---|")
	for _, r := range rep.Systems {
		fmt.Fprintf(w, "---:|")
		if acta != nil && r != acta {
			fmt.Fprintf(w, "---:|")
		}
	}
	fmt.Fprintln(w)
	for _, m := range ms {
		fmt.Fprintf(w, "| %s |", m.Label)
		for _, r := range rep.Systems {
			v, ok := m.get(r)
			if ok {
				fmt.Fprintf(w, " %s |", fmtNum(v))
			} else {
				fmt.Fprintf(w, " — |")
			}
			if acta != nil && r != acta {
				ratio, ok := rep.Ratios[r.Name][m.Key]
				if !ok {
					fmt.Fprintf(w, " — |")
					continue
				}
				better := ratio < 1 // the peer is better where lower is better
				if m.HigherBetter {
					better = ratio > 1
				}
				mark := "acta ahead"
				if better {
					mark = "peer ahead"
				}
				fmt.Fprintf(w, " %.2f× (%s) |", ratio, mark)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| Correctness (series checked, mismatched, max rel. error) |")
	for _, r := range rep.Systems {
		v := r.Verify
		fmt.Fprintf(w, " %d, %d, %.2g |", v.Series, v.Mismatches, v.MaxRelErr)
		if acta != nil && r != acta {
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
