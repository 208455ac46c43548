package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Options is one harness run.
type Options struct {
	Gen          GenConfig
	Load         LoadConfig
	Systems      []string // sysActa, sysActaLive, sysProm, sysVM
	RW2          bool     // also time Remote-Write 2.0 where supported
	Warmup       float64  // fraction of samples left out of the sustained rate
	VerifySeries int
	ReadReps     int
	VMTolerance  float64
	GOMAXPROCS   int
	Repo         string
	WorkDir      string // data dirs and logs
	ActaConfig   string // optional acta-remote config file
	ActaWorktree bool   // build acta-remote from the working tree, not HEAD
	Keep         bool   // keep data dirs
	Runs         int    // repetitions of every system; the report gives medians
	// Settle waits after the ingest until acta-remote's maintenance has
	// merged and compacted everything sealed, then again after a restart
	// (the files the stop's flush sealed), before the disk is measured.
	Settle        bool
	SettleTimeout time.Duration
	// PerShape also ingests each shape group alone into a fresh instance
	// of every system and measures its disk cost (shapes.go).
	PerShape bool
	// SkipMain leaves out the main run (ingest of Gen, disk, reads,
	// verify): only the scenarios below run.
	SkipMain bool
	// MemorySeries are the sizes of the memory scenario (memory.go), each
	// MemorySamples scrapes per series, RSS taken MemorySettle after the
	// last request; none: no memory scenario.
	MemorySeries  []int
	MemorySamples int
	MemorySettle  time.Duration
	// CrashSeries × CrashSamples at CrashInterval is the head of the kill
	// -9 scenario (crash.go); 0 series: none.
	CrashSeries   int
	CrashSamples  int
	CrashInterval time.Duration
	Logf          func(format string, args ...any)
}

// SystemResult is every figure of one system.
type SystemResult struct {
	Name         string                  `json:"name"`
	Version      string                  `json:"version"`
	Ingest       map[string]IngestResult `json:"ingest"`
	PeakRSSBytes int64                   `json:"peak_rss_bytes"` // VmHWM of the RW 1.0 ingest process, after flush
	FlushSec     float64                 `json:"flush_s"`
	StopSec      float64                 `json:"stop_s"`
	RestartSec   float64                 `json:"restart_ready_s"`
	// IdleSec is how long after that restart's ready the process kept
	// working in the background before the reads began (proc.waitIdle).
	IdleSec   float64      `json:"restart_idle_s"`
	Compacted DiskResult   `json:"disk_compacted"`
	DataDir   DiskResult   `json:"disk_data_dir"`
	Reads     []ReadResult `json:"reads"`
	Verify    VerifyResult `json:"verify"`
	// Crash is the restart after kill -9 with a full head (crash.go).
	Crash *CrashResult `json:"restart_kill9,omitempty"`
	// Memory is the memory scenario, one entry per size (memory.go).
	Memory []MemoryResult `json:"memory,omitempty"`
	// Settle is acta-remote's maintenance after the ingest and after the
	// restart (Options.Settle).
	Settle []SettleResult `json:"settle,omitempty"`
	// DiskWriteBytes is what the server processes of the RW 1.0 run wrote
	// to storage (/proc/pid/io), ingest to the disk measurement.
	DiskWriteBytes int64 `json:"disk_write_bytes"`
	// SeriesWriteBytes is what acta-remote wrote into series files:
	// flushes plus compactions and merges.
	SeriesWriteBytes float64 `json:"series_write_bytes,omitempty"`
	// Shapes is the disk cost of each shape group ingested alone.
	Shapes          map[string]DiskResult `json:"shapes,omitempty"`
	Notes           []string              `json:"notes,omitempty"`
	Err             string                `json:"error,omitempty"`
	samplesIngested int64
}

// DiskResult is a size on disk, allocated (du) and apparent.
type DiskResult struct {
	AllocBytes        int64   `json:"alloc_bytes"`
	ApparentBytes     int64   `json:"apparent_bytes"`
	AllocPerSample    float64 `json:"alloc_bytes_per_sample"`
	ApparentPerSample float64 `json:"apparent_bytes_per_sample"`
}

func diskResult(dir string, skip func(string) bool, samples int64) (DiskResult, error) {
	a, p, err := diskUsage(dir, skip)
	r := DiskResult{AllocBytes: a, ApparentBytes: p}
	if samples > 0 {
		r.AllocPerSample, r.ApparentPerSample = float64(a)/float64(samples), float64(p)/float64(samples)
	}
	return r, err
}

