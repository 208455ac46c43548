package actastore

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// SeriesInRange returns the label sets, sorted, of the series matching ms
// that may hold a float sample or native histogram in [mint, maxt] (ms,
// inclusive), from what the store knows without reading a file: the head,
// the flushing buffer, the file starts (a file holds only samples below
// the next file's start), the smallest timestamp known of a file and the
// newest of a track's files. It is a superset, at file granularity, of the
// series Select finds samples of (as Prometheus's TSDB answers a series
// look-up from block and chunk bounds), never a series less; the query
// API's series and label look-ups with a time range use it
// (queryapi.RangeIndex). ErrQueryLimit above Options.MaxQuerySeries
// matching series.
func (s *Store) SeriesInRange(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	list := s.matchSeries(ms)
	if s.opts.MaxQuerySeries > 0 && len(list) > s.opts.MaxQuerySeries {
		return nil, fmt.Errorf("%w: %d series match, limit %d", ErrQueryLimit, len(list), s.opts.MaxQuerySeries)
	}
	var in []*memSeries
	for i, m := range list {
		if i%1024 == 0 {
			if err := ctxErr(ctx); err != nil {
				return nil, err
			}
		}
		m.mu.Lock()
		may := mayHold(floats, floats.track(m, false), mint, maxt) || mayHold(histograms, histograms.track(m, false), mint, maxt)
		m.mu.Unlock()
		if may {
			in = append(in, m)
		}
	}
	_, out := s.sortByLabels(in)
	return out, nil
}

// mayHold reports whether a track may hold a sample in [mint, maxt] (the
// series' mu held).
func mayHold[S any](k kind[S], tr *track[S], mint, maxt int64) bool {
	if tr == nil {
		return false
	}
	if lo, hi, ok := tr.head.bounds(k); ok && lo <= maxt && hi >= mint && len(tr.head.inRange(k, nil, mint, maxt)) > 0 {
		return true
	}
	for _, smp := range tr.flushingBuf() {
		if t := k.ts(smp); t >= mint && t <= maxt {
			return true
		}
	}
	if fmax, known := tr.fileMax(); len(tr.files()) == 0 || known && (fmax == noTime || fmax < mint) {
		return false // no file holds a sample at or above mint
	}
	return len(filesInRange(tr, mint, maxt)) > 0
}
