package queryapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	v1 "github.com/prometheus/prometheus/web/api/v1"
	"google.golang.org/protobuf/proto"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// Store is what the API reads: samples and the label index (Reader),
// exemplars and metadata. *actastore.Store is one. If it also implements
// SeriesDeleter, RangeIndex or StatsReader, those are used.
type Store interface {
	Reader
	actastore.ExemplarQuerier
	actastore.MetadataQuerier
}

// Options configure the API; config.QueryConfig supplies the limits.
type Options struct {
	MaxSamples    int           // samples a query may hold at once (engine); 422 above
	Timeout       time.Duration // a query's longest run (engine); 503 after
	LookbackDelta time.Duration // instant selectors' lookback (engine)
	// SubqueryStep is the step of a subquery written without one
	// (`x[5m:]`): Prometheus's global evaluation_interval; 0 means 1m, its
	// default.
	SubqueryStep time.Duration
	// MaxConcurrent requests of the data endpoints run at once; the others
	// wait up to MaxQueueWait, then get 429 with Retry-After.
	MaxConcurrent int
	MaxQueueWait  time.Duration
	// EnableAdmin serves /api/v1/admin/tsdb/delete_series.
	EnableAdmin bool

	BuildInfo v1.PrometheusVersion // /api/v1/status/buildinfo
	Flags     map[string]string    // /api/v1/status/flags
	// StorageRetention is /api/v1/status/runtimeinfo's storageRetention,
	// e.g. "15d" ("" when everything is kept).
	StorageRetention string

	Logger     *slog.Logger          // default slog.Default()
	Registerer prometheus.Registerer // the engine's metrics; nil registers nothing
}

// Route is one endpoint to mount: a gorilla/mux path template, a short
// name for metrics, and its handler (every HTTP method the endpoint takes;
// others get 405).
type Route struct {
	Path, Name string
	Handler    http.Handler
}

// API is the mounted Prometheus API.
type API struct {
	routes []Route
}

// slotless endpoints read no data: they parse or report, and never wait.
var routes = []struct {
	path, name string
	slotless   bool
}{
	{"/api/v1/query", "query", false},
	{"/api/v1/query_range", "query_range", false},
	{"/api/v1/query_exemplars", "query_exemplars", false},
	{"/api/v1/series", "series", false},
	{"/api/v1/labels", "labels", false},
	{"/api/v1/label/{name}/values", "label_values", false},
	{"/api/v1/metadata", "metadata", false},
	{"/api/v1/status/tsdb", "status_tsdb", false},
	{"/api/v1/admin/tsdb/delete_series", "delete_series", false},
	{"/api/v1/format_query", "format_query", true},
	{"/api/v1/parse_query", "parse_query", true},
	{"/api/v1/status/buildinfo", "status_buildinfo", true},
	{"/api/v1/status/runtimeinfo", "status_runtimeinfo", true},
	{"/api/v1/status/flags", "status_flags", true},
}

// DefaultSubqueryStep is Options.SubqueryStep's default: Prometheus's
// default global evaluation_interval.
const DefaultSubqueryStep = time.Minute

// New builds Prometheus's engine and API (web/api/v1.NewAPI, as
// Prometheus's web package calls it) over st. Nothing of the API but the
// routes above is mounted: no targets, rules, alerts, remote read or
// write (ours serve /api/v1/read and /api/v1/write), no OTLP.
func New(st Store, o Options) *API {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	subStep := o.SubqueryStep
	if subStep <= 0 {
		subStep = DefaultSubqueryStep
	}
	engine := promql.NewEngine(promql.EngineOpts{
		Logger:                   log.With("component", "query engine"),
		Reg:                      o.Registerer,
		MaxSamples:               o.MaxSamples,
		Timeout:                  o.Timeout,
		LookbackDelta:            o.LookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return subStep.Milliseconds() },
		// Always on in Prometheus since v2.33.
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		EnablePerStepStats:   true, // stats=all
	})
	del, canDelete := st.(SeriesDeleter)
	statsReader, _ := st.(StatsReader)
	admin := &tsdbAdmin{st: st, del: del, timeout: o.Timeout, log: log}
	started := time.Now()
	build := o.BuildInfo
	// v1.NewAPI renders Prometheus's OpenAPI documents (3.1 and 3.2) as it
	// is built, and no option turns that off: 100 ms of CPU and 38 MB of
	// garbage a build on this machine (60 % of a start's CPU in a perf
	// profile on an empty store). Built beside the start, it took a core
	// from the reads just after it: remote reads of one series in the
	// first 100 ms after ready took 2.5 ms at the median instead of 0.3.
	// So the router is built on the first request of the query API (which
	// pays for it once; remote read and write never do), with the
	// documents cut to no paths (newV1Router): they are not served.
	lr := &lazyRouter{built: make(chan struct{}), build: func() *route.Router {
		return newV1Router(engine, st, o, log, admin, canDelete, statsReader, started, &build)
	}}

	sem := make(chan struct{}, max(1, o.MaxConcurrent))
	a := &API{}
	for _, rt := range routes {
		var h http.Handler = lr
		if rt.name == "delete_series" && o.EnableAdmin && !canDelete {
			h = noDeletion{}
		}
		if !rt.slotless {
			h = withSlot(h, sem, o.MaxQueueWait)
		}
		a.routes = append(a.routes, Route{Path: rt.path, Name: rt.name, Handler: h})
	}
	if o.EnableAdmin && !canDelete {
		log.Warn("query.admin_api_enabled is on, but this store cannot delete series: delete_series answers 'unavailable'")
	}
	return a
}

