// Package remotewrite is the Prometheus Remote-Write 1.0 and 2.0 receiver:
// POST /api/v1/write. It negotiates the message from Content-Type, bounds
// the snappy body before decoding, decodes it without allocating per series
// (decode.go: a zero-copy wire decoder, the generated prompb/writev2 code
// for whatever it leaves), hands the store one batch of label pairs and
// samples (with 2.0's start timestamps, Sample.start_timestamp and
// Histogram.start_timestamp, which the store keeps), rejects invalid series
// one by one (storing the rest) and answers with the Remote-Write 2.0
// "written" headers.
package remotewrite

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acta-remote/acta-remote/apistatus"
	"github.com/acta-remote/acta-remote/snappybody"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// Handler serves POST /api/v1/write.
type Handler struct {
	app actastore.Appender
	lim Limits
	log *slog.Logger
	m   *metrics
	sem chan struct{} // bounds concurrent decodes (memory)

	lastWarn atomic.Int64 // unix ns of the last partial-write warning
}

// New returns the handler. reg may be nil.
func New(app actastore.Appender, lim Limits, log *slog.Logger, reg prometheus.Registerer) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{app: app, lim: lim, log: log, m: newMetrics(reg), sem: make(chan struct{}, max(1, lim.MaxConcurrent))}
}

// ServeHTTP answers one remote-write request: 204 when all was stored, 400
// for a partial write or invalid input, 413/415 for size and media type,
// 429/503 (with Retry-After) and 500 when the store could not take it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "remote write wants POST", http.StatusMethodNotAllowed)
		return
	}
	typ, err := negotiate(r.Header)
	if err != nil {
		if typ == msgV2 {
			setWritten(w, 0, 0, 0)
		}
		apistatus.WriteText(w, apistatus.RemoteWrite, err)
		return
	}
	if err := admission.Acquire(r.Context(), h.sem, h.lim.MaxQueueWait, "remote_write.max_concurrent"); err != nil {
		if typ == msgV2 {
			setWritten(w, 0, 0, 0)
		}
		apistatus.WriteText(w, apistatus.RemoteWrite, err)
		return
	}
	defer func() { <-h.sem }()

	s := getScratch()
	defer putScratch(s)
	var data []byte
	s.raw, s.dec, data, err = snappybody.Read(w, r, s.raw, s.dec, h.lim.MaxBodyBytes, h.lim.MaxDecodedBytes)
	if err != nil {
		h.fail(w, typ, s, err)
		return
	}
	if typ == msgV1 {
		h.m.requests.WithLabelValues("1.0").Inc()
	} else {
		h.m.requests.WithLabelValues("2.0").Inc()
	}
	if err = h.decode(s, typ, data); err != nil {
		h.fail(w, typ, s, err)
		return
	}
	s.finish()

	if len(s.batch.Series) > 0 || len(s.batch.Metadata) > 0 {
		if err := h.commit(r.Context(), s); err != nil {
			h.fail(w, typ, s, err)
			return
		}
	}
	h.account(s)

	if typ == msgV2 {
		setWritten(w, s.stats.samplesWritten, s.stats.histogramsWritten, s.stats.exemplarsWritten)
	}
	if s.nerrs == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// A partial write: the valid series are stored; the status says the
	// rest must not be retried (Remote-Write 2.0 spec, "Partial Write").
	code := http.StatusBadRequest
	for _, e := range s.errs {
		if c := apistatus.HTTP(apistatus.RemoteWrite, e); c > code && c < 500 {
			code = c
		}
	}
	msg := fmt.Sprintf("%d of %d samples rejected (%d problems); stored %d samples of %d valid series: %s",
		s.stats.rejectedSamples, s.stats.samples, s.nerrs, s.stats.samplesWritten, len(s.batch.Series), joinErrs(s.errs, s.nerrs))
	if s.stats.histograms > 0 || s.stats.exemplars > 0 {
		msg = fmt.Sprintf("%d of %d histograms rejected; stored %d histograms, %d exemplars; %s",
			s.stats.rejectedHistograms, s.stats.histograms, s.stats.histogramsWritten, s.stats.exemplarsWritten, msg)
	}
	h.logRejection(code, msg)
	http.Error(w, msg, code)
}

// logRejection logs a partial write at most once per second at Warn (a
// misbehaving sender must not flood the log; the metrics count them all)
// and otherwise at Debug.
func (h *Handler) logRejection(code int, msg string) {
	now := time.Now().UnixNano()
	last := h.lastWarn.Load()
	level := slog.LevelDebug
	if now-last >= int64(time.Second) && h.lastWarn.CompareAndSwap(last, now) {
		level = slog.LevelWarn
	}
	h.log.Log(context.Background(), level, "remote write: partial rejection", "status", code, "detail", msg)
}

// fail answers a request of which nothing was stored.
func (h *Handler) fail(w http.ResponseWriter, typ msgType, s *scratch, err error) {
	if typ == msgV2 {
		setWritten(w, 0, 0, 0)
	}
	if code := apistatus.HTTP(apistatus.RemoteWrite, err); code >= 500 {
		h.log.Error("remote write failed", "status", code, "err", err)
	} else {
		h.log.Debug("remote write refused", "status", code, "err", err)
	}
	apistatus.WriteText(w, apistatus.RemoteWrite, err)
}

// setWritten sets the Remote-Write 2.0 response headers: what was stored,
// which tells a 2.0 sender exactly what was dropped.
func setWritten(w http.ResponseWriter, samples, histograms, exemplars int) {
	w.Header().Set(headerSamplesWritten, strconv.Itoa(samples))
	w.Header().Set(headerHistogramsWritten, strconv.Itoa(histograms))
	w.Header().Set(headerExemplarsWritten, strconv.Itoa(exemplars))
}

func (h *Handler) account(s *scratch) {
	h.m.samplesWritten.Add(float64(s.stats.samplesWritten))
	for reason, n := range s.reason {
		h.m.samplesRejected.WithLabelValues(reason).Add(float64(n))
	}
	for reason, n := range s.events {
		h.m.seriesRejected.WithLabelValues(reason).Add(float64(n))
	}
	h.m.histogramsWritten.Add(float64(s.stats.histogramsWritten))
	h.m.exemplarsWritten.Add(float64(s.stats.exemplarsWritten))
}

func joinErrs(errs []error, total int) string {
	parts := make([]string, 0, len(errs)+1)
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	if total > len(errs) {
		parts = append(parts, fmt.Sprintf("and %d more", total-len(errs)))
	}
	return strings.Join(parts, "; ")
}
