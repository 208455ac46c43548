package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// GenConfig fixes a data set completely: the same config always yields the
// same label sets, timestamps and values, so every system receives identical
// bytes and any series can be regenerated later to check what was read back.
type GenConfig struct {
	Seed     uint64
	Series   int           // exact number of series
	Start    int64         // ms; first nominal scrape
	Duration time.Duration // simulated span; Duration/Interval scrapes
	Interval time.Duration // nominal scrape interval (15 s)
	JitterMs int64         // each scrape lands within ±JitterMs of its slot
	// RestartEvery is the mean time between restarts of one target; a
	// restart resets its counters to zero, as a process restart does.
	RestartEvery time.Duration
}

// Sample is one generated point.
type Sample struct {
	T int64
	V float64
}

// Dataset is a generated set of targets and their series. Series are
// numbered 0..Series-1 in target order; a target's series are contiguous.
type Dataset struct {
	cfg     GenConfig
	targets []*target
	labels  []labels.Labels // by series index
	types   []metricType    // by series index, for RW 2.0 metadata
	kinds   []valueKind     // by series index: its shape
	owner   []int32         // series index -> target index
}

// NewDataset builds the targets for cfg. Node-exporter-like and
// Kubernetes-pod-like targets are mixed (about one node per three pods, as
// in a cluster where every node also runs a few pods), and the last target
// is cut so the series count is exact.
func NewDataset(cfg GenConfig) (*Dataset, error) {
	if cfg.Series <= 0 || cfg.Interval <= 0 || cfg.Duration < cfg.Interval {
		return nil, fmt.Errorf("cannot generate %d series over %s at %s intervals", cfg.Series, cfg.Duration, cfg.Interval)
	}
	if cfg.JitterMs < 0 || 2*cfg.JitterMs >= cfg.Interval.Milliseconds() {
		return nil, fmt.Errorf("jitter ±%d ms must be under half the %s interval", cfg.JitterMs, cfg.Interval)
	}
	d := &Dataset{cfg: cfg}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	for len(d.labels) < cfg.Series {
		ti := len(d.targets)
		var t *target
		if ti%4 == 0 {
			t = newNodeTarget(rng, ti)
		} else {
			t = newPodTarget(rng, ti)
		}
		t.seed = rng.Uint64()
		// The phase keeps every jittered scrape inside its own interval slot:
		// timestamps stay in [Start, End) and strictly increasing.
		t.phase = cfg.JitterMs + rng.Int64N(cfg.Interval.Milliseconds()-2*cfg.JitterMs)
		t.first = len(d.labels)
		for gi := range t.groups {
			g := &t.groups[gi]
			g.seed = rng.Uint64()
			for _, ls := range g.series {
				if len(d.labels) == cfg.Series {
					break
				}
				d.labels = append(d.labels, ls)
				d.types = append(d.types, g.typ)
				d.kinds = append(d.kinds, g.kind)
				d.owner = append(d.owner, int32(ti))
			}
		}
		t.count = len(d.labels) - t.first
		d.targets = append(d.targets, t)
	}
	return d, nil
}

// Scrapes is the number of scrapes of every target.
func (d *Dataset) Scrapes() int { return int(d.cfg.Duration / d.cfg.Interval) }

// Samples is the total number of samples in the data set.
func (d *Dataset) Samples() int64 { return int64(d.Scrapes()) * int64(len(d.labels)) }

// End is one interval after the last nominal scrape: every timestamp is
// below it.
func (d *Dataset) End() int64 {
	return d.cfg.Start + int64(d.Scrapes())*d.cfg.Interval.Milliseconds()
}

// Labels returns series i's label set.
func (d *Dataset) Labels(i int) labels.Labels { return d.labels[i] }

// NumSeries is the number of series.
func (d *Dataset) NumSeries() int { return len(d.labels) }

// Walk calls fn for every scrape of every target in time order (scrape k of
// all targets before scrape k+1), with the series index of the target's
// first series and the values of its series. vals is reused between calls.
func (d *Dataset) Walk(fn func(k, target int, ts int64, first int, vals []float64)) {
	states := make([]*targetState, len(d.targets))
	for i, t := range d.targets {
		states[i] = newTargetState(d.cfg, t)
	}
	for k := range d.Scrapes() {
		for i, t := range d.targets {
			ts, vals := states[i].scrape(k)
			fn(k, i, ts, t.first, vals[:t.count])
		}
	}
}

// SeriesSamples regenerates series i alone: the same samples Walk produced.
func (d *Dataset) SeriesSamples(i int) []Sample {
	ti := d.owner[i]
	t := d.targets[ti]
	st := newTargetState(d.cfg, t)
	out := make([]Sample, 0, d.Scrapes())
	for k := range d.Scrapes() {
		ts, vals := st.scrape(k)
		out = append(out, Sample{T: ts, V: vals[i-t.first]})
	}
	return out
}

// targetState is a target's position in its value streams. Each target has
// its own random streams (one for timing and restarts, one per group), so a
// target regenerated alone yields exactly what it yielded in a full walk.
type targetState struct {
	cfg    GenConfig
	t      *target
	rng    *rand.Rand
	groups []groupState
	vals   []float64
}

func newTargetState(cfg GenConfig, t *target) *targetState {
	st := &targetState{cfg: cfg, t: t, rng: rand.New(rand.NewPCG(t.seed, 1))}
	for i := range t.groups {
		st.groups = append(st.groups, newGroupState(&t.groups[i]))
	}
	return st
}

// scrape advances to scrape k (called with k = 0, 1, 2, ...) and returns its
// timestamp and every series value of the target.
func (st *targetState) scrape(k int) (int64, []float64) {
	iv := st.cfg.Interval.Milliseconds()
	jitter := int64(0)
	if st.cfg.JitterMs > 0 {
		jitter = st.rng.Int64N(2*st.cfg.JitterMs+1) - st.cfg.JitterMs
	}
	ts := st.cfg.Start + int64(k)*iv + st.t.phase + jitter
	restart := false
	if k > 0 && st.cfg.RestartEvery > 0 {
		p := float64(iv) / float64(st.cfg.RestartEvery.Milliseconds())
		restart = st.rng.Float64() < p*st.t.restartWeight
	}
	st.vals = st.vals[:0]
	for i := range st.groups {
		st.vals = st.groups[i].step(st.vals, k, ts, restart)
	}
	return ts, st.vals
}
