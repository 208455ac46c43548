package actastore

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// WAL replay runs in two stages, so that a restart uses two cores: the
// goroutine reading the WAL (wal.Replay: framing and checksums) also
// decodes the sample records of every kind, and one applying goroutine
// takes the records in WAL order and does everything that changes the
// store: series definitions, heads, exemplars, metadata, tombstones. The
// applying stage alone touches the registry and the series, so replay
// needs no locks and keeps the order a sequential replay has. Measured in
// BenchmarkReplayFullHead (commit message).

// replayItem is one WAL record passed from the reading stage to the
// applying one: a sample record decoded (spans of fs or hs), any other
// record as read (payload; wal.Replay lets the payload be kept).
type replayItem struct {
	seg     int32
	seen    int64 // record bytes read up to and including this record
	ckpt    bool  // a checkpoint's record
	payload []byte
	hist    bool // spans are of hs, else of fs
	fs      []Sample
	hs      []HistogramSample
	spans   []replaySpan
}

// replaySpan is one series' samples in a decoded record.
type replaySpan struct {
	ref    uint64
	lo, hi int
}

// A batch of records goes over the channel once it holds
// replayBatchItems records or replayBatchSamples samples: a channel
// operation per small commit's record would cost more than the record, and
// big records must not wait for 64 others (the stages would take turns).
// Up to six batches are alive (the one being filled, four queued, the one
// being applied), each record with its decode buffers, and a fresh
// process pays for every page of them: 8,192 samples (four 2,000-sample
// records) rather than 32,768 took 5 % off the replay of acta-bench's
// kill -9 data in a fresh server (commit message).
const (
	replayBatchItems   = 64
	replayBatchSamples = 1 << 13
)

type replayPipe struct {
	rp   *replayer
	work chan []replayItem
	free chan []replayItem // applied batches, for their buffers
	done chan error
	cur  []replayItem
	n    int   // samples in cur
	err  error // the applying stage's first error, once done is read
}

func newReplayPipe(rp *replayer) *replayPipe {
	p := &replayPipe{rp: rp, work: make(chan []replayItem, 4), free: make(chan []replayItem, 8), done: make(chan error, 1)}
	go p.apply()
	return p
}

// add takes one record (reading stage), ckpt telling whether a
// checkpoint's. It returns the applying stage's error, if it stopped on
// one, so that the replay stops too.
func (p *replayPipe) add(seg int, payload []byte, seen int64, ckpt bool) error {
	if p.cur == nil {
		select {
		case b := <-p.free:
			p.cur = b[:0]
		default:
			p.cur = make([]replayItem, 0, replayBatchItems)
		}
	}
	p.cur = p.cur[:len(p.cur)+1]
	it := &p.cur[len(p.cur)-1]
	it.seg, it.seen, it.ckpt, it.payload, it.hist = int32(seg), seen, ckpt, nil, payload[0] == recHistograms
	it.fs, it.hs, it.spans = it.fs[:0], it.hs[:0], it.spans[:0]
	var err error
	// Room for as many samples as the record's bytes can hold (a float
	// takes at least 9, a histogram 27: kind.decodeSamples), so decoding
	// never grows the buffer.
	if n, k := binary.Uvarint(payload[1:]); k > 0 && (payload[0] == recSamples || payload[0] == recHistograms) {
		// One span a series of the record: grown once, not by doubling
		// (a record of 2,000 series made the doubling a fifth of the
		// reading stage in a fresh process).
		it.spans = slices.Grow(it.spans, int(min(n, uint64(len(payload)/9))))
	}
	switch payload[0] {
	case recSamples:
		it.fs = slices.Grow(it.fs, len(payload)/9)
		it.fs, it.spans, err = decodeSamplesSpans(floats, payload, it.fs, it.spans)
		p.n += len(it.fs)
	case recHistograms:
		it.hs = slices.Grow(it.hs, len(payload)/27)
		it.hs, it.spans, err = decodeSamplesSpans(histograms, payload, it.hs, it.spans)
		p.n += len(it.hs)
	default:
		it.payload = payload
	}
	if err != nil {
		return fmt.Errorf("WAL segment %08d: %w", seg, err)
	}
	if len(p.cur) == cap(p.cur) || p.n >= replayBatchSamples {
		return p.send()
	}
	return nil
}

