package queryapi

import (
	"context"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/acta-remote/acta-remote/actastore"
)

// Reader is what the query API needs of the store (*actastore.Store):
// Select for samples, and lookups answered from the label index alone,
// without reading any sample file, over every series the store holds.
type Reader interface {
	actastore.Querier
	// LabelNames returns the sorted label names of the series matching ms
	// (of every series without matchers).
	LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error)
	// LabelValues returns the sorted values of label name among the series
	// matching ms.
	LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error)
	// Series returns the sorted label sets of the series matching ms.
	Series(ctx context.Context, ms ...*labels.Matcher) ([]labels.Labels, error)
}

// RangeIndex is implemented by a store whose index knows, without reading
// sample files, which series may hold samples in [mint, maxt] (ms,
// inclusive): a superset at the granularity the index keeps (as
// Prometheus's TSDB answers from block and chunk bounds), never a series
// less. Without it, a series or label lookup with a bounded time range
// selects the range's samples to find the series that have some.
type RangeIndex interface {
	SeriesInRange(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]labels.Labels, error)
}

// queryable is storage.SampleAndChunkQueryable over the store.
type queryable struct {
	st       Reader
	rangeIdx RangeIndex // nil when the store has none
}

func newQueryable(st Reader) *queryable {
	q := &queryable{st: st}
	q.rangeIdx, _ = st.(RangeIndex)
	return q
}

// Querier implements storage.Queryable.
func (q *queryable) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{queryable: q, mint: mint, maxt: maxt}, nil
}

// ChunkQuerier implements storage.ChunkQueryable, which web/api/v1 wants
// for its remote read handler; that route is never mounted (remoteread
// serves /api/v1/read), so this only converts.
func (q *queryable) ChunkQuerier(mint, maxt int64) (storage.ChunkQuerier, error) {
	return &chunkQuerier{querier{queryable: q, mint: mint, maxt: maxt}}, nil
}

// querier is one query's view of the store. The engine closes it when the
// query ends; the store's series sets opened meanwhile are closed then.
type querier struct {
	*queryable
	mint, maxt int64

	mu   sync.Mutex
	sets []actastore.SeriesSet
}

// Select implements storage.Querier. The store always returns series
// sorted by labels, so sortSeries needs nothing. hints.Start and End
// narrow the range to what the selector needs (lookback, range, offset),
// as Prometheus's TSDB uses them; hints.Func "series" asks for label sets
// only (/api/v1/series), which the label index answers.
func (q *querier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt, limit := q.mint, q.maxt, 0
	if hints != nil {
		mint, maxt, limit = hints.Start, hints.End, hints.Limit
		if hints.Func == "series" {
			lsets, err := q.seriesLabels(ctx, mint, maxt, ms)
			if err != nil {
				return storage.ErrSeriesSet(err)
			}
			if limit > 0 && len(lsets) > limit {
				lsets = lsets[:limit]
			}
			return &labelsSet{lsets: lsets, i: -1}
		}
	}
	ss := q.st.Select(ctx, mint, maxt, ms...)
	q.mu.Lock()
	q.sets = append(q.sets, ss)
	q.mu.Unlock()
	return &seriesSet{ss: ss, limit: limit}
}

// Close implements storage.Querier.
func (q *querier) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ss := range q.sets {
		ss.Close()
	}
	q.sets = nil
	return nil
}

// seriesSet is storage.SeriesSet over the store's SeriesSet.
type seriesSet struct {
	ss    actastore.SeriesSet
	limit int // 0: none
	n     int
}

func (s *seriesSet) Next() bool {
	if s.limit > 0 && s.n >= s.limit {
		return false
	}
	if !s.ss.Next() {
		return false
	}
	s.n++
	return true
}

func (s *seriesSet) At() storage.Series                { return &series{s: s.ss.At()} }
func (s *seriesSet) Err() error                        { return storeErr(s.ss.Err(), "selecting series") }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// series is storage.Series over one of the store's series.
type series struct{ s actastore.Series }

func (s *series) Labels() labels.Labels { return s.s.Labels() }

// Iterator reads the series' samples into the engine's point form each
// time it is called, into the buffers of the iterator it is handed back:
// the engine iterates a selector's series one after another, so one
// series' points are held twice (the store's copy and the engine's), and
// a query allocates them about once.
func (s *series) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	return iteratorOf(s.s, reuse)
}

// labelsSet is a storage.SeriesSet of label sets without samples.
type labelsSet struct {
	lsets []labels.Labels
	i     int
}

func (s *labelsSet) Next() bool                        { s.i++; return s.i < len(s.lsets) }
func (s *labelsSet) At() storage.Series                { return labelsOnly{s.lsets[s.i]} }
func (s *labelsSet) Err() error                        { return nil }
func (s *labelsSet) Warnings() annotations.Annotations { return nil }

type labelsOnly struct{ lset labels.Labels }

func (l labelsOnly) Labels() labels.Labels                        { return l.lset }
func (l labelsOnly) Iterator(chunkenc.Iterator) chunkenc.Iterator { return chunkenc.NewNopIterator() }

// chunkQuerier encodes Select's series as chunks (see ChunkQuerier).
type chunkQuerier struct{ q querier }

func (c *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.ChunkSeriesSet {
	return storage.NewSeriesSetToChunkSet(c.q.Select(ctx, sortSeries, hints, ms...))
}

func (c *chunkQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return c.q.LabelValues(ctx, name, hints, ms...)
}

func (c *chunkQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return c.q.LabelNames(ctx, hints, ms...)
}

func (c *chunkQuerier) Close() error { return c.q.Close() }
