package actastore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
)

// maxResultErrors bounds Result.Errors; the counts carry the rest.
const maxResultErrors = 8

// exemplarMaxLabelRunes is the OpenMetrics bound on an exemplar's label
// set: names and values together at most 128 UTF-8 characters. Prometheus
// drops a longer exemplar (storage.ErrExemplarLabelLength).
const exemplarMaxLabelRunes = 128

// Commit stores one request's batch of every kind (Appender): it checks
// each series and item, writes the accepted ones (and the definitions of
// series new to the WAL) to the WAL with one write, waits until that write
// is durable per Options.WALSync (one group-commit fsync, shared with
// concurrent commits), and then adds them to the head.
//
// Rejections are per series or per item and do not fail the batch; Result
// counts them per kind and by reason, with a few example errors. Exemplars
// the store drops (labels over 128 characters, out of bounds) are counted
// in Result.Exemplars.Rejected and Reasons but give no error: as in
// Prometheus, a bad exemplar never fails a write. A non-nil error
// (ErrClosed, ErrOverloaded, a cancelled context before the WAL write, an
// I/O failure) means nothing of the batch was acknowledged.
func (s *Store) Commit(ctx context.Context, b *Batch) (Result, error) {
	var res Result
	if err := ctxErr(ctx); err != nil {
		return res, err
	}
	s.appendMu.RLock()
	defer s.appendMu.RUnlock()
	if s.closed.Load() {
		return res, ErrClosed
	}
	if err := s.hd.admit(); err != nil {
		return res, err
	}
	t := txnPool.Get().(*txn)
	defer t.release()
	t.begin(s, &res)
	t.resolveKnown(b.Series)
	for i := range b.Series {
		t.addSeries(&b.Series[i], t.known[i])
	}
	t.addMetadata(b.Metadata)
	if !t.pending() {
		t.count()
		return res, nil
	}
	pos, err := s.wal.Append(t.records()...)
	if err != nil {
		s.m.walErrors.Inc()
		return Result{}, fmt.Errorf("append batch to WAL: %w", err)
	}
	for _, ms := range t.logged {
		ms.mu.Lock()
		ms.walLogged = true
		ms.mu.Unlock()
	}
	if s.opts.WALSync == SyncAlways {
		start := time.Now()
		if err := s.wal.Sync(pos); err != nil {
			s.m.walErrors.Inc()
			return Result{}, fmt.Errorf("sync WAL: %w", err)
		}
		s.m.walFsync.Observe(time.Since(start).Seconds())
	}
	if testHookBeforeApply != nil {
		testHookBeforeApply()
	}
	t.apply(int32(pos.Segment))
	t.count()
	return res, nil
}

// testHookBeforeApply, set by tests only, runs between a commit's WAL
// write (and sync) and its apply to the heads: a test holds one commit
// there while a later one overtakes it.
var testHookBeforeApply func()

// Append stores float samples only: a Commit of a batch holding just them.
func (s *Store) Append(ctx context.Context, batch []SeriesSamples) (AppendResult, error) {
	b := Batch{Series: make([]SeriesData, 0, len(batch))}
	for _, ss := range batch {
		b.Add(ss.Labels, ss.Samples, nil, nil)
		if len(ss.Starts) > 0 && len(ss.Samples) > 0 {
			b.Series[len(b.Series)-1].SampleStarts = ss.Starts
		}
	}
	res, err := s.Commit(ctx, &b)
	if err != nil {
		return AppendResult{}, err
	}
	return AppendResult{SamplesWritten: res.Samples.Written, SamplesRejected: res.Samples.Rejected, Errors: res.Errors}, nil
}