// Run generates the data, encodes it once per protocol, then runs the
// systems one after another (each alone on the machine) on the same bytes,
// o.Runs times. It returns the results by run, then by system.
func Run(o Options) ([][]*SystemResult, *Dataset, error) {
	logf := o.Logf
	var (
		d          *Dataset
		loads      = map[string]*Load{}
		shapeLoads []*Load
		plan       readPlan
		pplan      []promqlQuery
		vidx       []int
	)
	if !o.SkipMain {
		var err error
		if d, err = NewDataset(o.Gen); err != nil {
			return nil, nil, err
		}
		logf("data: %d series (%d targets) × %d scrapes = %d samples, %s → %s",
			d.NumSeries(), len(d.targets), d.Scrapes(), d.Samples(),
			time.UnixMilli(o.Gen.Start).UTC().Format(time.RFC3339), time.UnixMilli(d.End()).UTC().Format(time.RFC3339))
		protos := []string{protoRW1}
		if o.RW2 {
			protos = append(protos, protoRW2)
		}
		for _, p := range protos {
			t0 := time.Now()
			ld, err := BuildLoad(d, p, o.Load)
			if err != nil {
				return nil, nil, err
			}
			reqs := 0
			for _, r := range ld.Rounds {
				for _, s := range r {
					reqs += len(s)
				}
			}
			logf("encoded %s: %d requests, %.1f MiB snappy (%.1f bytes/sample on the wire) in %s",
				p, reqs, float64(ld.Bytes)/(1<<20), float64(ld.Bytes)/float64(ld.Samples), time.Since(t0).Round(time.Millisecond))
			loads[p] = ld
		}
		if o.PerShape {
			for g := range shapeGroups {
				ld, err := BuildLoadOf(d, protoRW1, o.Load, func(i int) bool { return inGroup(d, g, i) })
				if err != nil {
					return nil, nil, err
				}
				shapeLoads = append(shapeLoads, ld)
				logf("shape %s: %d series, %d samples", shapeGroups[g].name, groupSeries(d, g), ld.Samples)
			}
		}
		plan = planReads(d, o.Gen.Seed, o.ReadReps)
		pplan = planPromQL(d, o.Gen.Seed)
		for _, q := range pplan {
			logf("%s: %s over [%d, %d] ms, step %s", q.name, q.expr, q.start, q.end, q.step)
		}
		vrng := rand.New(rand.NewPCG(o.Gen.Seed, 0x7e51f1))
		vidx = vrng.Perm(d.NumSeries())[:min(o.VerifySeries, d.NumSeries())]
	}
	var (
		crashD  *Dataset
		crashLd *Load
	)
	if o.CrashSeries > 0 {
		var err error
		if crashD, crashLd, err = crashData(o); err != nil {
			return nil, d, err
		}
		logf("kill -9 data: %d series × %d samples at %s = %d samples (%s of data)",
			crashD.NumSeries(), crashD.Scrapes(), o.CrashInterval, crashLd.Samples, crashGen(o).Duration)
	}

	binDir := filepath.Join(o.WorkDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(binDir) // the acta-remote build: 30 MB per results directory otherwise
	var built actaBuild
	type entry struct {
		sys     *system
		version string
	}
	var systems []entry
	var bare []*system
	for _, name := range o.Systems {
		if o.SkipMain && name == sysActaLive {
			return nil, d, fmt.Errorf("%s (a disk layout) takes no part in the memory and kill -9 scenarios", name)
		}
		sys, version, err := makeSystem(o, name, binDir, &built)
		if err != nil {
			return nil, d, err
		}
		systems = append(systems, entry{sys, version})
		bare = append(bare, sys)
	}
	// Each run starts with the next system, so a noisy minute on a shared
	// machine does not always land on the same one.
	runs := make([][]*SystemResult, max(o.Runs, 1))
	for run := range runs {
		runs[run] = make([]*SystemResult, len(systems))
		for j := range systems {
			i := (run + j) % len(systems)
			e := systems[i]
			logf("run %d/%d: %s", run+1, len(runs), e.sys.name)
			r := &SystemResult{Name: e.sys.name, Ingest: map[string]IngestResult{}, Notes: e.sys.notes}
			if !o.SkipMain {
				r = runSystem(o, e.sys, d, loads, plan, pplan, vidx)
			}
			if r.Err == "" && len(shapeLoads) > 0 {
				r.Shapes = map[string]DiskResult{}
				for g, ld := range shapeLoads {
					dr, err := runShape(o, e.sys, shapeGroups[g].name, ld)
					if err != nil {
						r.Err = fmt.Sprintf("shape %s: %v", shapeGroups[g].name, err)
						break
					}
					r.Shapes[shapeGroups[g].name] = dr
					logf("%s shape %s: %.2f bytes/sample allocated, %.2f apparent", e.sys.name, shapeGroups[g].name, dr.AllocPerSample, dr.ApparentPerSample)
				}
			}
			if crashLd != nil && e.sys.name != sysActaLive {
				cs := e.sys
				if cs.crashSys != nil {
					cs = cs.crashSys
					r.Notes = append(slices.Clip(r.Notes), cs.notes...)
				}
				if cs.crashWait > 0 {
					r.Notes = append(slices.Clip(r.Notes), fmt.Sprintf("kill -9 scenario: killed %s after the last request, once what it holds in memory is on disk (it loses what it acknowledged in the seconds before a crash, by design); the others at once", cs.crashWait))
				}
				cr, err := runCrash(o, cs, crashD, crashLd)
				if err != nil {
					addErr(r, fmt.Sprintf("kill -9: %v", err))
				} else {
					r.Crash = &cr
					logf("%s: restart after kill -9 with %d samples: ready in %.2f s, one series read whole at %.2f s (ingest %.1f s)",
						e.sys.name, cr.Samples, cr.ReadySec, cr.QueryableSec, cr.IngestSec)
				}
			}
			r.Version = e.version
			runs[run][i] = r
		}
		if len(o.MemorySeries) > 0 {
			runMemory(o, bare, runs[run], run)
		}
		for _, r := range runs[run] {
			if o.SkipMain {
				// The correctness verdict is then that of the scenarios'
				// read-backs.
				for _, m := range r.Memory {
					mergeVerify(&r.Verify, m.Verify)
				}
				if r.Crash != nil {
					mergeVerify(&r.Verify, r.Crash.Verify)
				}
				r.Verify.OK = r.Verify.Series > 0 && r.Verify.Mismatches == 0 && r.Err == ""
			}
			if r.Err != "" {
				logf("%s: %s", r.Name, r.Err)
			}
		}
	}
	return runs, d, nil
}

// mergeVerify adds v's counts to dst.
func mergeVerify(dst *VerifyResult, v VerifyResult) {
	dst.Series += v.Series
	dst.Samples += v.Samples
	dst.Mismatches += v.Mismatches
	dst.Tolerance = max(dst.Tolerance, v.Tolerance)
	dst.MaxRelErr = max(dst.MaxRelErr, v.MaxRelErr)
	if dst.FirstMismatch == "" {
		dst.FirstMismatch = v.FirstMismatch
	}
}

// actaBuild is the acta-remote binary of a run, built once for both
// acta-remote variants.
type actaBuild struct{ bin, version string }

func makeSystem(o Options, name, binDir string, actaBuilt *actaBuild) (*system, string, error) {
	switch name {
	case sysActa, sysActaLive:
		if actaBuilt.bin == "" {
			bin, version, err := actaBinary(o.Repo, binDir, o.ActaWorktree)
			if err != nil {
				return nil, "", err
			}
			actaBuilt.bin, actaBuilt.version = bin, version
		}
		var s *system
		var err error
		if name == sysActa {
			s, err = actaSystem(actaBuilt.bin, o.WorkDir, o.ActaConfig, o.GOMAXPROCS)
			if err == nil && o.CrashSeries > 0 {
				s.crashSys, err = actaCrashSystem(actaBuilt.bin, o.WorkDir, o.CrashSamples, o.GOMAXPROCS)
			}
		} else {
			s, err = actaLiveSystem(actaBuilt.bin, o.WorkDir, o.Gen.Interval, o.GOMAXPROCS)
		}
		return s, actaBuilt.version, err
	case sysProm:
		bin, err := prometheusBinary(o.Repo, o.Logf)
		if err != nil {
			return nil, "", err
		}
		s, err := prometheusSystem(bin, o.WorkDir, o.GOMAXPROCS)
		return s, prometheusVersion, err
	case sysVM:
		bin, err := vmBinary(o.Repo, o.Logf)
		if err != nil {
			return nil, "", err
		}
		return vmSystem(bin, o.GOMAXPROCS), vmVersion, nil
	}
	return nil, "", fmt.Errorf("unknown system %q (want %s, %s, %s or %s)", name, sysActa, sysActaLive, sysProm, sysVM)
}

// runSystem measures one system. RW 1.0 goes to a fresh instance that is
// then flushed, stopped, measured on disk, restarted and read; RW 2.0 (if
// any) goes to a second fresh instance and is timed only.
func runSystem(o Options, sys *system, d *Dataset, loads map[string]*Load, plan readPlan, pplan []promqlQuery, vidx []int) *SystemResult {
	r := &SystemResult{Name: sys.name, Ingest: map[string]IngestResult{}, Notes: sys.notes}
	client := &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Load.Shards, DisableCompression: true},
	}
	defer client.CloseIdleConnections()
	for _, proto := range []string{protoRW1, protoRW2} {
		ld := loads[proto]
		if ld == nil || !contains(sys.protos, proto) {
			continue
		}
		dataDir := filepath.Join(o.WorkDir, sys.name+"-"+proto)
		os.RemoveAll(dataDir)
		logPath := filepath.Join(o.WorkDir, sys.name+"-"+proto+".log")
		if err := r.runProto(o, sys, client, d, ld, dataDir, logPath, plan, pplan, vidx); err != nil {
			r.Err = fmt.Sprintf("%s: %v (log: %s)", proto, err, logPath)
			return r
		}
		if !o.Keep {
			os.RemoveAll(dataDir)
		}
	}
	return r
}

