package remotewrite

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	samplesWritten                      prometheus.Counter
	histogramsWritten, exemplarsWritten prometheus.Counter
	seriesAppended                      prometheus.Counter
	samplesRejected                     *prometheus.CounterVec // by reason
	seriesRejected                      *prometheus.CounterVec // by reason
	requests                            *prometheus.CounterVec // by protocol version
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		samplesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_write_samples_written_total",
			Help: "Float samples acknowledged to remote-write senders.",
		}),
		histogramsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_write_histograms_written_total",
			Help: "Native histogram samples acknowledged to remote-write senders.",
		}),
		exemplarsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_write_exemplars_written_total",
			Help: "Exemplars acknowledged to remote-write senders.",
		}),
		seriesAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_write_series_appended_total",
			Help: "Valid series (one per request they appear in) handed to the store.",
		}),
		samplesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_remote_write_samples_rejected_total",
			Help: "Samples, histograms and exemplars refused or dropped, by reason (invalid_series, invalid_histogram, limit, out_of_order, duplicate, out_of_bounds, exemplar_labels_too_long, too_many_series, overloaded, store_error).",
		}, []string{"reason"}),
		seriesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_remote_write_series_rejected_total",
			Help: "Rejections (an invalid series, or a store error for a series or sample), by reason.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_remote_write_requests_by_version_total",
			Help: "Decoded remote-write requests by protocol version (1.0, 2.0).",
		}, []string{"version"}),
	}
	if reg != nil {
		reg.MustRegister(m.samplesWritten, m.histogramsWritten, m.exemplarsWritten, m.seriesAppended, m.samplesRejected, m.seriesRejected, m.requests)
	}
	return m
}
