package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// valueKind is how a series' value moves from scrape to scrape. The kinds
// mirror what exporters actually expose, because compression depends on it:
// integer counters and page-sized gauges compress far better than
// full-precision floats, and real data is a mix.
type valueKind uint8

const (
	kindConst      valueKind = iota // info metrics, sizes, up
	kindCounterInt                  // integer increments (bytes, packets, requests); reset on restart
	kindCounterDec                  // decimal increments (CPU seconds with 2 places); reset on restart
	kindGaugeInt                    // random walk in multiples of quant (memory pages, fds)
	kindGaugeDec                    // mean-reverting walk rounded to dec places (load averages)
	kindGaugeFloat                  // full-precision noise (scrape_duration_seconds)
	kindClock                       // the exporter's own clock in float seconds (node_time_seconds)
	kindStartTime                   // process_start_time_seconds: constant until a restart
	kindHistogram                   // classic histogram: cumulative buckets, _sum, _count
)

// groupState holds a group's values between scrapes. Counters are kept as
// integers (in units of quant or 10^-dec) so their float values are exactly
// what an exporter printing decimals would produce, with no drift.
type groupState struct {
	g      *group
	rng    *rand.Rand
	units  []int64
	level  []float64
	sum    float64
	start  float64
	counts []int64 // histogram scratch: observations per bucket this scrape
}

func newGroupState(g *group) groupState {
	st := groupState{g: g, rng: rand.New(rand.NewPCG(g.seed, 2)), units: make([]int64, len(g.series)), level: slices.Clone(g.base)}
	for i, b := range g.base {
		switch g.kind {
		case kindCounterInt:
			st.units[i] = int64(b / max(g.quant, 1))
		case kindCounterDec:
			st.units[i] = int64(b * math.Pow10(g.dec))
		case kindGaugeInt:
			st.level[i] = math.Round(b/g.quant) * g.quant
		}
	}
	if g.kind == kindHistogram {
		st.counts = make([]int64, len(g.bounds)+1)
	}
	return st
}

// increment draws a counter increment with the given mean: steady for busy
// counters (CPU idle time moves almost linearly), bursty and often zero for
// rare events (5xx responses), as real counters behave.
func (st *groupState) increment(mean float64) float64 {
	if mean >= 5 {
		return mean * (0.7 + 0.6*st.rng.Float64())
	}
	return mean * st.rng.ExpFloat64()
}

// step appends the group's values at scrape k (timestamp ts) to dst.
func (st *groupState) step(dst []float64, k int, ts int64, restart bool) []float64 {
	g := st.g
	switch g.kind {
	case kindConst:
		return append(dst, g.base...)
	case kindClock:
		// The exporter reads its clock a little after the scrape starts.
		return append(dst, (float64(ts)+st.rng.Float64())/1000)
	case kindStartTime:
		if k == 0 {
			st.start = float64(ts/1000 - st.rng.Int64N(7*86400))
		}
		if restart {
			st.start = float64(ts / 1000)
		}
		return append(dst, st.start) // whole seconds, as most exporters report it
	case kindCounterInt:
		q := max(g.quant, 1)
		for i := range st.units {
			if restart {
				st.units[i] = 0
			}
			st.units[i] += int64(st.increment(g.rate[i])/q + 0.5)
			dst = append(dst, float64(st.units[i])*q)
		}
		return dst
	case kindCounterDec:
		scale := math.Pow10(g.dec)
		for i := range st.units {
			if restart {
				st.units[i] = 0
			}
			st.units[i] += int64(st.increment(g.rate[i])*scale + 0.5)
			dst = append(dst, float64(st.units[i])/scale)
		}
		return dst
	case kindGaugeInt:
		for i := range st.level {
			st.level[i] += g.quant * math.Round(st.rng.NormFloat64()*g.rate[i])
			st.level[i] = max(st.level[i], g.quant)
			dst = append(dst, st.level[i])
		}
		return dst
	case kindGaugeDec:
		scale := math.Pow10(g.dec)
		for i := range st.level {
			st.level[i] += (g.base[i]-st.level[i])*0.1 + st.rng.NormFloat64()*g.rate[i]
			st.level[i] = max(st.level[i], 0)
			dst = append(dst, math.Round(st.level[i]*scale)/scale)
		}
		return dst
	case kindGaugeFloat:
		for i := range g.base {
			dst = append(dst, g.base[i]*(0.7+0.6*st.rng.Float64()))
		}
		return dst
	case kindHistogram:
		return st.histogramStep(dst, restart)
	}
	panic("BUG: unknown value kind")
}

// histogramStep observes this scrape's requests (log-normal latencies around
// 50 ms) and appends cumulative bucket counts, _sum and _count, in the order
// the group's series were created.
func (st *groupState) histogramStep(dst []float64, restart bool) []float64 {
	g := st.g
	nb := len(g.bounds) + 1 // buckets including +Inf
	if restart {
		clear(st.units)
		st.sum = 0
	}
	clear(st.counts)
	n := int(st.increment(g.rate[0]) + 0.5)
	for range n {
		lat := math.Exp(math.Log(0.05) + st.rng.NormFloat64())
		st.counts[sort.SearchFloat64s(g.bounds, lat)]++
		st.sum += lat
	}
	var cum int64
	for j := range nb {
		cum += st.counts[j]
		st.units[j] += cum
		dst = append(dst, float64(st.units[j]))
	}
	st.units[nb] = 0 // _sum is kept as a float in st.sum
	st.units[nb+1] += int64(n)
	return append(dst, st.sum, float64(st.units[nb+1]))
}