// txn is one Commit's working memory, pooled.
type txn struct {
	s      *Store
	res    *Result
	rs     resolver
	oooMs  int64
	nowMs  int64
	series []txnSeries
	// Arenas of accepted items; series[i] holds slices of them (fixed up
	// in records, once they stop growing).
	floats []Sample
	hists  []HistogramSample
	exs    []Exemplar
	meta   []NamedMetadata
	defs   []seriesRec
	logged []*memSeries
	recs   [][]byte
	rb     recordBuilder
	fs     []refSamples[Sample]
	hs     []refSamples[HistogramSample]
	es     []refExemplars
	dups   [numKinds]int
	// Start timestamps of accepted samples (arenas, sorted per series),
	// the series that have some (sparse, in series order, so a batch
	// without any costs nothing) and what was dropped, by reason.
	fsts, hsts []StartTime
	stSeries   []txnStarts
	ss         []refStarts
	stDropped  [numStartReasons]int
	// known[i] is the series of the batch's i-th entry found by
	// resolveKnown (nil: resolve it).
	known []*memSeries
}

// txnStarts is the start timestamps of series[i]: ranges of fsts and hsts.
type txnStarts struct {
	i                  int
	fs0, fs1, hs0, hs1 int
}

// txnSeries is one series' accepted part of a batch: ranges of the arenas.
type txnSeries struct {
	ms             *memSeries
	f0, f1, h0, h1 int
	e0, e1         int
}

var txnPool = sync.Pool{New: func() any { return new(txn) }}

func (t *txn) begin(s *Store, res *Result) {
	t.s, t.res = s, res
	t.rs = resolver{r: s.reg, maxSeries: s.opts.MaxSeries, now: func() int64 { return s.now().UnixMilli() }, log: s.log,
		canon: t.rs.canon}
	t.oooMs = s.opts.OutOfOrderWindow.Milliseconds()
	t.nowMs = s.now().UnixMilli()
}

// release drops every reference into the batch and the store, keeping
// capacity (up to a bound, so one huge request does not pin its memory).
func (t *txn) release() {
	const maxPooled = 1 << 20
	if cap(t.floats) > maxPooled || cap(t.hists) > maxPooled/16 || cap(t.exs) > maxPooled/16 || cap(t.rb.buf) > 16<<20 ||
		cap(t.series) > 1<<16 || cap(t.defs) > 1<<12 || cap(t.logged) > 1<<12 {
		return
	}
	clear(t.series)
	clear(t.hists)
	clear(t.exs)
	clear(t.meta)
	clear(t.defs)
	clear(t.logged)
	clear(t.recs)
	clear(t.fs)
	clear(t.hs)
	clear(t.es)
	clear(t.ss)
	clear(t.known)
	t.rb.reset()
	*t = txn{series: t.series[:0], floats: t.floats[:0], hists: t.hists[:0], exs: t.exs[:0], meta: t.meta[:0],
		defs: t.defs[:0], logged: t.logged[:0], recs: t.recs[:0], rb: t.rb, fs: t.fs[:0], hs: t.hs[:0], es: t.es[:0],
		rs: resolver{canon: t.rs.canon[:0]}, fsts: t.fsts[:0], hsts: t.hsts[:0], ss: t.ss[:0], stSeries: t.stSeries[:0],
		known: t.known[:0]}
	txnPool.Put(t)
}

func (t *txn) pending() bool {
	return len(t.floats) > 0 || len(t.hists) > 0 || len(t.exs) > 0 || len(t.meta) > 0 || len(t.defs) > 0
}

// rejectSeries counts every item of a refused series.
func (t *txn) rejectSeries(d *SeriesData, reason string, err error) {
	t.res.reject(&t.res.Samples, len(d.Samples), reason, err)
	t.res.reject(&t.res.Histograms, len(d.Histograms), reason, nil)
	t.res.reject(&t.res.Exemplars, len(d.Exemplars), reason, nil)
	if len(d.Samples) == 0 && len(d.Histograms) == 0 && len(d.Exemplars) > 0 && len(t.res.Errors) < maxResultErrors {
		t.res.Errors = append(t.res.Errors, err)
	}
}

