package remotewrite

import (
	"sync"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// scratch is one request's working memory, pooled so a steady stream of
// requests allocates nothing per series once warm: label pairs go into one
// arena (the store builds label sets only for series it does not know),
// samples into another.
type scratch struct {
	raw, dec []byte // compressed body, decoded protobuf

	// The generated decoder's request messages (decode_generated.go),
	// pooled with the scratch: their Timeseries (and 2.0 Symbols) slices
	// keep their capacity across requests.
	w1 prompb.WriteRequest
	w2 writev2.Request

	// The wire decoder's tables (decode_wire.go): 2.0 symbols (strings
	// aliasing dec), one series' label refs and exemplars.
	syms  []string
	refs  []uint32
	v2exs []writev2.Exemplar

	// batch is what the request commits: batch.Series[i] takes its
	// samples, histograms and exemplars from the arenas below once they
	// stop growing (finish), by spans[i].
	batch   actastore.Batch
	samples []actastore.Sample          // arena
	hists   []actastore.HistogramSample // arena
	exs     []actastore.Exemplar        // arena
	// Start timestamps (2.0 only) of samples and histograms: arenas, and
	// where the series being decoded begins in them.
	sts, hsts   []actastore.StartTime
	stlo, hstlo int
	spans       []span
	lp          []byte // arena: every stored series' label count and pairs (actastore.AppendLabelCount, AppendLabelPair)
	pairs       []pair // the series being converted: its labels with a value, at most limit+1
	npairs      int    // its labels with a value, all of them
	sb          labels.ScratchBuilder

	stats  stats
	errs   []error        // rejections, the first maxErrors kept for the answer
	nerrs  int            // all rejections
	reason map[string]int // rejected samples by reason
	events map[string]int // rejections (a series, or a store error) by reason
}

// span is one series' ranges in the arenas: samples [lo, hi), histograms
// [hlo, hhi), exemplars [elo, ehi), label pairs [plo, phi), start
// timestamps of samples [slo, shi) and of histograms [hslo, hshi).
type span struct{ lo, hi, hlo, hhi, elo, ehi, plo, phi, slo, shi, hslo, hshi int }

// pair is one label as sent. The wire decoder's strings alias the decoded
// body (s.dec): they must not outlive the request, and are copied into
// the pairs arena (and by the store) before it ends.
type pair struct{ name, value string }

// bytesOf views s as bytes without copying; the bytes must not be written.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stats is what one request carried and what became of it.
type stats struct {
	series, samples, histograms, exemplars int
	rejectedSamples, rejectedHistograms    int
	samplesWritten, histogramsWritten      int
	exemplarsWritten                       int
}

// maxErrors bounds the rejection messages kept per request: the answer
// must stay readable and small even when every series is bad.
const maxErrors = 8

// maxPooledBytes: larger buffers are dropped instead of pooled, so one huge
// request does not pin its memory for the life of the process.
const maxPooledBytes = 16 << 20

var scratchPool = sync.Pool{New: func() any { return &scratch{reason: map[string]int{}, events: map[string]int{}} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.raw) > maxPooledBytes || cap(s.dec) > maxPooledBytes || cap(s.samples) > maxPooledBytes/16 ||
		cap(s.lp) > maxPooledBytes || cap(s.syms) > maxPooledBytes/16 || cap(s.refs) > maxPooledBytes/4 ||
		cap(s.w1.Timeseries)*int(unsafe.Sizeof(prompb.TimeSeries{})) > maxPooledBytes ||
		cap(s.w2.Timeseries)*int(unsafe.Sizeof(writev2.TimeSeries{})) > maxPooledBytes ||
		cap(s.w2.Symbols) > maxPooledBytes/16 {
		return
	}
	s.resetDecoded()
	scratchPool.Put(s)
}

// resetDecoded forgets everything decoded from the body (keeping the
// buffers' capacity and the body itself): putScratch's reset, and what the
// generated decoder starts from when the wire decoder gives up half way.
func (s *scratch) resetDecoded() {
	resetRequests(s)
	s.batch.Reset() // drop label references so the store's copies can be freed
	s.samples = s.samples[:0]
	s.sts, s.hsts, s.stlo, s.hstlo = s.sts[:0], s.hsts[:0], 0, 0
	s.spans = s.spans[:0]
	clear(s.hists)
	s.hists = s.hists[:0]
	clear(s.exs)
	s.exs = s.exs[:0]
	s.lp = s.lp[:0]
	s.pairs = s.pairs[:0]
	s.npairs = 0
	clear(s.syms)
	s.syms = s.syms[:0]
	s.refs = s.refs[:0]
	clear(s.v2exs)
	s.v2exs = s.v2exs[:0]
	clear(s.errs)
	s.errs = s.errs[:0]
	s.nerrs = 0
	s.stats = stats{}
	clear(s.reason)
	clear(s.events)
}

// reject records one rejected series or sample group.
func (s *scratch) reject(samples int, err error) {
	s.stats.rejectedSamples += samples
	if samples > 0 {
		s.reason[reasonOf(err)] += samples
	}
	s.events[reasonOf(err)]++
	s.nerrs++
	if len(s.errs) < maxErrors {
		s.errs = append(s.errs, err)
	}
}

// resetRequests empties the pooled request messages, keeping the capacity
// of their top-level slices (Unmarshal appends a zero TimeSeries and
// decodes into it, so nothing of the previous request leaks through) and
// dropping every reference into the previous request.
func resetRequests(s *scratch) {
	ts1, md1 := s.w1.Timeseries, s.w1.Metadata
	clear(ts1)
	clear(md1)
	s.w1.Reset()
	s.w1.Timeseries, s.w1.Metadata = ts1[:0], md1[:0]
	ts2, sym := s.w2.Timeseries, s.w2.Symbols
	clear(ts2)
	clear(sym)
	s.w2.Reset()
	s.w2.Timeseries, s.w2.Symbols = ts2[:0], sym[:0]
}

// finish points each batch entry at its label pairs and samples once the
// arenas stop growing.
func (s *scratch) finish() {
	for i, sp := range s.spans {
		d := &s.batch.Series[i]
		d.LabelPairs = s.lp[sp.plo:sp.phi:sp.phi]
		d.Samples = s.samples[sp.lo:sp.hi:sp.hi]
		d.Histograms = s.hists[sp.hlo:sp.hhi:sp.hhi]
		d.Exemplars = s.exs[sp.elo:sp.ehi:sp.ehi]
		d.SampleStarts, d.HistogramStarts = nil, nil
		if sp.shi > sp.slo {
			d.SampleStarts = s.sts[sp.slo:sp.shi:sp.shi]
		}
		if sp.hshi > sp.hslo {
			d.HistogramStarts = s.hsts[sp.hslo:sp.hshi:sp.hshi]
		}
	}
}

// addStart keeps the start timestamp st (ms; 0: none sent) of the sample
// at t of the series being decoded (Remote-Write 2.0 Sample.start_timestamp).
// The store checks it (actastore.StartTime).
func (s *scratch) addStart(t, st int64) {
	if st != 0 {
		s.sts = append(s.sts, actastore.StartTime{T: t, ST: st})
	}
}

// addHistStart is addStart for a histogram (Histogram.start_timestamp).
func (s *scratch) addHistStart(t, st int64) {
	if st != 0 {
		s.hsts = append(s.hsts, actastore.StartTime{T: t, ST: st})
	}
}

// dropStarts drops the start timestamps of the series being decoded, when
// it is rejected.
func (s *scratch) dropStarts() {
	s.sts, s.hsts = s.sts[:s.stlo], s.hsts[:s.hstlo]
}
