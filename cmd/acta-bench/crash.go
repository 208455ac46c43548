package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The kill -9 scenario: a full head, a crash, and the time until the
// restarted server answers a read of one series with all of it. The data
// (CrashSeries × CrashSamples, CrashInterval apart, ending now) spans less
// than the 2 h Prometheus keeps in its head before it cuts a block, and
// acta-remote runs with limits that flush nothing (actaCrashSystem), so
// both restart from their WAL alone: Prometheus replays it (and its
// memory-mapped head chunks), acta-remote its WAL into the head.

// CrashResult is one system's restart after kill -9.
type CrashResult struct {
	Series    int     `json:"series"`
	Samples   int64   `json:"samples"`
	IngestSec float64 `json:"ingest_s"`
	// ReadySec is from the exec of the restart to its ready probe's 200;
	// QueryableSec to the first read of the chosen series that returned
	// every sample it was sent, bit for bit.
	ReadySec     float64      `json:"ready_s"`
	QueryableSec float64      `json:"queryable_s"`
	Verify       VerifyResult `json:"verify"`
}

// vmCrashWait is how long VictoriaMetrics is left after the last request
// before the kill. It keeps what it ingested in memory and writes it to
// disk every few seconds (-inmemoryDataFlushInterval, 5 s, after the
// pending rows are turned into in-memory parts), losing the rest on a
// crash by design; killed 6 s after the last request it came back empty
// here, 15 s after with everything. acta-remote (an fsync before every
// 2xx) and Prometheus (its WAL written before every 2xx) are killed at
// once: a crash any time after the 2xx must lose nothing.
const vmCrashWait = 15 * time.Second

// crashGen is the generator config of the kill -9 data set.
func crashGen(o Options) GenConfig {
	g := o.Gen
	g.Series = o.CrashSeries
	g.Interval = o.CrashInterval
	g.Duration = time.Duration(o.CrashSamples) * o.CrashInterval
	g.Start = time.Now().Add(-g.Duration).UnixMilli()
	return g
}

// crashData builds the kill -9 data set and its RW 1.0 load, with the
// harness's shards kept within 10 simulated minutes of each other (inside
// Prometheus's head's appendable window).
func crashData(o Options) (*Dataset, *Load, error) {
	d, err := NewDataset(crashGen(o))
	if err != nil {
		return nil, nil, fmt.Errorf("kill -9 data: %w", err)
	}
	lc := o.Load
	lc.RoundScrapes = max(1, int(10*time.Minute/o.CrashInterval))
	ld, err := BuildLoad(d, protoRW1, lc)
	if err != nil {
		return nil, nil, fmt.Errorf("kill -9 data: %w", err)
	}
	return d, ld, nil
}

// runCrash ingests ld into a fresh instance, kills it with SIGKILL,
// restarts it on the same data dir and times it to ready and to a full
// read of one series.
func runCrash(o Options, sys *system, d *Dataset, ld *Load) (CrashResult, error) {
	res := CrashResult{Series: d.NumSeries(), Samples: ld.Samples}
	in, err := startFresh(o, sys, sys.name+"-kill9")
	if err != nil {
		return res, err
	}
	defer in.close()
	ing, err := in.ingestAll(ld)
	res.IngestSec = ing.ElapsedSec
	if err != nil {
		return res, err
	}
	time.Sleep(sys.crashWait)
	if err := in.p.crash(); err != nil {
		return res, err
	}

	idx := rand.New(rand.NewPCG(o.Gen.Seed, 0x9)).IntN(d.NumSeries())
	t0 := time.Now()
	p2, base, err := sys.start(in.dataDir, in.logPath)
	if err != nil {
		return res, err
	}
	defer p2.kill()
	if _, err := p2.waitReady(base+sys.readyPath, 10*time.Minute); err != nil {
		return res, err
	}
	res.ReadySec = time.Since(t0).Seconds()
	rd := sys.reader(in.client, base)
	for {
		res.Verify = verify(d, rd, []int{idx}, tolerance(o, sys))
		if res.Verify.OK {
			break
		}
		if time.Since(t0) > time.Duration(res.ReadySec*float64(time.Second))+time.Minute {
			return res, fmt.Errorf("a minute after the restart was ready, series %d still did not read back whole: %s", idx, res.Verify.FirstMismatch)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.QueryableSec = time.Since(t0).Seconds()
	return res, nil
}