// addSeries checks one series' items and keeps the accepted ones. known
// is its series when resolveKnown found it (nil: resolve it here).
func (t *txn) addSeries(d *SeriesData, known *memSeries) {
	if len(d.Samples) == 0 && len(d.Histograms) == 0 && len(d.Exemplars) == 0 {
		return
	}
	if !t.anyStorable(d) {
		// Every item fails a check that needs no series (bounds, validity):
		// refuse them without creating a series that would hold nothing.
		t.rejectUnstorable(d)
		return
	}
	ms := known
	if ms == nil {
		var reason string
		var err error
		if ms, reason, err = t.rs.resolve(d); err != nil {
			t.rejectSeries(d, reason, err)
			return
		}
	}
	ts := txnSeries{ms: ms, f0: len(t.floats), h0: len(t.hists), e0: len(t.exs)}
	var fhits map[int64]fileHit[Sample]
	var hhits map[int64]fileHit[HistogramSample]
	for attempt := 0; ; attempt++ {
		ms.mu.Lock()
		if ms.removed && attempt < 2 {
			// Retention or deletion took the series out between the
			// lookup and now: resolve again (a new series of these labels).
			ms.mu.Unlock()
			var reason string
			var err error
			if ms, reason, err = t.rs.resolve(d); err != nil {
				t.rejectSeries(d, reason, err)
				return
			}
			ts.ms = ms
			continue
		}
		t.floats = t.floats[:ts.f0]
		t.hists = t.hists[:ts.h0]
		var fneed, hneed []int64
		var fv, hv []verdictAt
		t.floats, fv, fneed = acceptKind(floats, &ms.floats, d.Samples, t.floats, fhits, t.bounds(), t.oooMs)
		if len(d.Histograms) > 0 {
			t.hists, hv, hneed = acceptKind(histograms, histograms.track(ms, true), d.Histograms, t.hists, hhits, t.bounds(), t.oooMs)
		}
		if (len(fneed) == 0 && len(hneed) == 0) || attempt == 2 {
			// Final (after two rounds of file lookups, a file that keeps
			// changing is taken as not holding the rest).
			if !ms.walLogged && !ms.removed && (len(t.floats) > ts.f0 || len(t.hists) > ts.h0 || len(d.Exemplars) > 0) {
				if !t.isLogged(ms) {
					t.defs = append(t.defs, seriesRec{Ref: ms.ref, Created: ms.created}) // Labels: records
					t.logged = append(t.logged, ms)
				}
			}
			ms.mu.Unlock()
			name := seriesName{r: t.s.reg, ms: ms}
			verdicts(t, floats, name, d.Samples, fv, &t.res.Samples)
			verdicts(t, histograms, name, d.Histograms, hv, &t.res.Histograms)
			break
		}
		ms.mu.Unlock()
		// Outside the series lock: read the files for the timestamps they
		// may hold.
		fhits = lookupFiles(t.s, floats, ms, fneed, fhits)
		hhits = lookupFiles(t.s, histograms, ms, hneed, hhits)
	}
	ts.f1, ts.h1 = len(t.floats), len(t.hists)
	sts := txnStarts{i: len(t.series), fs0: len(t.fsts), hs0: len(t.hsts)}
	if len(d.SampleStarts) > 0 {
		t.fsts = acceptedStarts(floats, t, t.fsts, d.SampleStarts, t.floats[ts.f0:ts.f1])
	}
	if len(d.HistogramStarts) > 0 {
		t.hsts = acceptedStarts(histograms, t, t.hsts, d.HistogramStarts, t.hists[ts.h0:ts.h1])
	}
	sts.fs1, sts.hs1 = len(t.fsts), len(t.hsts)
	t.addExemplars(ms, d.Exemplars)
	ts.e1 = len(t.exs)
	if ts.f1 > ts.f0 || ts.h1 > ts.h0 || ts.e1 > ts.e0 {
		t.series = append(t.series, ts)
		if sts.fs1 > sts.fs0 || sts.hs1 > sts.hs0 {
			t.stSeries = append(t.stSeries, sts)
		}
	}
}

// anyStorable reports whether some item of d passes the checks that need
// no series: the time bounds, a histogram's validity, an exemplar's label
// length. For a new series any such item is stored, so a series is created
// only when it will hold something.
func (t *txn) anyStorable(d *SeriesData) bool {
	b := t.bounds()
	for _, smp := range d.Samples {
		if smp.T <= b.max && smp.T >= b.min {
			return true
		}
	}
	for _, h := range d.Histograms {
		if h.T <= b.max && h.T >= b.min && histograms.valid(h) == nil {
			return true
		}
	}
	for _, e := range d.Exemplars {
		if exemplarOK(e, b) == "" {
			return true
		}
	}
	return false
}

