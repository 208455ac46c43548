// Package remoteread is the Prometheus Remote-Read endpoint: POST
// /api/v1/read with a snappy prompb.ReadRequest, answered as SAMPLES (one
// snappy ReadResponse) or STREAMED_XOR_CHUNKS (framed ChunkedReadResponse
// messages with XOR chunks), whichever the client lists first of the two,
// as Prometheus's own handler chooses. A query's series are encoded on a
// pool of GOMAXPROCS workers and sent in label order (pipeline.go); XOR
// chunks come from package xorchunk, byte for byte chunkenc's, or, for a
// store's files, as the store keeps them (actastore.WithXORChunks: a file
// read again is not decoded and encoded again).
package remoteread

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/acta-remote/acta-remote/apistatus"
	"github.com/acta-remote/acta-remote/snappybody"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// Limits bound one remote-read request.
type Limits struct {
	MaxBodyBytes       int64 // snappy-compressed request body
	MaxDecodedBytes    int64 // snappy-declared decoded length
	MaxSamplesPerQuery int64 // samples one query may return
	MaxSeriesPerQuery  int   // series one query may return
	MaxConcurrent      int   // requests served at once; others wait
	// MaxQueueWait is how long a request waits for a slot before it gets
	// 429 with Retry-After; 0 refuses at once.
	MaxQueueWait     time.Duration
	MaxBytesPerFrame int // STREAMED_XOR_CHUNKS frame size, give or take one chunk
}

// Handler serves POST /api/v1/read.
type Handler struct {
	q   actastore.Querier
	lim Limits
	log *slog.Logger
	m   *metrics
	sem chan struct{}
}

// New returns the handler. reg may be nil.
func New(q actastore.Querier, lim Limits, log *slog.Logger, reg prometheus.Registerer) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{q: q, lim: lim, log: log, m: newMetrics(reg), sem: make(chan struct{}, max(1, lim.MaxConcurrent))}
}

// ServeHTTP answers one remote-read request with every query's result, in
// request order; errors found before the first byte is sent are 4xx/5xx
// with a message, later ones abort the connection.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "remote read wants POST", http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	if err := admission.Acquire(r.Context(), h.sem, h.lim.MaxQueueWait, "remote_read.max_concurrent"); err != nil {
		apistatus.WriteText(w, apistatus.RemoteRead, err)
		return
	}
	defer func() { <-h.sem }()

	req, queries, err := h.decode(w, r)
	if err != nil {
		apistatus.WriteText(w, apistatus.RemoteRead, err)
		return
	}
	typ, err := negotiate(req.AcceptedResponseTypes)
	if err != nil {
		apistatus.WriteText(w, apistatus.RemoteRead, err)
		return
	}
	if typ == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		h.streamChunks(w, r, queries)
	} else {
		h.samples(w, r, queries)
	}
	h.m.latency.WithLabelValues(typ.String()).Observe(time.Since(start).Seconds())
}

// query is one decoded prompb.Query. Hints are ignored: they only help a
// planner, and the store reads exactly [mint, maxt] anyway.
type query struct {
	mint, maxt int64
	matchers   []*labels.Matcher
}

func (h *Handler) decode(w http.ResponseWriter, r *http.Request) (*prompb.ReadRequest, []query, error) {
	_, _, data, err := snappybody.Read(w, r, nil, nil, h.lim.MaxBodyBytes, h.lim.MaxDecodedBytes)
	if err != nil {
		return nil, nil, err
	}
	var req prompb.ReadRequest
	if err := req.Unmarshal(data); err != nil {
		return nil, nil, fmt.Errorf("%w: malformed ReadRequest protobuf: %v", apistatus.ErrBadRequest, err)
	}
	qs := make([]query, 0, len(req.Queries))
	for i, pq := range req.Queries {
		if pq == nil {
			return nil, nil, fmt.Errorf("%w: query %d is empty", apistatus.ErrBadRequest, i)
		}
		if pq.StartTimestampMs > pq.EndTimestampMs {
			return nil, nil, fmt.Errorf("%w: query %d: start %d ms after end %d ms", apistatus.ErrBadRequest, i, pq.StartTimestampMs, pq.EndTimestampMs)
		}
		if len(pq.Matchers) == 0 {
			return nil, nil, fmt.Errorf("%w: query %d has no matchers", apistatus.ErrBadRequest, i)
		}
		ms, err := toMatchers(pq.Matchers)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: query %d: %v", apistatus.ErrBadRequest, i, err)
		}
		qs = append(qs, query{pq.StartTimestampMs, pq.EndTimestampMs, ms})
	}
	return &req, qs, nil
}