func (r *SystemResult) runProto(o Options, sys *system, client *http.Client, d *Dataset, ld *Load, dataDir, logPath string, plan readPlan, pplan []promqlQuery, vidx []int) error {
	logf := o.Logf
	p, base, err := sys.start(dataDir, logPath)
	if err != nil {
		return err
	}
	defer p.kill()
	if _, err := p.waitReady(base+sys.readyPath, 2*time.Minute); err != nil {
		return err
	}
	logf("%s: ingesting %s (%d samples)", sys.name, ld.Proto, ld.Samples)
	ing := Ingest(client, base+"/api/v1/write", ld, o.Warmup)
	r.Ingest[ld.Proto] = ing
	logf("%s %s: %.0f samples/s sustained, p50 %.1f ms, p99 %.1f ms, %d retries, %d failed requests %s",
		sys.name, ld.Proto, ing.SamplesPerSec, ing.P50Ms, ing.P99Ms, ing.Retries, ing.Failed, ing.FirstError)
	if ld.Proto != protoRW1 {
		_, err := p.stop(5 * time.Minute)
		return err
	}
	r.samplesIngested = ing.Samples
	t0 := time.Now()
	compactDir, err := sys.flush(client, base, dataDir)
	if err != nil {
		return err
	}
	r.FlushSec = time.Since(t0).Seconds()
	if o.Settle && sys.settle {
		st, err := settleActa(client, base, p, true, o.SettleTimeout)
		if err != nil {
			return err
		}
		r.Settle = append(r.Settle, st)
		logf("%s: maintenance settled in %.1f s (%.0f compactions, %.0f merges, %.2f CPU s per GiB in); append p99 %.1f ms while it ran, %.1f ms idle",
			sys.name, st.Seconds, st.Compactions, st.Merges, st.CPUSecPerGiB, st.ProbeBusyP99, st.ProbeIdleP99)
	}
	if r.PeakRSSBytes, err = p.peakRSS(); err != nil {
		return err
	}
	if sys.settle {
		if ms, err := scrape(client, base); err == nil {
			r.SeriesWriteBytes += sumWhere(ms, "acta_store_flushed_bytes_total") + sumWhere(ms, "acta_rotation_compaction_written_bytes_total")
		}
	}
	stopped, err := p.stop(10 * time.Minute)
	r.StopSec = stopped.Seconds()
	if err != nil {
		return err
	}
	r.DiskWriteBytes += p.writtenBytes()
	if o.Settle && sys.settle {
		wb, sb, st, err := restartSettle(o, sys, client, dataDir, logPath)
		if err != nil {
			return err
		}
		r.DiskWriteBytes += wb
		r.SeriesWriteBytes += sb
		r.Settle = append(r.Settle, st)
		logf("%s: after a restart, maintenance settled in %.1f s (%.0f compactions, %.0f merges)", sys.name, st.Seconds, st.Compactions, st.Merges)
	}
	// Sizes per generated sample: a system that dropped samples must not
	// look smaller for it (the correctness check reports the drop).
	n := d.Samples()
	if r.DataDir, err = diskResult(dataDir, func(rel string) bool { return rel == "snapshots" }, n); err != nil {
		return err
	}
	if compactDir == "" {
		r.Compacted, err = diskResult(dataDir, sys.compactSkip, n)
	} else {
		r.Compacted, err = diskResult(compactDir, nil, n)
	}
	if err != nil {
		return err
	}
	logf("%s: on disk %.2f bytes/sample compacted, %.2f data dir (allocated); peak RSS %.0f MiB",
		sys.name, r.Compacted.AllocPerSample, r.DataDir.AllocPerSample, float64(r.PeakRSSBytes)/(1<<20))

	p2, base, err := sys.start(dataDir, logPath)
	if err != nil {
		return err
	}
	defer p2.kill()
	ready, err := p2.waitReady(base+sys.readyPath, 10*time.Minute)
	if err != nil {
		return err
	}
	r.RestartSec = ready.Seconds()
	idle, err := p2.waitIdle(time.Minute)
	if err != nil {
		return err
	}
	r.IdleSec = idle.Seconds()
	logf("%s: ready after %.2f s, idle %.1f s later", sys.name, r.RestartSec, r.IdleSec)
	rd := sys.reader(client, base)
	r.Reads = plan.run(d, rd)
	r.Reads = append(r.Reads, runPromQL(client, base, pplan, o.ReadReps, sys.name == sysVM)...)
	for _, q := range r.Reads {
		if q.Reps == 0 && q.Err == "" {
			continue // not offered by this system
		}
		logf("%s: read %s: p50 %.1f ms (%d series, %d samples) %s", sys.name, q.Query, q.P50Ms, q.Series, q.Samples, q.Err)
	}
	r.Verify = verify(d, rd, vidx, tolerance(o, sys))
	logf("%s: verify %d series, %d samples: %d mismatched (max relative error %.3g) %s",
		sys.name, r.Verify.Series, r.Verify.Samples, r.Verify.Mismatches, r.Verify.MaxRelErr, r.Verify.FirstMismatch)
	_, err = p2.stop(5 * time.Minute)
	return err
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// restartSettle starts the system again on dataDir, waits for its
// maintenance to settle (the files its stop's flush sealed) and stops it.
// It returns what that instance wrote to disk and into series files.
func restartSettle(o Options, sys *system, client *http.Client, dataDir, logPath string) (int64, float64, SettleResult, error) {
	p, base, err := sys.start(dataDir, logPath)
	if err != nil {
		return 0, 0, SettleResult{}, err
	}
	defer p.kill()
	if _, err := p.waitReady(base+sys.readyPath, 10*time.Minute); err != nil {
		return 0, 0, SettleResult{}, err
	}
	st, err := settleActa(client, base, p, false, o.SettleTimeout)
	if err != nil {
		return 0, 0, st, err
	}
	var sb float64
	if ms, err := scrape(client, base); err == nil {
		sb = sumWhere(ms, "acta_store_flushed_bytes_total") + sumWhere(ms, "acta_rotation_compaction_written_bytes_total")
	}
	_, err = p.stop(5 * time.Minute)
	return p.writtenBytes(), sb, st, err
}

// runShape ingests one shape group's load into a fresh instance, makes it
// durable and compacted as the main run does, and measures the disk.
func runShape(o Options, sys *system, name string, ld *Load) (DiskResult, error) {
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Load.Shards, DisableCompression: true}}
	defer client.CloseIdleConnections()
	dataDir := filepath.Join(o.WorkDir, sys.name+"-shape-"+name)
	logPath := filepath.Join(o.WorkDir, sys.name+"-shape-"+name+".log")
	os.RemoveAll(dataDir)
	defer func() {
		if !o.Keep {
			os.RemoveAll(dataDir)
		}
	}()
	p, base, err := sys.start(dataDir, logPath)
	if err != nil {
		return DiskResult{}, err
	}
	defer p.kill()
	if _, err := p.waitReady(base+sys.readyPath, 2*time.Minute); err != nil {
		return DiskResult{}, err
	}
	ing := Ingest(client, base+"/api/v1/write", ld, o.Warmup)
	if ing.Failed > 0 {
		return DiskResult{}, fmt.Errorf("%d requests failed: %s", ing.Failed, ing.FirstError)
	}
	compactDir, err := sys.flush(client, base, dataDir)
	if err != nil {
		return DiskResult{}, err
	}
	if o.Settle && sys.settle {
		if _, err := settleActa(client, base, p, false, o.SettleTimeout); err != nil {
			return DiskResult{}, err
		}
	}
	if _, err := p.stop(10 * time.Minute); err != nil {
		return DiskResult{}, err
	}
	if o.Settle && sys.settle {
		if _, _, _, err := restartSettle(o, sys, client, dataDir, logPath); err != nil {
			return DiskResult{}, err
		}
	}
	if compactDir != "" {
		return diskResult(compactDir, nil, ld.Samples)
	}
	return diskResult(dataDir, sys.compactSkip, ld.Samples)
}