// rejectUnstorable counts and describes every item of a series none of
// whose items can be stored.
func (t *txn) rejectUnstorable(d *SeriesData) {
	lset := d.Labels
	if lset.IsEmpty() && len(d.LabelPairs) > 0 {
		lset, _ = labelsFromPairs(&t.rs.sb, d.LabelPairs)
	}
	ms := &memSeries{} // no ref: addExemplars only counts
	var fv, hv []verdictAt
	nothing := newTrack[Sample]()
	_, fv, _ = acceptKind(floats, &nothing, d.Samples, nil, nil, t.bounds(), 0)
	hnothing := newTrack[HistogramSample]()
	_, hv, _ = acceptKind(histograms, &hnothing, d.Histograms, nil, nil, t.bounds(), 0)
	verdicts(t, floats, seriesName{lset: lset}, d.Samples, fv, &t.res.Samples)
	verdicts(t, histograms, seriesName{lset: lset}, d.Histograms, hv, &t.res.Histograms)
	t.addExemplars(ms, d.Exemplars)
}

func (t *txn) isLogged(ms *memSeries) bool {
	for _, o := range t.logged {
		if o == ms {
			return true
		}
	}
	return false
}

// timeBounds is the accepted timestamp range of one commit, ms inclusive.
type timeBounds struct{ min, max int64 }

func (t *txn) bounds() timeBounds {
	b := timeBounds{min: t.s.opts.MinTimestamp, max: 1<<63 - 1}
	if f := t.s.opts.MaxFuture; f > 0 {
		b.max = t.nowMs + f.Milliseconds()
	}
	return b
}

// verdictAt is the verdict on in[i] when it is not "accept".
type verdictAt struct {
	v      sampleVerdict
	i      int
	err    error // for verdictInvalid
	newest int64 // for verdictTooOld: the track's newest timestamp
}

const (
	verdictOutOfBounds sampleVerdict = iota + 16 // beyond max_future or below the floor
	verdictInvalid                               // the kind's own validity check failed
)

// acceptKind classifies a series' incoming samples of kind k against its
// track tr (the series' mu held), appending the accepted ones to acc. It
// returns the verdicts other than accept, and the timestamps that need a
// look into the files (verdictLookup) before anything is final: the caller
// then reads them and calls again with the hits. oooMs is the out-of-order
// window (0: any age).
func acceptKind[S any](k kind[S], tr *track[S], in []S, acc []S, hits map[int64]fileHit[S], b timeBounds, oooMs int64) ([]S, []verdictAt, []int64) {
	var vs []verdictAt
	var need []int64
	base := len(acc)
	for i, smp := range in {
		t := k.ts(smp)
		if t > b.max || t < b.min {
			// Checked first: a rejected far-future sample never moves the
			// series' newest timestamp, so it cannot poison the window.
			vs = append(vs, verdictAt{v: verdictOutOfBounds, i: i})
			continue
		}
		if err := k.valid(smp); err != nil {
			vs = append(vs, verdictAt{v: verdictInvalid, i: i, err: err})
			continue
		}
		// Newer than anything the track accepted: neither its head, nor a
		// flush's buffer, nor the last flushed sample can hold t (all are
		// at or below maxT, which only grows), so it is classify's
		// "accept" without reading the head.
		v := verdictAccept
		if tr.maxT == noTime || t <= tr.maxT {
			v = classify(k, tr, smp, oooMs, hits)
		}
		if v == verdictLookup {
			need = append(need, t)
			continue
		}
		if v == verdictAccept {
			// Within the batch: a repeat of a timestamp accepted just
			// before is a duplicate or a conflict too.
			v = withinBatch(k, acc[base:], smp)
		}
		if v == verdictAccept {
			acc = append(acc, smp)
			continue
		}
		vs = append(vs, verdictAt{v: v, i: i, newest: tr.maxT})
	}
	return acc, vs, need
}

