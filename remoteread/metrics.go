package remoteread

import (
	"net/http"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	latency *prometheus.HistogramVec // by response type
	samples prometheus.Counter
	frames  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "acta_remote_read_duration_seconds",
			Help:    "Remote-read request latency, by response type (SAMPLES, STREAMED_XOR_CHUNKS).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"type"}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_read_samples_total",
			Help: "Samples returned by remote read.",
		}),
		frames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "acta_remote_read_frames_total",
			Help: "STREAMED_XOR_CHUNKS frames sent.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.latency, m.samples, m.frames)
	}
	return m
}

func writeError(w http.ResponseWriter, err error) {
	// A stream's Content-Type was set before the first frame; an error
	// answer is plain text.
	w.Header().Del("Content-Type")
	apistatus.WriteText(w, apistatus.RemoteRead, err)
}