// lazyRouter builds Prometheus's API on its first request and serves its
// routes. Requests that arrive while it is built wait for it, each until
// its client goes away.
type lazyRouter struct {
	start sync.Once
	build func() *route.Router
	built chan struct{} // closed once r is set
	r     *route.Router
}

func (l *lazyRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.start.Do(func() {
		go func() {
			defer close(l.built)
			l.r = l.build()
		}()
	})
	select {
	case <-l.built:
		l.r.ServeHTTP(w, r)
	case <-r.Context().Done():
		writeError(w, 499, "canceled", r.Context().Err())
	}
}

// newV1Router builds Prometheus's API over st and its router.
func newV1Router(engine *promql.Engine, st Store, o Options, log *slog.Logger, admin *tsdbAdmin, canDelete bool,
	statsReader StatsReader, started time.Time, build *v1.PrometheusVersion) *route.Router {
	api := v1.NewAPI(engine, newQueryable(st), nil, exemplarQueryable{st},
		nil, // scrape pools: none
		func(ctx context.Context) v1.TargetRetriever { return newMetadataTargets(ctx, st, log) },
		nil, // alertmanagers: none
		func() config.Config { return config.DefaultConfig },
		o.Flags,
		v1.GlobalURLOptions{},
		func(f http.HandlerFunc) http.HandlerFunc { return f }, // routes exist only while the store is open
		admin, "", o.EnableAdmin && canDelete,
		false, 0, // search API off
		log.With("component", "query api"),
		nil,     // rules: none
		0, 0, 0, // its remote read is not mounted
		false, // not an agent
		noCORS,
		func() (v1.RuntimeInfo, error) { return runtimeInfo(started, o.StorageRetention) },
		build,
		nil, nil, // notifications: none
		headChunksGatherer(statsReader),
		nil,                             // its remote read handler's metrics: not mounted, not registered
		nil,                             // the default stats renderer
		false, nil, false, false, false, // remote write and OTLP receivers off
		o.LookbackDelta,
		false, false, // no type and unit labels, no metadata appending
		nil, // Prometheus's error codes
		nil, // no feature registry
		// No paths in the OpenAPI documents: /openapi.yaml is not mounted,
		// and without paths they cost 0.62x the CPU to render.
		v1.OpenAPIOptions{IncludePaths: []string{noOpenAPIPaths}},
		nil,   // Prometheus's default parser
		false, // no query cost estimation
		o.Timeout,
	)
	r := route.New().WithPrefix("/api/v1")
	api.Register(r)
	return r
}

// noOpenAPIPaths is a path prefix no route of Prometheus's API has.
const noOpenAPIPaths = "/-none-"

// Routes returns the endpoints to mount.
func (a *API) Routes() []Route { return a.routes }

// noCORS matches no origin: browsers get no Access-Control-Allow-Origin,
// so another site's page cannot read the API with a user's credentials.
// Grafana queries from its server and needs none.
var noCORS = regexp.MustCompile(`^\b$`)

// withSlot makes h wait for one of sem's slots, at most wait; then the
// answer is 429 with Retry-After in Prometheus's error envelope (errorType
// "unavailable"), as every endpoint of the server answers when busy.
func withSlot(h http.Handler, sem chan struct{}, wait time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := admission.Acquire(r.Context(), sem, wait, "query.max_concurrent"); err != nil {
			if errors.Is(err, admission.ErrBusy) {
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusTooManyRequests, "unavailable", err)
			} else {
				writeError(w, 499, "canceled", err) // the client went away while waiting
			}
			return
		}
		defer func() { <-sem }()
		h.ServeHTTP(w, r)
	})
}

// noDeletion answers delete_series when the admin API is enabled but the
// store cannot delete: Prometheus's answer for unavailable admin APIs,
// with the reason.
type noDeletion struct{}

func (noDeletion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		writeError(w, http.StatusMethodNotAllowed, "bad_data", errors.New("delete_series wants POST or PUT"))
		return
	}
	writeError(w, http.StatusInternalServerError, "unavailable",
		errors.New("admin APIs disabled: query.admin_api_enabled is on, but "+errNoDeletion.Error()))
}

// writeError writes Prometheus's error envelope.
func writeError(w http.ResponseWriter, code int, typ string, err error) {
	b, _ := json.Marshal(v1.Response{Status: "error", ErrorType: typ, Error: err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

func runtimeInfo(started time.Time, retention string) (v1.RuntimeInfo, error) {
	cwd, _ := os.Getwd()
	host, err := os.Hostname()
	return v1.RuntimeInfo{
		StartTime:           started,
		CWD:                 cwd,
		Hostname:            host,
		ServerTime:          time.Now().UTC(),
		ReloadConfigSuccess: true, // the config is read once, at start
		LastConfigTime:      started,
		GoroutineCount:      runtime.NumGoroutine(),
		GOMAXPROCS:          runtime.GOMAXPROCS(0),
		GOMEMLIMIT:          debug.SetMemoryLimit(-1),
		GOGC:                os.Getenv("GOGC"),
		GODEBUG:             os.Getenv("GODEBUG"),
		StorageRetention:    retention,
	}, err
}

// headChunksGatherer gives /api/v1/status/tsdb its headStats.chunkCount,
// which Prometheus's handler reads from its prometheus_tsdb_head_chunks
// gauge: here the store's series with unflushed samples (one open buffer
// each), 0 without a StatsReader.
func headChunksGatherer(sr StatsReader) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		n := 0
		if sr != nil {
			n = sr.Stats().HeadSeries
		}
		return []*dto.MetricFamily{{
			Name:   proto.String("prometheus_tsdb_head_chunks"),
			Type:   dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(n))}}},
		}}, nil
	})
}
