package actastore

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// tierMetrics are the object-storage tier's metrics (docs/object-storage.md,
// "Metrics"; docs/metrics.md).
type tierMetrics struct {
	uploads               *prometheus.CounterVec
	uploadedBytes         prometheus.Counter
	uploadSeconds         prometheus.Histogram
	lag                   prometheus.Gauge
	pendingFiles          prometheus.Gauge
	pendingBytes          prometheus.Gauge
	bucketOnly            prometheus.Gauge
	localDeleted          prometheus.Counter
	localDeletedBytes     prometheus.Counter
	publications          *prometheus.CounterVec
	lastPublish           prometheus.Gauge
	unpublished           prometheus.Gauge
	blocked               prometheus.Gauge
	failures              prometheus.Gauge
	cycles                prometheus.Counter
	lastCycle             prometheus.Gauge
	cycleSeconds          prometheus.Histogram
	restored              prometheus.Counter
	readErrors            prometheus.Counter
	queryBytes            prometheus.Histogram
	queryBlocks           prometheus.Counter
	objectsDeleted        prometheus.Counter
	expired               prometheus.Counter
	retentionDeleted      prometheus.Counter
	retentionDeletedBytes prometheus.Counter
	retentionBlocked      prometheus.Counter
}

func newTierMetrics(reg prometheus.Registerer) (*tierMetrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &tierMetrics{
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acta_tier_uploads_total",
			Help: "Series file uploads by result: ok (uploaded and verified by size and CRC-32C read back), error (retried next cycle)."}, []string{"result"}),
		uploadedBytes: c("acta_tier_uploaded_bytes_total", "Bytes of series files uploaded and verified."),
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "acta_tier_upload_duration_seconds",
			Help: "Time to upload and verify one series file.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 9)}),
		lag: g("acta_tier_upload_lag_seconds",
			"Age of the oldest file waiting for upload, from when it stopped taking data (sealed, or its period ended): grows while the bucket is down. 0 when nothing waits."),
		pendingFiles:      g("acta_tier_pending_files", "Files waiting for upload (sealed but not compacted yet, or not uploaded yet)."),
		pendingBytes:      g("acta_tier_pending_bytes", "Bytes of the files waiting for upload."),
		bucketOnly:        g("acta_tier_bucket_only_files", "Files whose local copy is gone: reads fetch their blocks from the bucket."),
		localDeleted:      c("acta_tier_local_deleted_files_total", "Local copies of uploaded, verified and published files deleted (local retention, or rotation.retention.max_size)."),
		localDeletedBytes: c("acta_tier_local_deleted_bytes_total", "Allocated bytes those local copies freed."),
		publications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acta_tier_index_publications_total",
			Help: "Index objects published, by type (full, delta) and result."}, []string{"type", "result"}),
		lastPublish: g("acta_tier_last_publish_timestamp_seconds", "When the last index object was published."),
		unpublished: g("acta_tier_unpublished_records", "Uploads and removals no published index object holds yet."),
		blocked:     g("acta_tier_publishing_blocked", "1 when publishing is refused: the bucket holds index objects of this instance_id that this data directory has no manifest of."),
		failures:    g("acta_tier_consecutive_failed_cycles", "Upload cycles in a row with a bucket error (the next one waits a doubling backoff)."),
		cycles:      c("acta_tier_cycles_total", "Upload cycles run."),
		lastCycle:   g("acta_tier_last_cycle_timestamp_seconds", "When the last upload cycle ended."),
		cycleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "acta_tier_cycle_duration_seconds",
			Help: "Duration of an upload cycle.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		restored:   c("acta_tier_restored_files_total", "Files copied back from the bucket before a change (a late sample for an uploaded newest file, a deletion rewriting one)."),
		readErrors: c("acta_tier_read_errors_total", "Bucket files that could not be opened or read (the query fails naming the object)."),
		queryBytes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "acta_tier_query_fetched_bytes",
			Help: "Bytes of series file blocks fetched from the bucket per Select (remote read query, query API selector).", Buckets: prometheus.ExponentialBuckets(1024, 4, 12)}),
		queryBlocks:           c("acta_tier_query_fetched_blocks_total", "Series file blocks fetched from the bucket by Selects."),
		objectsDeleted:        c("acta_tier_objects_deleted_total", "Objects this writer deleted: replaced by a rewritten file, removed from the index, or named by no index."),
		expired:               c("acta_tier_expired_files_total", "Files dropped from their series for the bucket retention horizon."),
		retentionDeleted:      c("acta_tier_retention_deleted_objects_total", "Objects bucket retention deleted (the retention owner only)."),
		retentionDeletedBytes: c("acta_tier_retention_deleted_bytes_total", "Bytes of those objects."),
		retentionBlocked:      c("acta_tier_retention_kept_unuploaded_total", "Files rotation.retention.max_size would have deleted but kept: not uploaded and published yet."),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.uploads, m.uploadedBytes, m.uploadSeconds, m.lag, m.pendingFiles, m.pendingBytes,
			m.bucketOnly, m.localDeleted, m.localDeletedBytes, m.publications, m.lastPublish, m.unpublished, m.blocked, m.failures,
			m.cycles, m.lastCycle, m.cycleSeconds, m.restored, m.readErrors, m.queryBytes, m.queryBlocks, m.objectsDeleted, m.expired,
			m.retentionDeleted, m.retentionDeletedBytes, m.retentionBlocked} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("register tier metrics: %w", err)
			}
		}
	}
	return m, nil
}