func toMatchers(pms []*prompb.LabelMatcher) ([]*labels.Matcher, error) {
	out := make([]*labels.Matcher, 0, len(pms))
	for j, pm := range pms {
		if pm == nil {
			return nil, fmt.Errorf("matcher %d is empty", j)
		}
		var t labels.MatchType
		switch pm.Type {
		case prompb.LabelMatcher_EQ:
			t = labels.MatchEqual
		case prompb.LabelMatcher_NEQ:
			t = labels.MatchNotEqual
		case prompb.LabelMatcher_RE:
			t = labels.MatchRegexp
		case prompb.LabelMatcher_NRE:
			t = labels.MatchNotRegexp
		default:
			return nil, fmt.Errorf("matcher %d: unknown type %d", j, pm.Type)
		}
		m, err := labels.NewMatcher(t, pm.Name, pm.Value)
		if err != nil {
			return nil, fmt.Errorf("matcher %d (%s %s %q): %v", j, pm.Name, pm.Type, pm.Value, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// negotiate picks the first accepted type we support; none listed means
// SAMPLES (older clients), as Prometheus's NegotiateResponseType does.
func negotiate(accepted []prompb.ReadRequest_ResponseType) (prompb.ReadRequest_ResponseType, error) {
	if len(accepted) == 0 {
		return prompb.ReadRequest_SAMPLES, nil
	}
	for _, t := range accepted {
		if t == prompb.ReadRequest_SAMPLES || t == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: none of the accepted response types %v is supported; supported: SAMPLES, STREAMED_XOR_CHUNKS", apistatus.ErrBadRequest, accepted)
}

// selectErr names the config keys behind the store's query limits, which
// serve sets from remote_read.
func selectErr(idx int, err error) error {
	if errors.Is(err, actastore.ErrQueryLimit) {
		return fmt.Errorf("query %d: %w (limits remote_read.max_series_per_query, remote_read.max_samples_per_query)", idx, err)
	}
	return fmt.Errorf("query %d: %w", idx, err)
}

// budget counts one query's series and samples against the limits. In a
// pipelined query the producer counts series and the writer samples: the
// two counters are never touched by the same goroutine at once.
type budget struct {
	lim             *Limits
	query           int
	series, samples int64
}

func (b *budget) addSeries() error {
	b.series++
	if b.lim.MaxSeriesPerQuery > 0 && b.series > int64(b.lim.MaxSeriesPerQuery) {
		return fmt.Errorf("%w: query %d selects more than %d series, limit remote_read.max_series_per_query", actastore.ErrQueryLimit, b.query, b.lim.MaxSeriesPerQuery)
	}
	return nil
}

func (b *budget) addSample() error { return b.addSamples(1) }

// addSamples counts n samples (histograms included) of one series.
func (b *budget) addSamples(n int64) error {
	b.samples += n
	if b.lim.MaxSamplesPerQuery > 0 && b.samples > b.lim.MaxSamplesPerQuery {
		return fmt.Errorf("%w: query %d selects more than %d samples, limit remote_read.max_samples_per_query", actastore.ErrQueryLimit, b.query, b.lim.MaxSamplesPerQuery)
	}
	return nil
}
