package actastore

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// maxResultErrors bounds AppendResult.Errors; the counts carry the rest.
const maxResultErrors = 8

// accepted is one series' samples of a batch that passed the checks.
type accepted struct {
	ms      *memSeries
	samples []Sample
}

// Append validates the batch, writes the accepted samples (and definitions
// of series new to the WAL) to the WAL as one group, waits until that group
// is durable per Options.WALSync, and then adds the samples to the head.
//
// Rejections are per series or per sample and do not fail the batch; they
// are counted in the result with a few example errors. A non-nil error
// (ErrClosed, a cancelled context before the WAL write, or an I/O failure)
// means nothing of the batch was acknowledged.
func (s *Store) Append(ctx context.Context, batch []SeriesSamples) (AppendResult, error) {
	var res Result
	if err := s.appendFloats(ctx, batch, &res); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{SamplesWritten: res.Samples.Written, SamplesRejected: res.Samples.Rejected, Errors: res.Errors}, nil
}

// appendFloats stores the float samples of batch, counting into res.
func (s *Store) appendFloats(ctx context.Context, batch []SeriesSamples, res *Result) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.appendMu.RLock()
	defer s.appendMu.RUnlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if lim := s.opts.MaxHeadSamples; lim > 0 && s.headSamples.Load() > lim {
		return fmt.Errorf("%w: %d samples wait in the head for flushing, limit %d", ErrOverloaded, s.headSamples.Load(), lim)
	}
	reject := func(n int, reason string, err error) {
		res.reject(&res.Samples, n, reason, err)
		s.m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	oooMs := s.opts.OutOfOrderWindow.Milliseconds()

	total := 0
	for i := range batch {
		total += len(batch[i].Samples)
	}
	// One slab for every accepted sample and one scratch buffer for label
	// encodings: a batch of 100k series costs a handful of allocations, not
	// a few per series.
	slab := make([]Sample, 0, total)
	var canon []byte
	var (
		acc       []accepted
		newSeries []seriesRec
		logged    []*memSeries // series whose definition this batch writes
		dups      int
	)
	for i := range batch {
		ss := &batch[i]
		if len(ss.Samples) == 0 {
			continue
		}
		ms, reason, err := s.getOrCreate(ss.Labels, &canon)
		if err != nil {
			reject(len(ss.Samples), reason, err)
			continue
		}
		ok := slab[len(slab) : len(slab) : len(slab)+len(ss.Samples)]
		ms.mu.Lock()
		if !ms.walLogged {
			newSeries = append(newSeries, seriesRec{Ref: ms.ref, Created: ms.created, Labels: ms.lset})
			logged = append(logged, ms)
		}
		for j, smp := range ss.Samples {
			v := ms.checkLocked(smp, oooMs)
			if v == verdictAccept {
				// Within the batch: a repeat of a timestamp accepted just
				// before is a duplicate or a conflict too. Batches are
				// normally sorted, so compare with the previous sample
				// and fall back to a scan only when out of order.
				v = checkWithin(ok, smp, j > 0 && ss.Samples[j-1].T < smp.T)
			}
			switch v {
			case verdictAccept:
				ok = append(ok, smp)
			case verdictDuplicate:
				dups++
			case verdictConflict:
				reject(1, ReasonDuplicate, fmt.Errorf("%w: series %s at %d", ErrDuplicateSample, ms.lset, smp.T))
			case verdictTooOld:
				reject(1, ReasonOutOfOrder, fmt.Errorf("%w: series %s sample at %d is more than %s behind its newest sample %d",
					ErrOutOfOrder, ms.lset, smp.T, s.opts.OutOfOrderWindow, ms.maxT))
			}
		}
		ms.mu.Unlock()
		if len(ok) > 0 {
			acc = append(acc, accepted{ms: ms, samples: ok})
			slab = slab[:len(slab)+len(ok)]
		}
	}
	if len(acc) == 0 && len(newSeries) == 0 {
		res.Samples.Written = dups
		s.m.duplicates.Add(float64(dups))
		return nil
	}

	// One write for the whole batch, then one (shared) fsync.
	recs := appendSeriesRecords(nil, newSeries)
	rs := make([]refSamples, len(acc))
	for i, a := range acc {
		rs[i] = refSamples{Ref: a.ms.ref, Samples: a.samples}
	}
	recs, _ = appendSamplesRecords(recs, nil, rs)
	pos, err := s.wal.Append(recs...)
	if err != nil {
		return fmt.Errorf("append batch to WAL: %w", err)
	}
	for _, ms := range logged {
		ms.mu.Lock()
		ms.walLogged = true
		ms.mu.Unlock()
	}
	if s.opts.WALSync == SyncAlways {
		start := time.Now()
		if err := s.wal.Sync(pos); err != nil {
			return fmt.Errorf("sync WAL: %w", err)
		}
		s.m.walFsync.Observe(time.Since(start).Seconds())
	}

	nowNs := s.now().UnixNano()
	written := 0
	for _, a := range acc {
		ms := a.ms
		ms.mu.Lock()
		wasEmpty := len(ms.head) == 0
		for _, smp := range a.samples {
			if ms.insertLocked(smp, pos.Segment, nowNs) {
				written++
			} else {
				// A concurrent batch stored this timestamp first; both are
				// in the WAL and replay keeps the first as well.
				dups++
			}
		}
		full := len(ms.head) >= s.opts.BlockRows && !ms.queued
		if full {
			ms.queued = true
		}
		if wasEmpty && len(ms.head) > 0 {
			s.headSeries.Add(1)
		}
		ms.mu.Unlock()
		if full {
			select {
			case s.flushCh <- ms:
			default:
				// The flusher is behind; its periodic scan picks the series
				// up by size as well.
				ms.mu.Lock()
				ms.queued = false
				ms.mu.Unlock()
			}
		}
	}
	s.headSamples.Add(int64(written))
	s.m.appended.Add(float64(written))
	s.m.duplicates.Add(float64(dups))
	res.Samples.Written = written + dups
	return nil
}

