package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// The memory scenario: how much resident memory a system grows by per
// active series. Each size gets its own live-shaped data set (the
// generator's targets, Samples scrapes 15 s apart ending when the size's
// turn comes) and every system a fresh instance on a fresh data dir: its
// RSS once ready and idle, then the data as live scrapes arrive (round by
// round: every series' scrape k, then k+1, over Remote-Write 1.0), then
// its RSS again once it has had MemorySettle to settle after the last
// request. No peer offers a forced GC, so all of them just wait the same.

// MemoryResult is one system at one size of the memory scenario.
type MemoryResult struct {
	Series       int   `json:"series"`
	Samples      int   `json:"samples_per_series"`
	IdleRSSBytes int64 `json:"idle_rss_bytes"` // VmRSS, ready and idle, before the ingest
	RSSBytes     int64 `json:"rss_bytes"`      // VmRSS, settled after the ingest
	PeakRSSBytes int64 `json:"peak_rss_bytes"` // VmHWM at the end
	// BytesPerSeries is (RSSBytes − IdleRSSBytes) / Series.
	BytesPerSeries float64 `json:"bytes_per_series"`
	IngestSec      float64 `json:"ingest_s"`
	// Verify reads a few series back after the RSS was taken (and after
	// VictoriaMetrics's force_flush: what it buffers is not searchable for
	// a few seconds).
	Verify VerifyResult `json:"verify"`
}

// memoryIdle is how long a fresh instance is left alone after it is ready
// before its idle RSS is taken (at most Options.MemorySettle).
const memoryIdle = 5 * time.Second

// memoryVerify is how many series of each size are read back.
const memoryVerify = 5

// parseSizes parses a comma-separated list of series counts ("" is none).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("series count %q: want a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// memoryGen is the generator config of one size: o.Gen's seed, interval,
// jitter and restarts, MemorySamples scrapes ending now.
func memoryGen(o Options, series int) GenConfig {
	g := o.Gen
	g.Series = series
	g.Duration = time.Duration(o.MemorySamples) * g.Interval
	g.Start = time.Now().Add(-g.Duration).UnixMilli()
	return g
}

// runMemory runs every size of the memory scenario on every system that
// takes part (acta-remote-live, a disk layout, does not), starting with
// system first, and adds the results (or the error) to results.
func runMemory(o Options, systems []*system, results []*SystemResult, first int) {
	for _, n := range o.MemorySeries {
		d, err := NewDataset(memoryGen(o, n))
		var ld *Load
		if err == nil {
			ld, err = BuildLoad(d, protoRW1, LoadConfig{BatchSize: o.Load.BatchSize, Shards: o.Load.Shards, RoundScrapes: 1})
		}
		if err != nil {
			for _, r := range results {
				addErr(r, fmt.Sprintf("memory %d: %v", n, err))
			}
			return
		}
		o.Logf("memory: %d series × %d samples = %d samples, %.1f MiB on the wire", d.NumSeries(), d.Scrapes(), ld.Samples, float64(ld.Bytes)/(1<<20))
		vrng := rand.New(rand.NewPCG(o.Gen.Seed, uint64(n)))
		vidx := vrng.Perm(n)[:min(memoryVerify, n)]
		for j := range systems {
			i := (first + j) % len(systems)
			sys := systems[i]
			if sys.name == sysActaLive {
				continue
			}
			mr, err := memoryRun(o, sys, d, ld, vidx)
			if err != nil {
				addErr(results[i], fmt.Sprintf("memory %d: %v", n, err))
				continue
			}
			results[i].Memory = append(results[i].Memory, mr)
			o.Logf("%s memory %d series: %.0f bytes/series (RSS %.0f → %.0f MiB, peak %.0f MiB; ingest %.1f s)",
				sys.name, n, mr.BytesPerSeries, float64(mr.IdleRSSBytes)/(1<<20), float64(mr.RSSBytes)/(1<<20),
				float64(mr.PeakRSSBytes)/(1<<20), mr.IngestSec)
		}
	}
}

// memoryRun measures one system at one size.
func memoryRun(o Options, sys *system, d *Dataset, ld *Load, vidx []int) (MemoryResult, error) {
	res := MemoryResult{Series: d.NumSeries(), Samples: d.Scrapes()}
	in, err := startFresh(o, sys, fmt.Sprintf("%s-memory-%d", sys.name, d.NumSeries()))
	if err != nil {
		return res, err
	}
	defer in.close()
	time.Sleep(min(memoryIdle, o.MemorySettle))
	if res.IdleRSSBytes, err = in.p.rss(); err != nil {
		return res, err
	}
	ing, err := in.ingestAll(ld)
	res.IngestSec = ing.ElapsedSec
	if err != nil {
		return res, err
	}
	time.Sleep(o.MemorySettle)
	if res.RSSBytes, err = in.p.rss(); err != nil {
		return res, err
	}
	if res.PeakRSSBytes, err = in.p.peakRSS(); err != nil {
		return res, err
	}
	res.BytesPerSeries = float64(res.RSSBytes-res.IdleRSSBytes) / float64(res.Series)
	if sys.searchable != nil {
		if err := sys.searchable(in.client, in.base); err != nil {
			return res, err
		}
	}
	res.Verify = verify(d, sys.reader(in.client, in.base), vidx, tolerance(o, sys))
	if !res.Verify.OK {
		return res, fmt.Errorf("read back %d series: %d mismatched: %s", res.Verify.Series, res.Verify.Mismatches, res.Verify.FirstMismatch)
	}
	return res, nil
}

// addErr records an error of one part of a system's run without hiding
// an earlier one.
func addErr(r *SystemResult, msg string) {
	if r.Err == "" {
		r.Err = msg
		return
	}
	r.Err += "; " + msg
}
