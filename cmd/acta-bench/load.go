package main

import (
	"fmt"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Protocol names as used in flags and reports.
const (
	protoRW1 = "rw1"
	protoRW2 = "rw2"
)

// Body is one encoded, snappy-compressed remote-write request.
type Body struct {
	Data    []byte
	Samples int
}

// Load is a data set encoded once for one protocol, before any system is
// timed: every system then receives the same bytes, and the sender's own
// encoding cost stays out of the measurement. Rounds[r][s] holds shard s's
// requests for round r, in order.
//
// Shards play the part of Prometheus's remote-write shards: a series always
// goes to the same shard, so its samples arrive in order. Rounds keep the
// shards within RoundScrapes of each other in simulated time, as live
// shards are; without that a fast shard would run hours ahead and a TSDB
// head like Prometheus's (which only appends within an hour of its newest
// sample) would reject the slow shard's data as out of bounds.
type Load struct {
	Proto   string
	Rounds  [][][]Body
	Samples int64
	Bytes   int64 // compressed, as sent
}

// LoadConfig shapes the requests.
type LoadConfig struct {
	BatchSize    int // samples per request (Prometheus's max_samples_per_send)
	Shards       int // concurrent senders
	RoundScrapes int // scrapes per round
}

type entry struct {
	series int
	t      int64
	v      float64
}

// BuildLoad encodes d for proto: one sample per series entry, as
// Prometheus's queue manager sends live data.
func BuildLoad(d *Dataset, proto string, lc LoadConfig) (*Load, error) {
	return BuildLoadOf(d, proto, lc, nil)
}

// BuildLoadOf is BuildLoad of the series keep accepts (nil: all).
func BuildLoadOf(d *Dataset, proto string, lc LoadConfig, keep func(series int) bool) (*Load, error) {
	if lc.BatchSize <= 0 || lc.Shards <= 0 || lc.RoundScrapes <= 0 {
		return nil, fmt.Errorf("batch size, shards and round length must be positive, got %+v", lc)
	}
	var enc func([]entry) []byte
	switch proto {
	case protoRW1:
		enc = newRW1Encoder(d)
	case protoRW2:
		enc = newRW2Encoder(d)
	default:
		return nil, fmt.Errorf("unknown protocol %q (want %s or %s)", proto, protoRW1, protoRW2)
	}
	ld := &Load{Proto: proto}
	pending := make([][]entry, lc.Shards)
	round := make([][]Body, lc.Shards)
	flush := func(s int) {
		if len(pending[s]) == 0 {
			return
		}
		b := Body{Data: enc(pending[s]), Samples: len(pending[s])}
		round[s] = append(round[s], b)
		ld.Samples += int64(b.Samples)
		ld.Bytes += int64(len(b.Data))
		pending[s] = pending[s][:0]
	}
	endRound := func() {
		for s := range pending {
			flush(s)
		}
		ld.Rounds = append(ld.Rounds, round)
		round = make([][]Body, lc.Shards)
	}
	lastK := 0
	d.Walk(func(k, tgt int, ts int64, first int, vals []float64) {
		if k != lastK && k%lc.RoundScrapes == 0 {
			endRound()
		}
		lastK = k
		s := tgt % lc.Shards
		for i, v := range vals {
			if keep != nil && !keep(first+i) {
				continue
			}
			pending[s] = append(pending[s], entry{series: first + i, t: ts, v: v})
			if len(pending[s]) == lc.BatchSize {
				flush(s)
			}
		}
	})
	endRound()
	return ld, nil
}

// newRW1Encoder returns an encoder of prometheus.WriteRequest bodies. Label
// slices are built once per series and shared by every request.
func newRW1Encoder(d *Dataset) func([]entry) []byte {
	pbl := make([][]prompb.Label, d.NumSeries())
	for i := range pbl {
		d.Labels(i).Range(func(l labels.Label) {
			pbl[i] = append(pbl[i], prompb.Label{Name: l.Name, Value: l.Value})
		})
	}
	var (
		req     prompb.WriteRequest
		samples []prompb.Sample
		raw     []byte
	)
	return func(es []entry) []byte {
		req.Timeseries = req.Timeseries[:0]
		samples = samples[:0]
		for _, e := range es {
			samples = append(samples, prompb.Sample{Value: e.v, Timestamp: e.t})
		}
		for j, e := range es {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: pbl[e.series], Samples: samples[j : j+1 : j+1]})
		}
		raw = grow(raw, req.Size())
		n, err := req.MarshalToSizedBuffer(raw)
		if err != nil {
			panic("BUG: cannot marshal a WriteRequest: " + err.Error())
		}
		return snappy.Encode(nil, raw[len(raw)-n:])
	}
}

// newRW2Encoder returns an encoder of io.prometheus.write.v2.Request bodies
// with a fresh symbols table per request and the series' metric type as
// metadata, as Prometheus sends them.
func newRW2Encoder(d *Dataset) func([]entry) []byte {
	mt := map[metricType]writev2.Metadata_MetricType{
		typeGauge:     writev2.Metadata_METRIC_TYPE_GAUGE,
		typeCounter:   writev2.Metadata_METRIC_TYPE_COUNTER,
		typeHistogram: writev2.Metadata_METRIC_TYPE_HISTOGRAM,
	}
	var (
		req     writev2.Request
		samples []writev2.Sample
		refs    []uint32
		offs    []int
		raw     []byte
	)
	return func(es []entry) []byte {
		st := writev2.NewSymbolTable()
		req.Timeseries = req.Timeseries[:0]
		samples = samples[:0]
		refs = refs[:0]
		offs = offs[:0]
		for _, e := range es {
			samples = append(samples, writev2.Sample{Value: e.v, Timestamp: e.t})
			d.Labels(e.series).Range(func(l labels.Label) {
				refs = append(refs, st.Symbolize(l.Name), st.Symbolize(l.Value))
			})
			offs = append(offs, len(refs))
		}
		// Slices into refs are taken only now: appending may have moved it.
		start := 0
		for j, e := range es {
			req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
				LabelsRefs: refs[start:offs[j]:offs[j]],
				Samples:    samples[j : j+1 : j+1],
				Metadata:   writev2.Metadata{Type: mt[d.types[e.series]]},
			})
			start = offs[j]
		}
		req.Symbols = st.Symbols()
		raw = grow(raw, req.Size())
		n, err := req.MarshalToSizedBuffer(raw)
		if err != nil {
			panic("BUG: cannot marshal a v2 Request: " + err.Error())
		}
		return snappy.Encode(nil, raw[len(raw)-n:])
	}
}

// grow returns a slice of exactly n bytes, reusing b's array when it fits.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
