package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
	"github.com/acta-remote/acta-remote/queryapi"
	"github.com/acta-remote/acta-remote/remoteread"
	"github.com/acta-remote/acta-remote/remotewrite"
)

// router is the HTTP surface: the protocol endpoints, instrumented by
// handler and status code, plus /metrics, /debug/pprof/ (debug.pprof) and
// the health probes.
type router struct {
	*mux.Router
	ready atomic.Bool // store open and not shutting down
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// authn (nil: no auth) guards every route but the probes: an orchestrator
// probes without credentials, and the probes reveal nothing but liveness.
func newRouter(cfg *config.Config, store *actastore.Store, rcv *otlp.Receiver, log *slog.Logger, reg *prometheus.Registry, authn *auth.Authenticator) *router {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "acta_http_requests_total",
		Help: "HTTP requests by handler and status code.",
	}, []string{"handler", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "acta_http_request_duration_seconds",
		Help:    "HTTP request latency by handler.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
	}, []string{"handler"})
	reg.MustRegister(requests, duration)
	// Auth sits inside the instrumentation so 401s are counted too.
	instrument := func(name string, h http.Handler) http.Handler {
		h = authn.Wrap(h)
		h = promhttp.InstrumentHandlerDuration(duration.MustCurryWith(prometheus.Labels{"handler": name}), h)
		return promhttp.InstrumentHandlerCounter(requests.MustCurryWith(prometheus.Labels{"handler": name}), h)
	}

	rt := &router{Router: mux.NewRouter()}
	rt.Handle("/api/v1/write", instrument("write",
		remotewrite.New(store, writeLimits(cfg.RemoteWrite), log.With("component", "remote_write"), reg)))
	rt.Handle("/api/v1/read", instrument("read",
		localOnly(remoteread.New(store, readLimits(cfg.RemoteRead), log.With("component", "remote_read"), reg))))
	// The Prometheus query API (PromQL, series, labels, metadata, status,
	// admin): one route per endpoint, so each is counted apart.
	for _, qr := range queryapi.New(store, queryOptions(cfg, log, reg)).Routes() {
		rt.Handle(qr.Path, instrument(qr.Name, qr.Handler))
	}
	otlpHandler := instrument("otlp", rcv.Handler())
	for _, p := range otlp.Paths {
		rt.Handle(p, otlpHandler)
	}
	// /metrics reveals series counts and rates: guarded like the data.
	rt.Handle("/metrics", authn.Wrap(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	if cfg.Debug.Pprof {
		// Profiles reveal code paths and cost CPU while taken: guarded too.
		rt.PathPrefix("/debug/pprof/").Handler(instrument("pprof", pprofHandler()))
	}
	rt.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("acta-remote is healthy.\n"))
	})
	rt.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !rt.ready.Load() {
			http.Error(w, "acta-remote is not ready.", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("acta-remote is ready.\n"))
	})
	return rt
}

// pprofHandler serves net/http/pprof's handlers under /debug/pprof/ (its
// Index serves every named profile: heap, allocs, goroutine, ...). Ours, not
// http.DefaultServeMux, which the net/http/pprof import also fills.
func pprofHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}

// localOnly serves a remote read that carries remoteread.LocalOnlyHeader
// (a query instance's fan-out) from the head and local files only: the
// query instance reads the bucket itself.
func localOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(remoteread.LocalOnlyHeader) != "" {
			r = r.WithContext(actastore.WithLocalOnly(r.Context()))
		}
		h.ServeHTTP(w, r)
	})
}
