package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
)

// SettleResult is what acta-remote's background maintenance did after an
// ingest, until a pass found nothing left to merge or compact.
type SettleResult struct {
	Seconds       float64 `json:"seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`   // the server's user+system CPU meanwhile
	InputBytes    float64 `json:"input_bytes"`   // allocated bytes of the files compacted or merged
	WrittenBytes  float64 `json:"written_bytes"` // apparent bytes they wrote
	Compactions   float64 `json:"compactions"`   // files compacted
	Merges        float64 `json:"merges"`        // tier merges
	CPUSecPerGiB  float64 `json:"cpu_s_per_gib"` // CPUSeconds per GiB of InputBytes
	ProbeBusyP99  float64 `json:"probe_busy_p99_ms,omitempty"`
	ProbeIdleP99  float64 `json:"probe_idle_p99_ms,omitempty"`
	ProbeBusyReqs int     `json:"probe_busy_requests,omitempty"`
	ProbeIdleReqs int     `json:"probe_idle_requests,omitempty"`
}

// scrape reads the families of base/metrics as name -> sum over every
// series whose labels include want (label=value pairs; none: all).
func scrape(c *http.Client, base string) (map[string]map[string]float64, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	out := map[string]map[string]float64{}
	for name, f := range fams {
		m := map[string]float64{}
		for _, mt := range f.Metric {
			var key []string
			for _, l := range mt.Label {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			v := 0.0
			switch {
			case mt.Counter != nil:
				v = mt.Counter.GetValue()
			case mt.Gauge != nil:
				v = mt.Gauge.GetValue()
			case mt.Untyped != nil:
				v = mt.Untyped.GetValue()
			}
			m[strings.Join(key, ",")] += v
		}
		out[name] = m
	}
	return out, nil
}

// sumWhere adds the values of family name whose label key contains every
// pair in want.
func sumWhere(ms map[string]map[string]float64, name string, want ...string) float64 {
	total := 0.0
	for key, v := range ms[name] {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(","+key+",", ","+w+",")
		}
		if ok {
			total += v
		}
	}
	return total
}

// procCPU is a process's user+system CPU time in seconds (/proc/pid/stat).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// settleActa waits until acta-remote's maintenance has nothing left to do
// (a pass that ended after another did no compaction and no merge), with
// a probe load of fresh samples on series of its own running meanwhile
// (busy) and for as long again afterwards (idle): the append latency
// while merges run against without them.
func settleActa(c *http.Client, base string, p *proc, probe bool, timeout time.Duration) (SettleResult, error) {
	var res SettleResult
	work := func(ms map[string]map[string]float64) float64 {
		return sumWhere(ms, "acta_rotation_compactions_total", "result=done") + sumWhere(ms, "acta_rotation_merges_total", "result=done")
	}
	before, err := scrape(c, base)
	if err != nil {
		return res, err
	}
	cpu0, _ := procCPU(p.cmd.Process.Pid)
	start := time.Now()
	var pr *prober
	if probe {
		pr = startProbe(c, base)
	}
	type pass struct{ end, work float64 }
	var passes []pass
	var last map[string]map[string]float64
	for {
		if time.Since(start) > timeout {
			if pr != nil {
				pr.stop()
			}
			return res, fmt.Errorf("maintenance still working after %s", timeout)
		}
		ms, err := scrape(c, base)
		if err != nil {
			return res, err
		}
		last = ms
		lr := sumWhere(ms, "acta_rotation_last_run_timestamp_seconds")
		if n := len(passes); n == 0 || passes[n-1].end != lr {
			passes = append(passes, pass{lr, work(ms)})
		}
		// Two passes seen since the wait began, the later one idle.
		if n := len(passes); n >= 3 && passes[n-1].work == passes[n-2].work {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.Seconds = time.Since(start).Seconds()
	cpu1, _ := procCPU(p.cmd.Process.Pid)
	res.CPUSeconds = cpu1 - cpu0
	res.InputBytes = sumWhere(last, "acta_rotation_compaction_input_bytes_total") - sumWhere(before, "acta_rotation_compaction_input_bytes_total")
	res.WrittenBytes = sumWhere(last, "acta_rotation_compaction_written_bytes_total") - sumWhere(before, "acta_rotation_compaction_written_bytes_total")
	res.Compactions = sumWhere(last, "acta_rotation_compactions_total", "result=done") - sumWhere(before, "acta_rotation_compactions_total", "result=done")
	res.Merges = sumWhere(last, "acta_rotation_merges_total", "result=done") - sumWhere(before, "acta_rotation_merges_total", "result=done")
	if res.InputBytes > 0 {
		res.CPUSecPerGiB = res.CPUSeconds / (res.InputBytes / (1 << 30))
	}
	if pr != nil {
		busy := pr.cut()
		time.Sleep(max(time.Duration(res.Seconds*float64(time.Second)), 10*time.Second))
		idle := pr.cut()
		pr.stop()
		res.ProbeBusyReqs, res.ProbeIdleReqs = len(busy), len(idle)
		res.ProbeBusyP99, res.ProbeIdleP99 = quantileMs(busy, 0.99), quantileMs(idle, 0.99)
	}
	return res, nil
}

// prober sends one small RW 1.0 request every 100 ms: one fresh sample for
// each of 20 series of its own (probe_series labels, timestamps now), the
// latency of a live Prometheus's appends.
type prober struct {
	mu   sync.Mutex
	lats []time.Duration
	done chan struct{}
	wg   sync.WaitGroup
}

func startProbe(c *http.Client, base string) *prober {
	p := &prober{done: make(chan struct{})}
	r := rand.New(rand.NewPCG(9, 9))
	p.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			now := time.Now().UnixMilli()
			var req prompb.WriteRequest
			for i := range 20 {
				req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
					Labels:  []prompb.Label{{Name: "__name__", Value: "acta_bench_probe"}, {Name: "series", Value: strconv.Itoa(i)}},
					Samples: []prompb.Sample{{Timestamp: now, Value: float64(r.IntN(1000))}},
				})
			}
			raw, _ := req.Marshal()
			as, err := post(c, base+"/api/v1/write", protoRW1, Body{Data: snappy.Encode(nil, raw), Samples: 20})
			if err != nil || len(as) == 0 {
				continue
			}
			p.mu.Lock()
			p.lats = append(p.lats, as[len(as)-1].latency)
			p.mu.Unlock()
		}
	})
	return p
}

// cut returns the latencies since the last cut.
func (p *prober) cut() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.lats
	p.lats = nil
	return out
}

func (p *prober) stop() {
	close(p.done)
	p.wg.Wait()
}
