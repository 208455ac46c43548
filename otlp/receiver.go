package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
	"github.com/acta-remote/acta-remote/apistatus"
)

// Receiver accepts OTLP metrics over HTTP (Handler, RegisterRoutes) and
// gRPC (NewGRPCServer), translates them and appends them to the store. It
// is safe for concurrent use.
type Receiver struct {
	cfg         Config
	app         actastore.Appender
	delta       *deltaConverter // nil unless delta_temporality is convert
	logger      *slog.Logger
	slots       chan struct{} // MaxConcurrent tokens
	translators sync.Pool     // *Translator
	bodies      sync.Pool     // *bytes.Buffer, see handler_http.go
	gzips       sync.Pool     // *gzip.Reader, see decompress.go
	zstds       sync.Pool     // *zstd.Decoder
}

// New returns a Receiver appending to app. cfg is validated; logger may be
// nil (slog.Default()); reg, when not nil, gets the delta conversion's
// metrics (delta_temporality convert). Close releases the conversion's
// state.
func New(cfg Config, app actastore.Appender, logger *slog.Logger, reg prometheus.Registerer) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("otlp: invalid config: %w", err)
	}
	if app == nil {
		return nil, errors.New("otlp: nil appender")
	}
	if logger == nil {
		logger = slog.Default()
	}
	r := &Receiver{cfg: cfg, app: app, logger: logger, slots: make(chan struct{}, cfg.MaxConcurrent)}
	if cfg.DeltaTemporality == DeltaConvert {
		d, err := newDeltaConverter(cfg.DeltaConversion, reg)
		if err != nil {
			return nil, fmt.Errorf("otlp: %w", err)
		}
		r.delta = d
	}
	r.translators.New = func() any {
		t := NewTranslator(cfg)
		t.delta = r.delta
		return t
	}
	return r, nil
}

// Close drops the delta conversion's running sums and stops its sweep of
// stale streams; call it after the HTTP and gRPC servers have stopped.
func (r *Receiver) Close() error {
	if r.delta == nil {
		return nil
	}
	if err := r.delta.close(); err != nil {
		return fmt.Errorf("otlp: cannot stop the delta conversion: %w", err)
	}
	return nil
}

// acquire takes a request slot (admission.Acquire): a request that finds
// all MaxConcurrent slots taken for MaxQueueWait is refused as retryable
// (apistatus.ErrBusy) rather than queued without bound.
func (r *Receiver) acquire(ctx context.Context) error {
	return admission.Acquire(ctx, r.slots, r.cfg.MaxQueueWait, "otlp.max_concurrent")
}

func (r *Receiver) release() { <-r.slots }

// export translates md (converting deltas first under delta_temporality
// convert, in this goroutine), stores it with one Commit (floats,
// histograms, exemplars and metadata together: one WAL write, one fsync)
// and builds the OTLP response. Rejected data points (translation or store
// data errors) are reported in partial_success, dropped exemplars only in
// its message; a non-nil error means the store failed as a whole, nothing
// was acknowledged, and apistatus.Of tells how to answer.
func (r *Receiver) export(ctx context.Context, md pmetric.Metrics) (pmetricotlp.ExportResponse, error) {
	t := r.translators.Get().(*Translator)
	tr := t.Translate(md)
	r.translators.Put(t)

	rejected := tr.Rejected
	reasons := tr.Reasons
	if len(tr.Series) > 0 || len(tr.Extras) > 0 || len(tr.Metadata) > 0 {
		b := actastore.Batch{Series: make([]actastore.SeriesData, 0, len(tr.Series)+len(tr.Extras))}
		for i := range tr.Series {
			ss := &tr.Series[i]
			b.Series = append(b.Series, actastore.SeriesData{Labels: ss.Labels, Samples: ss.Samples, SampleStarts: ss.Starts})
		}
		for i := range tr.Extras {
			e := &tr.Extras[i]
			if len(e.Histograms) > 0 || len(e.Exemplars) > 0 {
				b.Series = append(b.Series, actastore.SeriesData{Labels: e.Labels, Histograms: e.Histograms, Exemplars: e.Exemplars,
					HistogramStarts: e.HistogramStarts})
			}
		}
		for _, m := range tr.Metadata {
			b.AddMetadata(m)
		}
		res, err := r.app.Commit(ctx, &b)
		accepted := tr.DataPoints - tr.Rejected
		switch apistatus.Of(apistatus.OTLP, err).Outcome {
		case apistatus.OK:
			if n := res.Samples.Rejected + res.Histograms.Rejected; n > 0 {
				// The store counts samples, OTLP data points; a histogram
				// data point is many samples. Count each rejected sample as
				// a data point, capped at what we sent: an upper bound.
				rejected += min(n, accepted)
				reasons = append(reasons, storeReasons(res)...)
			} else if res.Exemplars.Rejected > 0 {
				reasons = append(reasons, storeReasons(res)...)
			}
		case apistatus.Rejected:
			rejected += accepted
			reasons = append(reasons, fmt.Sprintf("store refused the batch: %v", err))
		default:
			return pmetricotlp.ExportResponse{}, fmt.Errorf("cannot store %d samples, %d histograms and %d exemplars: %w", tr.Samples, tr.Histograms, tr.Exemplars, err)
		}
	}

	resp := pmetricotlp.NewExportResponse()
	if rejected > 0 || len(reasons) > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedDataPoints(int64(rejected))
		// Reasons quote metric names, which the client may have sent as
		// invalid UTF-8; protobuf strings must be valid.
		ps.SetErrorMessage(strings.ToValidUTF8(fmt.Sprintf("%d of %d data points rejected: %s",
			rejected, tr.DataPoints, strings.Join(reasons, "; ")), "\uFFFD"))
	}
	return resp, nil
}

func storeReasons(res actastore.Result) []string {
	var out []string
	if res.Samples.Rejected > 0 {
		out = append(out, fmt.Sprintf("store rejected %d of the batch's samples", res.Samples.Rejected))
	}
	if res.Histograms.Rejected > 0 {
		out = append(out, fmt.Sprintf("store rejected %d of the batch's histograms", res.Histograms.Rejected))
	}
	if res.Exemplars.Rejected > 0 {
		out = append(out, fmt.Sprintf("store dropped %d of the batch's exemplars", res.Exemplars.Rejected))
	}
	for i, err := range res.Errors {
		if i == 3 {
			break
		}
		out = append(out, err.Error())
	}
	return out
}
