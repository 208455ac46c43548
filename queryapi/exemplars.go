package queryapi

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/acta-remote/acta-remote/actastore"
)

// exemplarQueryable is storage.ExemplarQueryable over the store's kept
// exemplars (the newest few per series, from remote write).
type exemplarQueryable struct{ st actastore.ExemplarQuerier }

func (e exemplarQueryable) ExemplarQuerier(ctx context.Context) (storage.ExemplarQuerier, error) {
	return exemplarQuerier{ctx: ctx, st: e.st}, nil
}

type exemplarQuerier struct {
	ctx context.Context
	st  actastore.ExemplarQuerier
}

// Select returns the exemplars in [start, end] (ms, inclusive) of the
// series matching any of the matcher sets, each series once, sorted by
// labels, as Prometheus's exemplar storage answers; an empty answer is an
// empty list, not null.
func (e exemplarQuerier) Select(start, end int64, sets ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	out := []exemplar.QueryResult{}
	seen := map[string]bool{}
	for _, ms := range sets {
		res, err := e.st.SelectExemplars(e.ctx, start, end, ms...)
		if err != nil {
			return nil, storeErr(err, "selecting exemplars")
		}
		for _, se := range res {
			key := se.Labels.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			qr := exemplar.QueryResult{SeriesLabels: se.Labels, Exemplars: make([]exemplar.Exemplar, len(se.Exemplars))}
			for i, x := range se.Exemplars {
				qr.Exemplars[i] = exemplar.Exemplar{Labels: x.Labels, Value: x.Value, Ts: x.T, HasTs: true}
			}
			out = append(out, qr)
		}
	}
	slices.SortFunc(out, func(a, b exemplar.QueryResult) int { return labels.Compare(a.SeriesLabels, b.SeriesLabels) })
	return out, nil
}
