package rotation

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are rotation's Prometheus metrics; the store updates them.
type Metrics struct {
	FilesCreated      *prometheus.CounterVec // by reason: first, period, size
	Compactions       *prometheus.CounterVec // by result: done, skipped, error
	CompactionSeconds prometheus.Histogram
	CompactedIn       prometheus.Counter // allocated bytes before
	CompactedOut      prometheus.Counter // allocated bytes after
	DuplicatesDropped prometheus.Counter
	Deleted           *prometheus.CounterVec // files by reason: age, size
	DeletedBytes      prometheus.Counter
	SeriesRemoved     prometheus.Counter
	PendingCompaction prometheus.Gauge
	LastRun           prometheus.Gauge
	// Merges counts tier merges by tier (0, 1, ...) and result; MergedFiles
	// the input files they replaced.
	Merges      *prometheus.CounterVec
	MergedFiles prometheus.Counter
	// Written is the apparent bytes compactions and merges wrote (write
	// amplification: this plus what flushes wrote, over what is kept).
	Written prometheus.Counter
}

// NewMetrics builds the metrics and registers them on reg (nil: none).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		FilesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_rotation_files_created_total", Help: "Series files started, by reason (first, period, size).",
		}, []string{"reason"}),
		Compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_rotation_compactions_total", Help: "Sealed-file compactions, by result (done, skipped: already compact, error).",
		}, []string{"result"}),
		CompactionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "acta_rotation_compaction_duration_seconds", Help: "Duration of one sealed-file compaction, pacing included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		CompactedIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_compaction_input_bytes_total", Help: "Allocated bytes of files before compaction.",
		}),
		CompactedOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_compaction_output_bytes_total", Help: "Allocated bytes of the same files after compaction.",
		}),
		DuplicatesDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_compaction_duplicates_dropped_total", Help: "Repeated timestamps dropped by compaction (the first stored is kept).",
		}),
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_rotation_retention_deleted_files_total", Help: "Series files deleted by retention, by reason (age, size).",
		}, []string{"reason"}),
		DeletedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_retention_deleted_bytes_total", Help: "Allocated bytes freed by retention.",
		}),
		SeriesRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_series_removed_total", Help: "Series removed from the catalog after retention deleted their last file.",
		}),
		PendingCompaction: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "acta_rotation_compaction_pending_files", Help: "Sealed files found not compact at the last maintenance pass, not yet done.",
		}),
		LastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "acta_rotation_last_run_timestamp_seconds", Help: "End of the last maintenance pass (retention then compaction).",
		}),
		Merges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_rotation_merges_total", Help: "Tier merges of sealed files into one, by tier (0: the first of rotation.compaction.tiers) and result (done, error, stale: the files changed meanwhile, retried next pass).",
		}, []string{"tier", "result"}),
		MergedFiles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_merged_files_total", Help: "Sealed files replaced by tier merges.",
		}),
		Written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_rotation_compaction_written_bytes_total", Help: "Bytes (apparent) written by compactions and tier merges.",
		}),
	}
	for _, r := range []string{ReasonFirst, ReasonPeriod, ReasonSize} {
		m.FilesCreated.WithLabelValues(r)
	}
	for _, r := range []string{"done", "skipped", "error"} {
		m.Compactions.WithLabelValues(r)
	}
	for _, r := range []string{ReasonAge, ReasonSizeCap} {
		m.Deleted.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.FilesCreated, m.Compactions, m.CompactionSeconds, m.CompactedIn,
			m.CompactedOut, m.DuplicatesDropped, m.Deleted, m.DeletedBytes, m.SeriesRemoved, m.PendingCompaction, m.LastRun,
			m.Merges, m.MergedFiles, m.Written} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register rotation metrics: %w", err)
			}
		}
	}
	return m, nil
}
