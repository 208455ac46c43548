package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
)

func init() {
	register("serve", "run the remote-write/remote-read/OTLP server (default)", runServe)
}

// shutdownTimeout bounds how long in-flight requests may take to finish
// after SIGINT/SIGTERM before their connections are closed. The store is
// closed (head flushed, files synced) either way.
const shutdownTimeout = 30 * time.Second

func runServe(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "YAML config `file` (default: the embedded default config)")
	listen := fs.String("listen", "", "HTTP listen `address`, overrides the config's listen")
	dataDir := fs.String("data-dir", "", "data `directory`, overrides the config's data_dir")
	grpcListen := fs.String("otlp-grpc-listen", "", "OTLP gRPC listen `address`, overrides otlp.grpc.listen_address; \"off\" disables OTLP gRPC")
	mode := fs.String("mode", "", "`write` (ingest; the default) or query (read-only over storage.object_store's bucket), overrides the config's mode")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "acta-remote serve: unexpected arguments %q\n", fs.Args())
		return exitError
	}
	cfg, err := loadServeConfig(*cfgPath, overrides{listen: *listen, dataDir: *dataDir, grpcListen: *grpcListen, mode: *mode})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote serve: %v\n", err)
		return exitError
	}
	log := newLogger(cfg.Log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	setMemoryLimit(cfg, log) // serve_runtime.go
	setGCPercent(cfg, log)
	run := serve
	if cfg.Mode == config.ModeQuery {
		run = serveQuery
	}
	if err := run(ctx, cfg, log); err != nil {
		log.Error("acta-remote stopped", "err", err)
		return exitError
	}
	return exitOK
}

// overrides are the serve flags that override config keys ("" keeps the
// config's value).
type overrides struct {
	listen, dataDir string
	grpcListen      string // "off" disables OTLP gRPC
	mode            string // write or query
}

// loadServeConfig reads the file (or the embedded default), applies the
// flags over it and validates the result.
func loadServeConfig(path string, o overrides) (*config.Config, error) {
	var cfg *config.Config
	var err error
	if path != "" {
		cfg, err = config.Load(path)
	} else {
		cfg, err = config.Parse(config.DefaultYAML)
	}
	if err != nil {
		return nil, err
	}
	if o.listen != "" {
		cfg.Listen = o.listen
	}
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	if o.mode != "" {
		cfg.Mode = o.mode
	}
	switch o.grpcListen {
	case "":
	case "off":
		cfg.OTLP.GRPC.Enabled = false
	default:
		cfg.OTLP.GRPC.Enabled, cfg.OTLP.GRPC.ListenAddress = true, o.grpcListen
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func newLogger(c config.LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// serve runs until ctx is cancelled, then shuts down in order: stop
// accepting, let in-flight requests finish, close the store (flush the
// head, sync), so a clean stop leaves nothing to replay.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	reg := newRegistry()
	opts := storeOptions(cfg, log, reg)
	if cfg.Storage.ObjectStore.Enabled {
		c, err := bucketClient(cfg, reg)
		if err != nil {
			return err
		}
		opts.Tier = tierOptions(cfg, c)
	}
	opened := time.Now()
	store, err := actastore.Open(cfg.DataDir, opts)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", cfg.DataDir, err)
	}
	st := store.Stats()
	log.Info("store opened", "dir", cfg.DataDir, "took", time.Since(opened), "series", st.Series, "head_samples", st.HeadSamples, "wal_bytes", st.WALBytes)
	closeStore := func() error {
		start := time.Now()
		if err := store.Close(); err != nil {
			return fmt.Errorf("close store: %w", err)
		}
		log.Info("store closed", "dir", cfg.DataDir, "took", time.Since(start))
		return nil
	}

	rcv, err := otlp.New(otlpOptions(cfg.OTLP), store, log.With("component", "otlp"), reg)
	if err != nil {
		return errors.Join(err, closeStore())
	}
	// The receiver goes first: its delta conversion state means nothing
	// once nothing can reach it.
	closeAll := func() error { return errors.Join(rcv.Close(), closeStore()) }
	authn, tlsCfg, err := security(cfg, log)
	if err != nil {
		return errors.Join(err, closeAll())
	}
	grpcOpts := authn.GRPCOptions()
	if tlsCfg != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	grpcSrv, err := otlp.NewGRPCServer(rcv, grpcOpts...)
	if err != nil {
		return errors.Join(err, closeAll())
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		grpcSrv.Stop(context.Background())
		return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Listen, err), closeAll())
	}
	rt := newRouter(cfg, store, rcv, log, reg, authn)
	srv := &http.Server{
		Handler:           rt,
		ReadHeaderTimeout: 10 * time.Second,
		// A client trickling a body holds a decode slot; two minutes is
		// ample for a 32 MiB body on any link Prometheus should use.
		ReadTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Tests and scripts parse this line for the bound port (--listen :0).
	fmt.Printf("acta-remote listening on %s\n", ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "otlp_grpc", addrString(grpcSrv.Addr()),
		"tls", tlsCfg != nil, "mtls", tlsCfg != nil && tlsCfg.ClientCAs != nil, "auth", authn.Enabled())

	errc := make(chan error, 1)
	if grpcSrv != nil { // nil when otlp.grpc.enabled is false
		go func() {
			if err := grpcSrv.Serve(); err != nil {
				errc <- err
			}
		}()
	}
	serveErr := serveHTTP(ctx, log, srv, ln, tlsCfg, rt, errc, func(sctx context.Context) { grpcSrv.Stop(sctx) })
	return errors.Join(serveErr, closeAll())
}