// withinBatch checks smp against the samples of its own batch already
// accepted for the series.
func withinBatch[S any](k kind[S], ok []S, smp S) sampleVerdict {
	if len(ok) == 0 {
		return verdictAccept
	}
	t := k.ts(smp)
	if k.ts(ok[len(ok)-1]) < t {
		return verdictAccept
	}
	for _, o := range ok {
		if k.ts(o) == t {
			return sameOrConflict(k, o, smp)
		}
	}
	return verdictAccept
}

// seriesName names a series in a rejection message: a stored series'
// labels (ms, in r) are built only when a message is, never under ms.mu,
// and once.
type seriesName struct {
	r    *registry
	ms   *memSeries
	lset labels.Labels // given, or built from ms
}

func (n *seriesName) labels() labels.Labels {
	if n.ms != nil && n.lset.IsEmpty() {
		n.lset = n.r.labels(nil, n.ms)
	}
	return n.lset
}

// verdicts counts and describes the rejected samples of one series; the
// descriptions stop once the result holds maxResultErrors.
func verdicts[S any](t *txn, k kind[S], ms seriesName, in []S, vs []verdictAt, c *Counts) {
	what := "sample"
	if k.id() == kindHistogram {
		what = "histogram"
	}
	for _, v := range vs {
		ts := k.ts(in[v.i])
		if v.v == verdictDuplicate {
			t.dups[k.id()]++
			continue
		}
		var err error
		describe := len(t.res.Errors) < maxResultErrors
		switch v.v {
		case verdictConflict:
			if describe {
				err = fmt.Errorf("%w: series %s %s at %d differs from the one stored", ErrDuplicateSample, ms.labels(), what, ts)
			}
			t.res.reject(c, 1, ReasonDuplicate, err)
		case verdictTooOld:
			if describe {
				err = fmt.Errorf("%w: series %s %s at %d is more than %s behind its newest sample %d",
					ErrOutOfOrder, ms.labels(), what, ts, t.s.opts.OutOfOrderWindow, v.newest)
			}
			t.res.reject(c, 1, ReasonOutOfOrder, err)
		case verdictOutOfBounds:
			if describe {
				err = t.boundsErr(ms.labels(), what, ts)
			}
			t.res.reject(c, 1, ReasonOutOfBounds, err)
		case verdictInvalid:
			if describe {
				err = fmt.Errorf("%w: series %s at %d: %v", ErrInvalidHistogram, ms.labels(), ts, v.err)
			}
			t.res.reject(c, 1, ReasonInvalidHistogram, err)
		}
	}
}

func (t *txn) boundsErr(ms labels.Labels, what string, ts int64) error {
	b := t.bounds()
	if ts > b.max {
		return fmt.Errorf("%w: series %s %s at %d is more than %s ahead of the server's clock (%d)",
			ErrOutOfBounds, ms, what, ts, t.s.opts.MaxFuture, t.nowMs)
	}
	return fmt.Errorf("%w: series %s %s at %d is below the oldest timestamp accepted, %d",
		ErrOutOfBounds, ms, what, ts, b.min)
}

// addExemplars keeps the valid exemplars of a series: labels of at most
// 128 characters (OpenMetrics), a timestamp within the bounds (0 is "none
// given", as prompb carries it). The others are dropped and counted.
func (t *txn) addExemplars(ms *memSeries, es []Exemplar) {
	b := t.bounds()
	for _, e := range es {
		if reason := exemplarOK(e, b); reason != "" {
			t.res.reject(&t.res.Exemplars, 1, reason, nil)
			continue
		}
		if ms.ref != 0 {
			t.exs = append(t.exs, e)
		}
	}
}

// exemplarOK is "" for an exemplar the store keeps, else why it is dropped.
func exemplarOK(e Exemplar, b timeBounds) string {
	runes := 0
	e.Labels.Range(func(l labels.Label) { runes += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value) })
	switch {
	case runes > exemplarMaxLabelRunes:
		return ReasonExemplarLabels
	case e.T != 0 && (e.T > b.max || e.T < b.min):
		return ReasonOutOfBounds
	}
	return ""
}

