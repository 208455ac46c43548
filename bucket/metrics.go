package bucket

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the client's own: requests by operation and outcome, their
// latency, and bytes moved.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	read     *prometheus.CounterVec
	written  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_bucket_requests_total",
			Help: "Object store requests by operation (put, head, get, list, delete) and result (ok, error).",
		}, []string{"op", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "acta_bucket_request_duration_seconds",
			Help:    "Object store request latency by operation (an upload: the whole object).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"op"}),
		read: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acta_bucket_read_bytes_total",
			Help: "Bytes read from the object store by purpose: block (ranged reads of series file blocks), discovery (frame headers of a file whose block index was not cached), verify (uploads read back), index (index objects), retention.",
		}, []string{"purpose"}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_bucket_written_bytes_total",
			Help: "Bytes uploaded to the object store (series files and index objects).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.read, m.written)
	}
	return m
}

func (m *metrics) observe(op string, began time.Time, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	m.requests.WithLabelValues(op, res).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(began).Seconds())
}