// serveHTTP serves srv on ln (over TLS when tlsCfg is set) and marks rt
// ready, until ctx is done or serving fails (also a failure another server
// sends on errc). Then it marks rt not ready, shuts srv down, letting
// in-flight requests finish within shutdownTimeout, and calls stop with
// that deadline (the other servers). It returns the serving failure, nil
// after a stop.
func serveHTTP(ctx context.Context, log *slog.Logger, srv *http.Server, ln net.Listener, tlsCfg *tls.Config, rt *router,
	errc chan error, stop func(context.Context)) error {
	httpErr := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			// ServeTLS (certificates already in TLSConfig) also offers
			// HTTP/2, and answers plain HTTP with a 400 instead of a
			// failed handshake.
			srv.TLSConfig = tlsCfg
			httpErr <- srv.ServeTLS(ln, "", "")
			return
		}
		httpErr <- srv.Serve(ln)
	}()
	rt.ready.Store(true)

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "cause", context.Cause(ctx))
	case serveErr = <-httpErr:
		log.Error("server failed", "err", serveErr)
	case serveErr = <-errc:
		log.Error("server failed", "err", serveErr)
	}
	rt.ready.Store(false)

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("in-flight requests cut at the shutdown deadline", "err", err)
		srv.Close()
	}
	if stop != nil {
		stop(sctx)
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// security reads the credential and certificate files the config names.
// Both results are nil when the config turns them off.
func security(cfg *config.Config, log *slog.Logger) (*auth.Authenticator, *tls.Config, error) {
	authn, err := auth.New(auth.Config{
		BasicUsername:     cfg.Auth.Basic.Username,
		BasicPasswordFile: cfg.Auth.Basic.PasswordFile,
		BearerTokenFile:   cfg.Auth.BearerTokenFile,
	}, log.With("component", "auth"))
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := auth.ServerTLS(auth.TLSConfig{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, ClientCAFile: cfg.TLS.ClientCAFile})
	if err != nil {
		return nil, nil, err
	}
	return authn, tlsCfg, nil
}

func addrString(a net.Addr) string {
	if a == nil {
		return "disabled"
	}
	return a.String()
}