// addMetadata keeps the metadata of the batch, copied (the store keeps it).
func (t *txn) addMetadata(md []NamedMetadata) {
	for _, m := range md {
		if m.Name == "" {
			continue
		}
		t.meta = append(t.meta, NamedMetadata{Name: strings.Clone(m.Name), Metadata: Metadata{
			Type: m.Type, Unit: strings.Clone(m.Unit), Help: strings.Clone(m.Help)}})
	}
}

// records encodes the batch's WAL records: series definitions first (a
// sample never refers to a series the log has not defined), then floats,
// histograms, exemplars, metadata.
func (t *txn) records() [][]byte {
	t.rb.reset()
	if len(t.defs) > 0 {
		// The labels of new series, read here rather than under their
		// series' lock: registry.mu comes first (doc.go).
		r := t.s.reg
		r.mu.RLock()
		for i := range t.defs {
			t.defs[i].Labels = r.ix.labels(&t.rs.sb, t.logged[i])
		}
		r.mu.RUnlock()
	}
	t.rb.addSeries(t.defs)
	fs, hs, es := t.fs[:0], t.hs[:0], t.es[:0]
	for _, ts := range t.series {
		if ts.f1 > ts.f0 {
			fs = append(fs, refSamples[Sample]{Ref: ts.ms.ref, Samples: t.floats[ts.f0:ts.f1]})
		}
		if ts.h1 > ts.h0 {
			hs = append(hs, refSamples[HistogramSample]{Ref: ts.ms.ref, Samples: t.hists[ts.h0:ts.h1]})
		}
		if ts.e1 > ts.e0 {
			es = append(es, refExemplars{Ref: ts.ms.ref, Exemplars: t.exs[ts.e0:ts.e1]})
		}
	}
	t.fs, t.hs, t.es = fs, hs, es
	appendSamplesRecords(floats, &t.rb, fs)
	appendSamplesRecords(histograms, &t.rb, hs)
	// After the samples they belong to (replay adds them to head samples).
	ss := t.ss[:0]
	for _, st := range t.stSeries {
		ref := t.series[st.i].ms.ref
		if st.fs1 > st.fs0 {
			ss = append(ss, refStarts{Ref: ref, Kind: kindFloat, Starts: t.fsts[st.fs0:st.fs1]})
		}
		if st.hs1 > st.hs0 {
			ss = append(ss, refStarts{Ref: ref, Kind: kindHistogram, Starts: t.hsts[st.hs0:st.hs1]})
		}
	}
	t.ss = ss
	appendStartsRecords(&t.rb, ss)
	t.recs = t.rb.records(t.recs[:0])
	for len(es) > 0 {
		n, size := 0, 0
		for n < len(es) && (n == 0 || size < maxRecordPayload) {
			size += len(es[n].Exemplars) * 64
			n++
		}
		t.recs = append(t.recs, appendExemplarsRecord(nil, es[:n]))
		es = es[n:]
	}
	if len(t.meta) > 0 {
		t.recs = append(t.recs, appendMetadataRecord(nil, t.meta))
	}
	return t.recs
}

