package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
	"github.com/acta-remote/acta-remote/queryapi"
	"github.com/acta-remote/acta-remote/remoteread"
)

// Query mode (mode: query, --mode query): a read-only server over every
// writer prefix of storage.object_store's bucket. It serves remote read
// from a bucket view (actastore.BucketView), merged with what the live
// writers listed in storage.object_store.query.writers hold locally (their
// remote read, asked for local data only). It takes no writes and keeps
// no data but the block index cache under data_dir.

// serveQuery runs a query-mode server until ctx is cancelled.
func serveQuery(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	reg := newRegistry()
	c, err := bucketClient(cfg, reg)
	if err != nil {
		return err
	}
	vo := viewOptions(cfg, c)
	vo.Logger, vo.Registerer = log.With("component", "bucket_view"), reg
	view, err := actastore.OpenBucketView(vo)
	if err != nil {
		return fmt.Errorf("open bucket view of %s: %w", c.Name(), err)
	}
	defer view.Close()
	q, err := newFanout(cfg, view, log, reg)
	if err != nil {
		return err
	}
	if r := cfg.Storage.ObjectStore.Retention; r.Owner {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go runBucketRetention(rctx, c.NewRetainer(bucket.Layout{Prefix: cfg.Storage.ObjectStore.Prefix}, bucket.RetentionOptions{
			Owner: "query", MaxAge: time.Duration(r.MaxAge), DeleteDelay: cfg.Storage.ObjectStore.DeleteDelay, MaxIndexRaw: 1 << 30,
		}), r.Interval, log.With("component", "bucket_retention"), view)
	}
	authn, tlsCfg, err := security(cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	rt := newQueryRouter(cfg, q, view, log, reg, authn)
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Printf("acta-remote listening on %s\n", ln.Addr())
	insts, series, files, _, verr := view.Stats()
	log.Info("listening (query mode)", "addr", ln.Addr().String(), "bucket", c.Name(), "prefix", cfg.Storage.ObjectStore.Prefix,
		"instances", insts, "series", series, "files", files, "writers", len(cfg.Storage.ObjectStore.Query.Writers), "index_err", verr)
	return serveHTTP(ctx, log, srv, ln, tlsCfg, rt, nil, nil)
}

// newQueryRouter serves remote read, the probes and /metrics; writes are
// refused with 405 naming the mode. Ready once the bucket index was read
// without an error (and for as long as the server runs: a failed refresh
// keeps serving the last index read).
func newQueryRouter(cfg *config.Config, q *fanout, view *actastore.BucketView, log *slog.Logger, reg *prometheus.Registry, authn *auth.Authenticator) *router {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acta_http_requests_total", Help: "HTTP requests by handler and status code."},
		[]string{"handler", "code"})
	reg.MustRegister(requests)
	instrument := func(name string, h http.Handler) http.Handler {
		return promhttp.InstrumentHandlerCounter(requests.MustCurryWith(prometheus.Labels{"handler": name}), authn.Wrap(h))
	}
	rt := &router{Router: mux.NewRouter()}
	rt.Handle("/api/v1/read", instrument("read", remoteread.New(q, readLimits(cfg.RemoteRead), log.With("component", "remote_read"), reg)))
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "acta-remote runs in query mode (mode: query): it takes no writes; send them to a writer", http.StatusMethodNotAllowed)
	})
	// The Prometheus query API over the same fan-out: PromQL and Select
	// see the bucket and the live writers; label, series and metadata
	// look-ups come from the bucket index (data not uploaded yet is found
	// by queries, not by look-ups). No admin: the view deletes nothing.
	for _, qr := range queryapi.New(q, queryOptions(cfg, log, reg)).Routes() {
		rt.Handle(qr.Path, instrument(qr.Name, qr.Handler))
	}
	rt.Handle("/api/v1/write", instrument("write", refuse))
	for _, p := range otlp.Paths {
		rt.Handle(p, instrument("otlp", refuse))
	}
	rt.Handle("/metrics", authn.Wrap(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	rt.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("acta-remote is healthy.\n")) })
	rt.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if _, _, _, at, _ := view.Stats(); at.IsZero() {
			http.Error(w, "acta-remote is not ready: the bucket index was not read yet.", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("acta-remote is ready.\n"))
	})
	return rt
}

