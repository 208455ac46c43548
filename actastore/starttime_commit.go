package actastore

import "slices"

// Why a start timestamp is dropped (its sample is kept): the "reason"
// label of acta_store_start_timestamps_dropped_total. The rules are those
// of Prometheus's head appender for a start timestamp
// (tsdb/head_append_v2.go, bestEffortAppendSTZeroSample in v0.316.0): it
// ignores one at or after its sample (storage.ErrSTNewerThanSample) and one
// below the oldest time it accepts (storage.ErrOutOfBounds), and always
// appends the sample. A start timestamp of 0 is "none given" (the protobuf
// default), neither stored nor counted. Nothing else bounds it: a start
// timestamp before its sample is never beyond max_future when the sample
// is not.
const (
	StartReasonNotBeforeSample = "not_before_sample"
	StartReasonOutOfBounds     = "out_of_bounds"
	numStartReasons            = 2
)

var startReasons = [numStartReasons]string{StartReasonNotBeforeSample, StartReasonOutOfBounds}

// startVerdict is the index in startReasons of why st of the sample at t
// is dropped, -1 when it is stored.
func startVerdict(st, t, minT int64) int {
	switch {
	case st >= t:
		return 0
	case st < minT:
		return 1
	}
	return -1
}

// countStarts adds what the batch stored and dropped of start timestamps
// to the metrics.
func (t *txn) countStarts() {
	if n := len(t.fsts) + len(t.hsts); n > 0 {
		t.s.m.startsStored.Add(float64(n))
	}
	for i, n := range t.stDropped {
		if n > 0 {
			t.s.m.startsDropped.WithLabelValues(startReasons[i]).Add(float64(n))
		}
	}
}

// acceptedStarts appends to dst, sorted by T, the start timestamps of in
// that belong to an accepted sample of acc (the series' accepted samples
// of this batch, in batch order) and pass startVerdict; the others are
// counted. Entries for rejected samples go with them, uncounted.
func acceptedStarts[S any](k kind[S], t *txn, dst, in []StartTime, acc []S) []StartTime {
	base := len(dst)
	minT := t.s.opts.MinTimestamp
	ts := make([]int64, len(acc))
	for i, s := range acc {
		ts[i] = k.ts(s)
	}
	slices.Sort(ts)
	for _, st := range in {
		if st.ST == 0 {
			continue
		}
		if _, ok := slices.BinarySearch(ts, st.T); !ok {
			continue
		}
		if r := startVerdict(st.ST, st.T, minT); r >= 0 {
			t.stDropped[r]++
			continue
		}
		dst = append(dst, st)
	}
	mine := sortStarts(dst[base:])
	return dst[:base+len(mine)]
}