func (p *replayPipe) send() error {
	select {
	case p.work <- p.cur:
		p.cur, p.n = nil, 0
		return nil
	case err := <-p.done:
		p.err = err
		if err == nil {
			err = fmt.Errorf("WAL replay: applying stage stopped early")
		}
		return err
	}
}

// close hands over what is left, waits for the applying stage and returns
// its error. Called once, also after the reading stage failed: the records
// read before the failure are applied all the same, as a sequential replay
// would have.
func (p *replayPipe) close() error {
	if p.err == nil && len(p.cur) > 0 {
		p.send()
	}
	close(p.work)
	if p.err != nil {
		return p.err // done was read already
	}
	return <-p.done
}

// apply is the applying stage. After an error it drains the channel, so
// the reading stage never blocks, and reports the error once done.
func (p *replayPipe) apply() {
	var first error
	for b := range p.work {
		for i := range b {
			if first == nil {
				first = p.rp.applyItem(&b[i])
			}
		}
		if first != nil {
			p.done <- first
			for range p.work {
			}
			return
		}
		select {
		case p.free <- b:
		default:
		}
	}
	p.done <- nil
}

func (rp *replayer) applyItem(it *replayItem) error {
	rp.seen, rp.ckpt = it.seen, it.ckpt
	hint := &rp.hints[kindFloat]
	if it.hist {
		hint = &rp.hints[kindHistogram]
	}
	var err error
	for _, sp := range it.spans {
		ms := hint.after(sp.ref)
		if ms == nil {
			rp.lookups++
			if ms, err = rp.series(sp.ref, it.seg, it.what); err != nil {
				break
			}
			if ms == nil {
				continue // removed since
			}
			hint.follows(ms)
		}
		if it.hist {
			replaySamples(rp, histograms, ms, it.seg, it.hs[sp.lo:sp.hi])
		} else {
			replaySamples(rp, floats, ms, it.seg, it.fs[sp.lo:sp.hi])
		}
	}
	rp.flushCounts()
	if err == nil && it.payload != nil {
		err = rp.apply(int(it.seg), it.payload)
	}
	return err
}

// what names a sample record's samples for an error.
func (it *replayItem) what() string {
	if it.hist {
		return histograms.name() + " samples"
	}
	return floats.name() + " samples"
}

// seriesHint remembers, for each series (by index id), the series that
// came after it in the WAL's sample records of a kind. A sender sends its
// series in the same order scrape after scrape, however its requests cut
// that order and however many senders interleave, so the next series of
// a record is most often the one that followed the previous series last
// time: one compare against the ref instead of a registry map lookup,
// which was a fifth of a replay's applying stage (BenchmarkReplayFullHead,
// commit message). Replay only ever adds to the registry (tombstones
// remove series after it: applyTombstones), so a hint never names a series
// that left it. The table costs a pointer per series while the replay
// runs.
type seriesHint struct {
	next []*memSeries // by the id of the series before
	prev *memSeries   // the series of the last span applied
}

// after returns the series of ref if it is the one that followed the
// previous series last time, else nil; it becomes the previous series.
func (h *seriesHint) after(ref uint64) *memSeries {
	if p := h.prev; p != nil && int(p.id) < len(h.next) {
		if ms := h.next[p.id]; ms != nil && ms.ref == ref {
			h.prev = ms
			return ms
		}
	}
	return nil
}

// follows notes that ms, found in the registry, came after the previous
// series, and makes it the previous one.
func (h *seriesHint) follows(ms *memSeries) {
	if p := h.prev; p != nil {
		if n := int(p.id) + 1; n > len(h.next) {
			h.next = append(h.next, make([]*memSeries, max(n, 2*len(h.next))-len(h.next))...)
		}
		h.next[p.id] = ms
	}
	h.prev = ms
}