// apply adds the durable batch to the head: each series' samples into its
// tracks, exemplars, metadata; and queues series whose head is full.
func (t *txn) apply(seg int32) {
	s := t.s
	nowNs := s.now().UnixNano()
	var written [numKinds]int
	var bytes int64
	sts := t.stSeries
	for i, ts := range t.series {
		var st txnStarts
		if len(sts) > 0 && sts[0].i == i {
			st, sts = sts[0], sts[1:]
		}
		ms := ts.ms
		ms.mu.Lock()
		s.copyBefore(ms) // a checkpoint copying the heads takes this one first (checkpoint.go)
		idle := !ms.hasHeadLocked()
		n, b := insertAll(floats, &ms.floats, t.floats[ts.f0:ts.f1], seg, nowNs, false)
		written[kindFloat] += n
		bytes += b
		if st.fs1 > st.fs0 {
			bytes += int64(addStarts(&ms.floats, t.fsts[st.fs0:st.fs1])) * startBytes
		}
		full := ms.floats.head.len() >= s.opts.BlockRows
		if ts.h1 > ts.h0 {
			tr := histograms.track(ms, true)
			n, b := insertAll(histograms, tr, t.hists[ts.h0:ts.h1], seg, nowNs, false)
			written[kindHistogram] += n
			bytes += b
			if st.hs1 > st.hs0 {
				bytes += int64(addStarts(tr, t.hsts[st.hs0:st.hs1])) * startBytes
			}
			full = full || tr.head.len() >= maxHistBlockRows
		}
		if ts.e1 > ts.e0 {
			t.res.Exemplars.Written += ms.exemplarsLocked().add(t.exs[ts.e0:ts.e1], seg, nowNs)
		}
		if idle && ms.hasHeadLocked() {
			s.hd.series.Add(1)
		}
		ms.mu.Unlock()
		if full {
			s.hd.queue(ms)
		}
	}
	if len(t.meta) > 0 {
		s.md.set(t.meta)
		t.res.Metadata.Written = len(t.meta)
	}
	// A timestamp a concurrent batch stored first is a duplicate of it:
	// both are in the WAL, and replay keeps the first as well.
	t.dups[kindFloat] += len(t.floats) - written[kindFloat]
	t.dups[kindHistogram] += len(t.hists) - written[kindHistogram]
	s.hd.added(int64(written[kindFloat]+written[kindHistogram]), bytes)
	s.m.appended.Add(float64(written[kindFloat]))
	s.m.histAppended.Add(float64(written[kindHistogram]))
	t.res.Samples.Written += written[kindFloat]
	t.res.Histograms.Written += written[kindHistogram]
}

// count adds the duplicates (counted as written) to the result and the
// metrics.
func (t *txn) count() {
	t.res.Samples.Written += t.dups[kindFloat]
	t.res.Histograms.Written += t.dups[kindHistogram]
	t.s.m.duplicates.Add(float64(t.dups[kindFloat] + t.dups[kindHistogram]))
	for reason, n := range t.res.Reasons {
		t.s.m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	if t.rs.sorted > 0 {
		t.s.m.labelsSorted.Add(float64(t.rs.sorted))
	}
	t.countStarts()
}

// appendable reports whether ss, strictly increasing, all come after the
// head and nothing is being flushed (so no sample can be a repeat).
func appendable[S any](k kind[S], tr *track[S], ss []S) bool {
	if len(ss) == 0 || len(tr.flushingBuf()) > 0 {
		return false
	}
	// tr.maxT is at or above every head sample (insert raises it, nothing
	// lowers it), so a batch newer than it is newer than the head without
	// reading the head's tail, a cache miss per series of a commit.
	if t0 := k.ts(ss[0]); tr.maxT != noTime && t0 <= tr.maxT {
		if t := tr.head.maxT(k); t != noTime && t >= t0 {
			return false
		}
	}
	for i := 1; i < len(ss); i++ {
		if k.ts(ss[i]) <= k.ts(ss[i-1]) {
			return false
		}
	}
	return true
}

// insertAll inserts accepted samples into tr (the series' mu held); it
// returns how many were added and their head bytes. lazy is for the WAL
// replay (headBuf.addNew).
func insertAll[S any](k kind[S], tr *track[S], ss []S, seg int32, nowNs int64, lazy bool) (int, int64) {
	if appendable(k, tr, ss) {
		// The usual case: newer than the whole head, in order, nothing being
		// flushed: one append instead of a search and a growth per sample.
		tr.headFrom(seg, nowNs)
		b := tr.head.addNewer(k, ss, lazy)
		if t := k.ts(ss[len(ss)-1]); tr.maxT == noTime || t > tr.maxT {
			tr.maxT = t
		}
		return len(ss), b
	}
	n, b := 0, int64(0)
	for _, smp := range ss {
		if ok, sb := insert(k, tr, smp, seg, nowNs, lazy); ok {
			n++
			b += sb
		}
	}
	return n, b
}
