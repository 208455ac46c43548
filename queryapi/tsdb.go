package queryapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/acta-remote/acta-remote/actastore"
)

// SeriesDeleter is implemented by a store that can delete series:
// /api/v1/admin/tsdb/delete_series calls it once per match[] set.
// DeleteSeries removes the samples in [mint, maxt] (ms, inclusive; the
// endpoint's defaults cover all time) of every series matching ms and
// returns how many series it touched. A series left without samples
// leaves the catalog and the label index; files wholly inside the range
// are deleted, files partly inside are rewritten without the range. The
// deletion is durable when it returns (it survives kill -9), and a later
// remote write of the same series starts it afresh.
type SeriesDeleter interface {
	DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (deleted int, err error)
}

// StatsReader is implemented by a store that reports its counters; its
// head series stand in for Prometheus's head chunks (one open buffer per
// series with unflushed samples) in /api/v1/status/tsdb.
type StatsReader interface {
	Stats() actastore.StoreStats
}

// tsdbAdmin is v1.TSDBAdminStats: cardinality statistics from the label
// index, and series deletion when the store can delete.
type tsdbAdmin struct {
	st      Reader
	del     SeriesDeleter // nil: the store cannot delete
	timeout time.Duration // bounds Stats, which gets no context
	log     *slog.Logger
}

// errNoDeletion: the store cannot delete series (it lacks DeleteSeries).
var errNoDeletion = errors.New("this store cannot delete series")

// errNoSnapshots: Prometheus's TSDB snapshots have no counterpart here;
// the series files are plain Acta files, copied as they are.
var errNoSnapshots = errors.New("snapshots are not supported: copy the data directory's series files instead")

func (a *tsdbAdmin) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	if a.del == nil {
		return errNoDeletion
	}
	n, err := a.del.DeleteSeries(ctx, mint, maxt, ms...)
	if err != nil {
		return fmt.Errorf("cannot delete series %v in [%d, %d]: %w", ms, mint, maxt, err)
	}
	a.log.Info("deleted series", "matchers", fmt.Sprint(ms), "mint", mint, "maxt", maxt, "series", n)
	return nil
}

// CleanTombstones has nothing to do: deletion rewrites files, it leaves
// no tombstones.
func (a *tsdbAdmin) CleanTombstones() error { return nil }

func (a *tsdbAdmin) Snapshot(string, bool) error { return errNoSnapshots }

func (a *tsdbAdmin) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return tsdb.WALReplayStatus{}, nil
}

func (a *tsdbAdmin) BlockMetas() ([]tsdb.BlockMeta, error) { return nil, nil }

// Stats computes what Prometheus's head postings report
// (index.MemPostings.Stats) from the label index: series per value of
// label (the metric name), distinct values per label name, bytes of label
// text per label name (labels.SizeOfLabels: name and value lengths times
// the series carrying them), series per label pair, each the top limit by
// count, and the number of distinct label pairs. The series are walked one
// metric name at a time, so memory holds one name's label sets plus a
// count per label pair. MinTime and MaxTime are 0: the index does not
// know the stored samples' range.
func (a *tsdbAdmin) Stats(label string, limit int) (*tsdb.Stats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	names, err := a.st.LabelValues(ctx, labels.MetricName)
	if err != nil {
		return nil, fmt.Errorf("cannot list metric names: %w", err)
	}
	pairs := map[string]map[string]uint64{} // label name → value → series
	var numSeries uint64
	for _, name := range names {
		lsets, err := a.st.Series(ctx, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
		if err != nil {
			return nil, fmt.Errorf("cannot list the series of %s: %w", name, err)
		}
		numSeries += uint64(len(lsets))
		for _, ls := range lsets {
			ls.Range(func(l labels.Label) {
				vals := pairs[l.Name]
				if vals == nil {
					vals = map[string]uint64{}
					pairs[l.Name] = vals
				}
				vals[l.Value]++
			})
		}
	}
	var metrics, valueCounts, sizes, pairCounts []index.Stat
	numPairs := 0
	for n, vals := range pairs {
		valueCounts = append(valueCounts, index.Stat{Name: n, Count: uint64(len(vals))})
		numPairs += len(vals)
		var size uint64
		for v, c := range vals {
			if n == label {
				metrics = append(metrics, index.Stat{Name: v, Count: c})
			}
			pairCounts = append(pairCounts, index.Stat{Name: n + "=" + v, Count: c})
			size += labels.SizeOfLabels(n, v, c)
		}
		sizes = append(sizes, index.Stat{Name: n, Count: size})
	}
	return &tsdb.Stats{
		NumSeries: numSeries,
		IndexPostingStats: &index.PostingsStats{
			CardinalityMetricsStats: top(metrics, limit),
			CardinalityLabelStats:   top(valueCounts, limit),
			LabelValueStats:         top(sizes, limit),
			LabelValuePairsStats:    top(pairCounts, limit),
			NumLabelPairs:           numPairs,
		},
	}, nil
}

// top returns the limit largest by count, largest first; ties by name, so
// the answer does not change from one call to the next (Prometheus's
// order among ties follows its map iteration).
func top(stats []index.Stat, limit int) []index.Stat {
	slices.SortFunc(stats, func(a, b index.Stat) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(stats) > limit {
		stats = stats[:limit]
	}
	return stats
}
