package queryapi

import (
	"context"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// Series and label lookups (/api/v1/series, /api/v1/labels,
// /api/v1/label/<name>/values). Without start and end (Prometheus's API
// then asks for v1.MinTime..v1.MaxTime) they are answered by the label
// index alone: every series the store holds (a series whose last file
// retention deleted leaves the index). With a bounded range they
// are answered from a RangeIndex when the store has one, else by selecting
// the range and keeping the series that have a sample in it.

var (
	minTimeMs = timestamp.FromTime(v1.MinTime)
	maxTimeMs = timestamp.FromTime(v1.MaxTime)
)

// unbounded reports whether [mint, maxt] covers all time, as the API's
// defaults for a missing start and end do.
func unbounded(mint, maxt int64) bool {
	return mint <= minTimeMs && maxt >= maxTimeMs || mint == math.MinInt64 && maxt == math.MaxInt64
}

// seriesLabels returns the label sets, sorted, of the series matching ms
// with samples in [mint, maxt].
func (q *querier) seriesLabels(ctx context.Context, mint, maxt int64, ms []*labels.Matcher) ([]labels.Labels, error) {
	var (
		lsets []labels.Labels
		err   error
	)
	switch {
	case unbounded(mint, maxt):
		lsets, err = q.st.Series(ctx, ms...)
	case q.rangeIdx != nil:
		lsets, err = q.rangeIdx.SeriesInRange(ctx, mint, maxt, ms...)
	default:
		lsets, err = q.scanSeries(ctx, mint, maxt, ms)
	}
	return lsets, storeErr(err, "looking up series")
}

// scanSeries selects [mint, maxt] and keeps the label sets of the series
// with a sample in it; the store loads one series at a time, so this holds
// one series' range in memory, plus the label sets.
func (q *querier) scanSeries(ctx context.Context, mint, maxt int64, ms []*labels.Matcher) ([]labels.Labels, error) {
	ss := q.st.Select(ctx, mint, maxt, ms...)
	defer ss.Close()
	var out []labels.Labels
	for ss.Next() {
		out = append(out, ss.At().Labels()) // Select returns only series with samples
	}
	return out, ss.Err()
}

// LabelNames implements storage.LabelQuerier.
func (q *querier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var names []string
	if unbounded(q.mint, q.maxt) {
		var err error
		if names, err = q.st.LabelNames(ctx, ms...); err != nil {
			return nil, nil, storeErr(err, "looking up label names")
		}
	} else {
		lsets, err := q.seriesLabels(ctx, q.mint, q.maxt, ms)
		if err != nil {
			return nil, nil, err
		}
		set := map[string]struct{}{}
		for _, ls := range lsets {
			ls.Range(func(l labels.Label) { set[l.Name] = struct{}{} })
		}
		names = sortedKeys(set)
	}
	return limitStrings(names, hints), nil, nil
}

// LabelValues implements storage.LabelQuerier.
func (q *querier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var vals []string
	if unbounded(q.mint, q.maxt) {
		var err error
		if vals, err = q.st.LabelValues(ctx, name, ms...); err != nil {
			return nil, nil, storeErr(err, "looking up label values")
		}
	} else {
		lsets, err := q.seriesLabels(ctx, q.mint, q.maxt, ms)
		if err != nil {
			return nil, nil, err
		}
		set := map[string]struct{}{}
		for _, ls := range lsets {
			if v := ls.Get(name); v != "" {
				set[v] = struct{}{}
			}
		}
		vals = sortedKeys(set)
	}
	return limitStrings(vals, hints), nil, nil
}

func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// limitStrings keeps the first hints.Limit of sorted ss (the API asks for
// one more than its limit, to tell whether it truncated).
func limitStrings(ss []string, hints *storage.LabelHints) []string {
	if hints != nil && hints.Limit > 0 && len(ss) > hints.Limit {
		return ss[:hints.Limit]
	}
	return ss
}