// fanout is the query-mode Querier: the bucket view, merged with each
// live writer's local data. Label look-ups come from the bucket index.
type fanout struct {
	*actastore.BucketView
	writers  []*remoteread.Remote
	urls     []string
	partial  bool
	log      *slog.Logger
	failures *prometheus.CounterVec
}

func newFanout(cfg *config.Config, view *actastore.BucketView, log *slog.Logger, reg prometheus.Registerer) (*fanout, error) {
	qc := cfg.Storage.ObjectStore.Query
	f := &fanout{BucketView: view, urls: qc.Writers, partial: qc.PartialResponse, log: log.With("component", "fanout"),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "acta_query_writer_failures_total",
			Help: "Remote reads of a live writer that failed (the query failed, or with partial_response went on without it), by writer URL."}, []string{"writer"})}
	reg.MustRegister(f.failures)
	for i, u := range qc.Writers {
		w, err := remoteread.NewRemote(fmt.Sprintf("writer-%d", i), u, remoteread.RemoteOptions{Timeout: qc.WriterTimeout,
			BearerTokenFile: qc.WriterBearerTokenFile, CAFile: qc.WriterCAFile, LocalOnly: true})
		if err != nil {
			return nil, fmt.Errorf("storage.object_store.query.writers[%d]: %w", i, err)
		}
		f.writers = append(f.writers, w)
		f.failures.WithLabelValues(u)
	}
	return f, nil
}

// Select merges the bucket's series with each writer's (asked at once);
// the bucket's sample wins a timestamp both hold.
func (f *fanout) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	sets := make([]actastore.SeriesSet, 1+len(f.writers))
	var wg sync.WaitGroup
	for i, w := range f.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets[1+i] = w.Select(ctx, mint, maxt, ms...)
		}()
	}
	sets[0] = f.BucketView.Select(ctx, mint, maxt, ms...)
	wg.Wait()
	kept := sets[:1]
	for i, s := range sets[1:] {
		if err := peekErr(s); err != nil {
			f.failures.WithLabelValues(f.urls[i]).Inc()
			if !f.partial {
				sets[0].Close()
				return actastore.NewSeriesSet(nil, fmt.Errorf("live writer %s: %w (storage.object_store.query.partial_response is false)", f.urls[i], err))
			}
			f.log.Warn("a live writer failed; answering without it", "writer", f.urls[i], "err", err)
			continue
		}
		kept = append(kept, s)
	}
	return actastore.MergeSeriesSets(kept...)
}

// peekErr is the error of a writer's set (fully read by Remote.Select,
// so an error is there before any series).
func peekErr(s actastore.SeriesSet) error {
	if p, ok := s.(interface{ Failed() error }); ok {
		return p.Failed()
	}
	return nil
}

// runBucketRetention runs bucket retention every interval until ctx ends
// (a query instance that owns it; a writer runs it in its upload cycle).
func runBucketRetention(ctx context.Context, rt *bucket.Retainer, interval time.Duration, log *slog.Logger, view *actastore.BucketView) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		res, err := rt.Run(ctx, time.Now())
		view.CountRetention(res)
		log.Debug("bucket retention pass", "expired", res.Expired, "deleted", res.Deleted, "horizon", time.UnixMilli(res.Horizon.MinTime).UTC())
		if err != nil && ctx.Err() == nil {
			log.Warn("bucket retention", "err", err)
		} else if res.Deleted > 0 {
			log.Info("bucket retention", "deleted", res.Deleted, "bytes", res.Bytes, "horizon", time.UnixMilli(res.Horizon.MinTime).UTC())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
