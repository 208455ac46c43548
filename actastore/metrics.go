package actastore

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's own Prometheus metrics, registered on
// Options.Registerer when it is set. Without a registerer they are still
// updated (cheaply) and simply not exported.
type metrics struct {
	walFsync        prometheus.Histogram
	walBytes        prometheus.GaugeFunc
	headSeries      prometheus.GaugeFunc
	headSamples     prometheus.GaugeFunc
	series          prometheus.GaugeFunc
	openWriters     prometheus.GaugeFunc
	flushDuration   prometheus.Histogram
	flushedSamples  prometheus.Counter
	flushErrors     prometheus.Counter
	sizeFlushes     prometheus.Counter
	flushedBytes    prometheus.Counter
	appended        prometheus.Counter
	histAppended    prometheus.Counter
	headBytes       prometheus.GaugeFunc
	labelsSorted    prometheus.Counter
	duplicates      prometheus.Counter
	startsStored    prometheus.Counter
	startsDropped   *prometheus.CounterVec
	rejected        *prometheus.CounterVec
	walTruncations  prometheus.Counter
	checkpoints     prometheus.Counter
	checkpointBytes prometheus.Gauge
	replayedSamples prometheus.Counter
	warmedReaders   prometheus.Counter
	walErrors       prometheus.Counter
	headOldest      prometheus.GaugeFunc
	openReaders     prometheus.GaugeFunc
	readerHits      prometheus.CounterFunc
	readerMisses    prometheus.CounterFunc
	chunkCache      []prometheus.Collector // xorcache.go
	fsFree, fsSize  prometheus.GaugeFunc
}

func newMetrics(s *Store, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		walFsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "acta_store_wal_fsync_duration_seconds",
			Help:    "Duration of WAL group-commit fsyncs.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		walBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_wal_bytes", Help: "Bytes in live WAL segments.",
		}, func() float64 { return float64(s.wal.Size()) }),
		headSeries: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_head_series", Help: "Series with unflushed samples in the head.",
		}, func() float64 { return float64(s.hd.series.Load()) }),
		headSamples: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_head_samples", Help: "Unflushed items (float samples and native histograms) in the head.",
		}, func() float64 { return float64(s.hd.samples.Load()) }),
		headBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_head_bytes", Help: "Memory the head's unflushed items take, as storage.max_head_bytes counts it.",
		}, func() float64 { return float64(s.hd.bytes.Load()) }),
		series: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_series", Help: "Series in the catalog.",
		}, func() float64 { return float64(s.reg.num.Load()) }),
		openWriters: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "acta_store_open_writers", Help: "Open series file writers (bounded by max_open_files).",
		}, func() float64 { return float64(s.writers.open()) }),
		flushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "acta_store_flush_duration_seconds",
			Help:    "Duration of flushing one series' head into its file.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		flushedSamples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_flushed_samples_total", Help: "Samples and histograms written from the head into series files.",
		}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_flush_errors_total", Help: "Failed series flushes (retried later; the WAL keeps the data).",
		}),
		flushedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_flushed_bytes_total", Help: "Bytes flushes appended to series files (write amplification: this plus acta_rotation_compaction_written_bytes_total, over what the files hold).",
		}),
		sizeFlushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_head_size_flushes_total", Help: "Series flushed because the whole head outgrew a sixteenth of storage.max_head_bytes, or 512 bytes a series with a head if more, up to half of it, or half of storage.max_head_samples (largest heads first).",
		}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_samples_appended_total", Help: "Float samples accepted and made durable.",
		}),
		histAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_histograms_appended_total", Help: "Native histogram samples accepted and made durable.",
		}),
		labelsSorted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_series_labels_sorted_total", Help: "Series sent with their labels out of order and sorted into their canonical series.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_samples_duplicate_dropped_total", Help: "Exact duplicates (samples and histograms) dropped silently.",
		}),
		startsStored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_start_timestamps_stored_total", Help: "Start timestamps of samples and histograms stored with them.",
		}),
		startsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_store_start_timestamps_dropped_total", Help: "Start timestamps dropped (their samples kept), by reason: not_before_sample (at or after its sample), out_of_bounds (below storage.min_timestamp).",
		}, []string{"reason"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_store_samples_rejected_total", Help: "Samples, histograms and exemplars refused, by reason.",
		}, []string{"reason"}),
		walTruncations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_wal_truncations_total", Help: "WAL truncations that deleted segments.",
		}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_wal_checkpoints_total", Help: "WAL checkpoints written (the heads, so that the WAL segments before them could be deleted).",
		}),
		checkpointBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "acta_store_wal_checkpoint_bytes", Help: "Size of the live WAL checkpoint in bytes; 0 without one.",
		}),
		replayedSamples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_wal_replayed_samples_total", Help: "Samples restored into the head from the WAL at start-up.",
		}),
		warmedReaders: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_store_readers_warmed_total", Help: "Series files opened into the reader cache in the background after start-up (Options.WarmReaders); also counted as reader cache misses.",
		}),
	}
	m.walErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "acta_store_wal_errors_total", Help: "WAL appends or fsyncs that failed (the request was not acknowledged; after a failed fsync the WAL refuses appends until a restart).",
	})
	m.headOldest = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "acta_store_head_oldest_age_seconds", Help: "Age of the oldest unflushed head sample's arrival, as of the flusher's last scan: how far flushing lags.",
	}, func() float64 {
		since := s.hd.oldestSince.Load()
		if since == 0 {
			return 0
		}
		return float64(s.now().UnixNano()-since) / 1e9
	})
	m.openReaders = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "acta_store_open_readers", Help: "Series file readers kept open between reads (bounded by Options.MaxOpenReaders).",
	}, func() float64 { n, _ := s.readers.stats(); return float64(n) })
	m.readerHits = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "acta_store_reader_cache_hits_total", Help: "Series file reads that reused an open reader.",
	}, func() float64 { return float64(s.readers.hits.Load()) })
	m.readerMisses = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "acta_store_reader_cache_misses_total", Help: "Series file reads that had to open the file (discovering its blocks).",
	}, func() float64 { return float64(s.readers.misses.Load()) })
	m.chunkCache = chunkCacheMetrics(func() *readerCache { return s.readers })
	m.fsFree = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "acta_store_filesystem_free_bytes", Help: "Bytes available to the server on the data directory's file system.",
	}, func() float64 { free, _ := fsSpace(s.dir); return float64(free) })
	m.fsSize = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "acta_store_filesystem_size_bytes", Help: "Size of the data directory's file system.",
	}, func() float64 { _, size := fsSpace(s.dir); return float64(size) })
	for _, r := range reasons {
		m.rejected.WithLabelValues(r)
	}
	for _, r := range startReasons {
		m.startsDropped.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.walFsync, m.walBytes, m.headSeries, m.headSamples, m.series,
			m.openWriters, m.flushDuration, m.flushedSamples, m.flushErrors, m.sizeFlushes, m.flushedBytes, m.appended, m.histAppended, m.headBytes, m.labelsSorted, m.duplicates,
			m.startsStored, m.startsDropped,
			m.rejected, m.walTruncations, m.checkpoints, m.checkpointBytes, m.replayedSamples, m.warmedReaders, m.walErrors, m.headOldest, m.openReaders, m.readerHits, m.readerMisses,
			m.fsFree, m.fsSize} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register store metrics: %w", err)
			}
		}
		for _, c := range m.chunkCache {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register store metrics: %w", err)
			}
		}
	}
	return m, nil
}
