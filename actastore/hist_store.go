package actastore

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/acta-remote/acta-remote/actastore/wal"
)

// histStore is the store's native histogram, exemplar and metadata side.
// Series identity is the store's: a histogram series is a memSeries (its
// definition goes to the main WAL and the catalog like any other), so a
// series may hold floats and histograms and Select finds both. Histogram
// samples, exemplars and metadata go to their own WAL, so the float path
// and its truncation stay untouched; that costs one more fsync for a
// request that carries histograms.
//
// Flushing writes every buffered histogram series, the exemplars not yet on
// disk and changed metadata, syncs them, then deletes the histogram WAL: it
// holds mu exclusively, so appends wait for it (histogram traffic is small
// next to float traffic; heads are flushed when MaxHeadAge passes or a
// series buffers BlockRows samples).
type histStore struct {
	s    *Store
	root string // <dir>/histograms
	wal  *wal.Log

	// mu is held shared by appends (WAL write to head insert) and reads,
	// exclusively by flushAll, so a flushed sample is never in neither the
	// head nor a synced file and a reader never misses one in transit.
	mu        sync.RWMutex
	smu       sync.Mutex // guards series, meta, metaDirty, oldest
	series    map[uint64]*histSeries
	meta      map[string]Metadata
	metaDirty bool
	oldest    time.Time // arrival of the oldest unflushed item; zero when none

	headSamples atomic.Int64 // histograms in heads, bounded like float samples by MaxHeadSamples

	flushCh chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// histSeries is one series' histogram state.
type histSeries struct {
	ref uint64
	ms  *memSeries

	mu          sync.Mutex
	head        []HistogramSample // sorted by T, one per T
	newest      int64             // newest T accepted (head, file or replay); noTime when unknown
	lastFlushed HistogramSample   // newest sample written to the file since start-up
	hasFlushed  bool
	exemplars   []Exemplar // newest last, at most maxExemplarsKept
	exNew       int        // how many of the newest exemplars are not in the exemplar file
	exRows      int        // rows in the exemplar file
	exLoaded    bool       // exemplar file read
	files       []int64    // starts of the histogram files, ascending (rotation.Policy)
	newestMax   int64      // newest sample in the newest file; noTime when unknown or none
}

func openHistStore(s *Store) (*histStore, error) {
	h := &histStore{
		s:       s,
		root:    filepath.Join(s.dir, histDirName),
		series:  map[uint64]*histSeries{},
		meta:    map[string]Metadata{},
		flushCh: make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := os.MkdirAll(h.root, 0o755); err != nil {
		return nil, err
	}
	h.sweepTmp()
	if err := readMetadataFile(filepath.Join(h.root, metadataFileName), h.meta); err != nil {
		return nil, fmt.Errorf("cannot read metadata: %w", err)
	}
	if err := h.scanHistFiles(); err != nil {
		return nil, fmt.Errorf("cannot scan histogram files: %w", err)
	}
	if err := h.replay(); err != nil {
		return nil, err
	}
	w, err := wal.Open(filepath.Join(h.root, walDirName), wal.Options{})
	if err != nil {
		return nil, fmt.Errorf("cannot open histogram WAL: %w", err)
	}
	h.wal = w
	go h.loop()
	return h, nil
}

// replay restores heads, exemplars and metadata from the histogram WAL.
// Replayed samples may already be in a file (a crash between a flush and
// its WAL deletion): they are written again and reads keep one per
// timestamp.
func (h *histStore) replay() error {
	var sb labels.ScratchBuilder
	_, err := wal.Replay(filepath.Join(h.root, walDirName), func(seg int, p []byte) error {
		switch p[0] {
		case hrecHistograms:
			return decodeHistogramsRecord(p, func(ref uint64, hs []HistogramSample) error {
				st := h.seriesByRef(ref)
				if st == nil {
					return nil // the series is gone (retention)
				}
				for _, x := range hs {
					if st.insertLocked(x) {
						h.headSamples.Add(1)
					}
				}
				h.noteArrival()
				return nil
			})
		case hrecExemplars:
			return decodeExemplarsRecord(&sb, p, func(ref uint64, es []Exemplar) error {
				if st := h.seriesByRef(ref); st != nil {
					st.addExemplarsLocked(h, es)
				}
				return nil
			})
		case hrecMetadata:
			return decodeMetadataRecord(p, func(m NamedMetadata) {
				h.meta[m.Name] = m.Metadata
				h.metaDirty = true
			})
		}
		return fmt.Errorf("unknown histogram WAL record type %d in segment %08d", p[0], seg)
	})
	if err != nil {
		return fmt.Errorf("cannot replay histogram WAL: %w", err)
	}
	return nil
}

// seriesByRef returns (creating) the histogram state of a known series.
func (h *histStore) seriesByRef(ref uint64) *histSeries {
	h.smu.Lock()
	defer h.smu.Unlock()
	if st := h.series[ref]; st != nil {
		return st
	}
	h.s.mu.RLock()
	ms := h.s.byRef[ref]
	h.s.mu.RUnlock()
	if ms == nil {
		return nil
	}
	st := &histSeries{ref: ref, ms: ms, newest: noTime, newestMax: noTime}
	h.series[ref] = st
	return st
}

func (h *histStore) noteArrival() {
	h.smu.Lock()
	if h.oldest.IsZero() {
		h.oldest = h.s.now()
	}
	h.smu.Unlock()
}

// histVerdict checks one incoming sample against the series (mu held).
func (st *histSeries) checkLocked(x HistogramSample, oooMs int64) sampleVerdict {
	if i, ok := findHT(st.head, x.T); ok {
		_ = i
		if sameHistogram(st.head[i], x) {
			return verdictDuplicate
		}
		return verdictConflict
	}
	if st.hasFlushed && st.lastFlushed.T == x.T {
		if sameHistogram(st.lastFlushed, x) {
			return verdictDuplicate
		}
		return verdictConflict
	}
	if oooMs > 0 && st.newest != noTime && x.T < st.newest-oooMs {
		return verdictTooOld
	}
	return verdictAccept
}

// insertLocked adds x to the head keeping it sorted; false if its
// timestamp is already there (the first one stays).
func (st *histSeries) insertLocked(x HistogramSample) bool {
	i, ok := findHT(st.head, x.T)
	if ok {
		return false
	}
	st.head = slices.Insert(st.head, i, x)
	if st.newest == noTime || x.T > st.newest {
		st.newest = x.T
	}
	return true
}

func findHT(hs []HistogramSample, t int64) (int, bool) {
	n := len(hs)
	if n == 0 || hs[n-1].T < t {
		return n, false
	}
	return slices.BinarySearchFunc(hs, t, func(h HistogramSample, t int64) int { return cmpInt64(h.T, t) })
}

// addExemplarsLocked keeps the newest maxExemplarsKept exemplars, in the
// order received, dropping exact repeats of a kept one (senders resend).
func (st *histSeries) addExemplarsLocked(h *histStore, es []Exemplar) int {
	h.loadExemplarsLocked(st)
	added := 0
	for _, e := range es {
		if slices.ContainsFunc(st.exemplars, func(o Exemplar) bool {
			return o.T == e.T && math.Float64bits(o.Value) == math.Float64bits(e.Value) && labels.Equal(o.Labels, e.Labels)
		}) {
			continue
		}
		st.exemplars = append(st.exemplars, e)
		st.exNew++
		added++
	}
	if n := len(st.exemplars); n > maxExemplarsKept {
		st.exemplars = slices.Delete(st.exemplars, 0, n-maxExemplarsKept)
	}
	st.exNew = min(st.exNew, len(st.exemplars))
	return added
}

// loadExemplarsLocked reads the series' exemplar file once.
func (h *histStore) loadExemplarsLocked(st *histSeries) {
	if st.exLoaded {
		return
	}
	st.exLoaded = true
	old, rows, err := readExemplarFile(exemplarFilePath(h.s.dir, st.ref), maxExemplarsKept)
	if err != nil {
		h.s.log.Warn("cannot read exemplar file; starting it over", "ref", fmt.Sprintf("%016x", st.ref), "err", err)
		return
	}
	st.exemplars = append(old, st.exemplars...)
	st.exRows = rows
}

// validHistogram checks a histogram as Prometheus's TSDB does before
// appending it; stale markers are exempt (their counts are meaningless).
func validHistogram(x HistogramSample) error {
	if value.IsStaleNaN(x.Sum()) {
		return nil
	}
	if x.FH != nil {
		return x.FH.Validate()
	}
	if x.H == nil {
		return fmt.Errorf("neither integer nor float histogram")
	}
	return x.H.Validate()
}

// appendExtras implements Store.AppendExtras.
func (h *histStore) appendExtras(ctx context.Context, b ExtrasBatch) (ExtrasResult, error) {
	s := h.s
	var res ExtrasResult
	if err := ctxErr(ctx); err != nil {
		return res, err
	}
	s.appendMu.RLock()
	defer s.appendMu.RUnlock()
	if s.closed.Load() {
		return res, ErrClosed
	}
	if lim := s.opts.MaxHeadSamples; lim > 0 && h.headSamples.Load() > lim {
		return res, fmt.Errorf("%w: %d histograms wait in the head for flushing, limit %d", ErrOverloaded, h.headSamples.Load(), lim)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	addErr := func(err error) {
		if len(res.Errors) < maxResultErrors {
			res.Errors = append(res.Errors, err)
		}
	}
	oooMs := s.opts.OutOfOrderWindow.Milliseconds()
	var (
		canon     []byte
		newSeries []seriesRec
		logged    []*memSeries
		hrecs     []refHistograms
		erecs     []refExemplars
		acc       []histAccepted
		dups      int
	)
	for i := range b.Series {
		ss := &b.Series[i]
		if len(ss.Histograms) == 0 && len(ss.Exemplars) == 0 {
			continue
		}
		ms, _, err := s.getOrCreate(ss.Labels, &canon)
		if err != nil {
			res.HistogramsRejected += len(ss.Histograms)
			res.ExemplarsRejected += len(ss.Exemplars)
			addErr(err)
			continue
		}
		ms.mu.Lock()
		if !ms.walLogged {
			newSeries = append(newSeries, seriesRec{Ref: ms.ref, Created: ms.created, Labels: ms.lset})
			logged = append(logged, ms)
		}
		ms.mu.Unlock()
		st := h.seriesByRef(ms.ref)
		if st == nil {
			return ExtrasResult{}, fmt.Errorf("BUG: series %016x vanished", ms.ref)
		}
		var ok []HistogramSample
		st.mu.Lock()
		for _, x := range ss.Histograms {
			if err := validHistogram(x); err != nil {
				res.HistogramsRejected++
				addErr(fmt.Errorf("%w: series %s at %d: %v", ErrInvalidHistogram, ms.lset, x.T, err))
				continue
			}
			v := st.checkLocked(x, oooMs)
			if v == verdictAccept {
				for _, o := range ok {
					if o.T == x.T {
						v = verdictConflict
						if sameHistogram(o, x) {
							v = verdictDuplicate
						}
					}
				}
			}
			switch v {
			case verdictAccept:
				ok = append(ok, x)
			case verdictDuplicate:
				dups++
			case verdictConflict:
				res.HistogramsRejected++
				addErr(fmt.Errorf("%w: series %s histogram at %d", ErrDuplicateSample, ms.lset, x.T))
			case verdictTooOld:
				res.HistogramsRejected++
				addErr(fmt.Errorf("%w: series %s histogram at %d is more than %s behind its newest %d",
					ErrOutOfOrder, ms.lset, x.T, s.opts.OutOfOrderWindow, st.newest))
			}
		}
		st.mu.Unlock()
		if len(ok) > 0 {
			hrecs = append(hrecs, refHistograms{Ref: ms.ref, Samples: ok})
		}
		if len(ss.Exemplars) > 0 {
			erecs = append(erecs, refExemplars{Ref: ms.ref, Exemplars: ss.Exemplars})
		}
		acc = append(acc, histAccepted{st: st, hs: ok, es: ss.Exemplars})
	}
	md := b.Metadata[:0:0]
	for _, m := range b.Metadata {
		if m.Name != "" {
			md = append(md, NamedMetadata{Name: strings.Clone(m.Name), Metadata: Metadata{
				Type: m.Type, Unit: strings.Clone(m.Unit), Help: strings.Clone(m.Help)}})
		}
	}
	if len(hrecs) == 0 && len(erecs) == 0 && len(md) == 0 && len(newSeries) == 0 {
		res.HistogramsWritten = dups
		return res, nil
	}

	// Series definitions go to the main WAL (and from there the catalog),
	// durable before anything refers to them.
	if len(newSeries) > 0 {
		pos, err := s.wal.Append(appendSeriesRecords(nil, newSeries)...)
		if err != nil {
			return ExtrasResult{}, fmt.Errorf("append series to WAL: %w", err)
		}
		if s.opts.WALSync == SyncAlways {
			if err := s.wal.Sync(pos); err != nil {
				return ExtrasResult{}, fmt.Errorf("sync WAL: %w", err)
			}
		}
		for _, ms := range logged {
			ms.mu.Lock()
			ms.walLogged = true
			ms.mu.Unlock()
		}
	}
	var recs [][]byte
	for len(hrecs) > 0 {
		n, size := 0, 0
		for n < len(hrecs) && (n == 0 || size < maxRecordPayload) {
			size += len(hrecs[n].Samples) * 64
			n++
		}
		recs = append(recs, appendHistogramsRecord(nil, hrecs[:n]))
		hrecs = hrecs[n:]
	}
	if len(erecs) > 0 {
		recs = append(recs, appendExemplarsRecord(nil, erecs))
	}
	if len(md) > 0 {
		recs = append(recs, appendMetadataRecord(nil, md))
	}
	if len(recs) > 0 {
		pos, err := h.wal.Append(recs...)
		if err != nil {
			return ExtrasResult{}, fmt.Errorf("append to histogram WAL: %w", err)
		}
		if s.opts.WALSync == SyncAlways {
			if err := h.wal.Sync(pos); err != nil {
				return ExtrasResult{}, fmt.Errorf("sync histogram WAL: %w", err)
			}
		}
	}

	// Durable: into the heads.
	written, full := 0, false
	for _, a := range acc {
		st := a.st
		st.mu.Lock()
		for _, x := range a.hs {
			if st.insertLocked(x) {
				written++
			} else {
				dups++ // a concurrent batch stored this timestamp first
			}
		}
		full = full || len(st.head) >= h.s.opts.BlockRows
		res.ExemplarsWritten += len(a.es)
		st.addExemplarsLocked(h, a.es)
		st.mu.Unlock()
	}
	if len(md) > 0 {
		h.smu.Lock()
		for _, m := range md {
			h.meta[m.Name] = m.Metadata
		}
		h.metaDirty = true
		h.smu.Unlock()
		res.MetadataWritten = len(md)
	}
	h.headSamples.Add(int64(written))
	res.HistogramsWritten = written + dups
	if written > 0 || res.ExemplarsWritten > 0 || res.MetadataWritten > 0 {
		h.noteArrival()
	}
	if full {
		select {
		case h.flushCh <- struct{}{}:
		default:
		}
	}
	return res, nil
}

// histAccepted is one series' part of a batch that passed the checks.
type histAccepted struct {
	st *histSeries
	hs []HistogramSample
	es []Exemplar
}