// checkWithin checks smp against the samples of its own batch already
// accepted for the series (sorted unless inOrder is false).
func checkWithin(ok []Sample, smp Sample, inOrder bool) sampleVerdict {
	if len(ok) == 0 {
		return verdictAccept
	}
	if inOrder && ok[len(ok)-1].T < smp.T {
		return verdictAccept
	}
	for _, o := range ok {
		if o.T == smp.T {
			if sameBits(o.V, smp.V) {
				return verdictDuplicate
			}
			return verdictConflict
		}
	}
	return verdictAccept
}

// getOrCreate returns the series for lset, creating it (not yet durable:
// the batch's WAL write makes it so) when new. scratch holds the label
// encoding between calls. On refusal it returns the rejection reason (the
// metric label) and an error wrapping ErrInvalidSeries or ErrTooManySeries.
func (s *Store) getOrCreate(lset labels.Labels, scratch *[]byte) (*memSeries, string, error) {
	if err := validateLabels(lset); err != nil {
		return nil, ReasonInvalidSeries, err
	}
	*scratch = appendCanonicalLabels((*scratch)[:0], lset)
	h := hashLabels(*scratch)
	s.mu.RLock()
	ms := s.lookupLocked(h, lset)
	s.mu.RUnlock()
	if ms != nil {
		return ms, "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms := s.lookupLocked(h, lset); ms != nil {
		return ms, "", nil
	}
	if s.opts.MaxSeries > 0 && len(s.byRef) >= s.opts.MaxSeries {
		return nil, ReasonTooManySeries, fmt.Errorf("%w: %d series stored, limit %d; refused %s", ErrTooManySeries, len(s.byRef), s.opts.MaxSeries, lset)
	}
	ref := s.newRefLocked(h)
	if ref != h {
		s.log.Warn("series label hash collision", "hash", fmt.Sprintf("%016x", h), "ref", fmt.Sprintf("%016x", ref), "labels", lset.String())
	}
	// Keep our own copy: the caller may reuse the label set's memory.
	ms = s.addSeriesLocked(ref, lset.Copy(), s.now().UnixMilli())
	s.pending = append(s.pending, ms)
	return ms, "", nil
}
