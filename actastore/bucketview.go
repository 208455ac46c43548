package actastore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/bucket"
)

// BucketView is a read-only store over every writer prefix of a bucket
// (acta-remote serve --mode query): it reads each instance's index
// objects, merges series that appear under several prefixes (the same
// label set), and answers Select from the bucket files with ranged reads
// of the blocks a query needs, as the store reads its own files. It holds
// no local data but the block index cache.
type BucketView struct {
	o       BucketViewOptions
	c       *bucket.Client
	cache   *bucket.IndexCache
	readers *readerCache
	m       *tierMetrics
	log     *slog.Logger

	refreshMu sync.Mutex // one refresh at a time
	mu        sync.RWMutex
	states    map[string]*bucket.State // by instance
	horizon   bucket.Horizon
	ix        *index                 // of view series (memSeries for the label index only)
	series    map[uint32]*viewSeries // by index id
	objects   map[string]bucket.File // object key -> file, for the reader cache
	refreshed time.Time
	lastErr   error

	stop chan struct{}
	bg   sync.WaitGroup
}

// BucketViewOptions configure a BucketView.
type BucketViewOptions struct {
	Client *bucket.Client
	Layout bucket.Layout
	// CacheDir holds the block index cache, bounded by CacheBytes
	// (default 256 MiB).
	CacheDir   string
	CacheBytes int64
	// RefreshInterval: how often index objects are read again (default
	// 1m; negative: only by Refresh).
	RefreshInterval time.Duration
	MaxQuerySeries  int   // per Select; 0: unlimited
	MaxQuerySamples int64 // per Select; 0: unlimited
	MaxOpenReaders  int   // bucket file readers kept open (default 1024)
	MaxReaderBytes  int64 // their block indexes' memory (default 64 MiB)
	MaxIndexBytes   int64 // one decoded index object (default 1 GiB)
	Logger          *slog.Logger
	Registerer      prometheus.Registerer
}

// viewSeries is one label set and where its files are: one source per
// instance holding it.
type viewSeries struct {
	lset    labels.Labels
	sources []viewSource // by instance, sorted
}

type viewSource struct {
	inst  string
	files [bucket.Kind(2)][]bucket.File // by kind, sorted by start
}

// OpenBucketView reads every instance's index objects once and starts
// refreshing them in the background. A bucket that cannot be read yet is
// not an error: the view is empty until a refresh succeeds (Stats says
// when one did).
func OpenBucketView(o BucketViewOptions) (*BucketView, error) {
	if o.Client == nil {
		return nil, errors.New("bucket view: no client")
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = time.Minute
	}
	if o.MaxOpenReaders == 0 {
		o.MaxOpenReaders = 1024
	}
	if o.MaxReaderBytes == 0 {
		o.MaxReaderBytes = 64 << 20
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 1 << 30
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	cache, err := bucket.OpenIndexCache(o.CacheDir, o.CacheBytes, o.Registerer)
	if err != nil {
		return nil, err
	}
	m, err := newTierMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	v := &BucketView{o: o, c: o.Client, cache: cache, m: m, log: o.Logger, states: make(map[string]*bucket.State),
		ix: newIndex(), series: make(map[uint32]*viewSeries), objects: make(map[string]bucket.File), stop: make(chan struct{})}
	v.readers = newReaderCache(o.MaxOpenReaders, o.MaxReaderBytes)
	v.readers.remoteOnly = true
	v.readers.remote = v.openObject
	if err := v.Refresh(context.Background()); err != nil {
		v.log.Warn("cannot read the bucket index yet; retrying", "err", err)
	}
	if o.RefreshInterval > 0 {
		v.bg.Add(1)
		go v.refreshLoop()
	}
	return v, nil
}

func (v *BucketView) refreshLoop() {
	defer v.bg.Done()
	t := time.NewTicker(v.o.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			if err := v.Refresh(context.Background()); err != nil {
				v.log.Warn("cannot refresh the bucket index; serving the last one read", "err", err)
			}
		}
	}
}

// Close stops the refreshes.
func (v *BucketView) Close() error {
	select {
	case <-v.stop:
	default:
		close(v.stop)
	}
	v.bg.Wait()
	v.readers.closeAll()
	return nil
}

// Refresh reads the instances' index objects and the retention horizon
// again. An instance that fails keeps its last state (and the error is
// returned, naming it); the rest are updated.
func (v *BucketView) Refresh(ctx context.Context) error {
	v.refreshMu.Lock()
	defer v.refreshMu.Unlock()
	var errs []error
	h, err := v.c.ReadHorizon(ctx, v.o.Layout)
	if err != nil {
		errs = append(errs, err)
		h = v.horizon
	}
	insts, err := v.c.ListInstances(ctx, v.o.Layout)
	if err != nil {
		v.setErr(err)
		return err
	}
	states := make(map[string]*bucket.State, len(insts))
	changed := len(insts) != len(v.states) || h != v.horizon
	for _, inst := range insts {
		prev := v.states[inst]
		var seq uint64
		if prev != nil {
			seq = prev.Seq
		}
		st, err := v.c.LoadState(ctx, v.o.Layout, inst, prev, v.o.MaxIndexBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", inst, err))
		}
		if st == nil {
			continue
		}
		states[inst] = st
		if st != prev || st.Seq != seq {
			changed = true
		}
	}
	if changed {
		v.rebuild(states, h)
	}
	err = errors.Join(errs...)
	v.setErr(err)
	return err
}

func (v *BucketView) setErr(err error) {
	v.mu.Lock()
	v.lastErr = err
	if err == nil {
		v.refreshed = time.Now()
	}
	v.mu.Unlock()
}

// rebuild makes the series index of states: one view series per label
// set, its sources sorted by instance (the first stored wins a
// timestamp held by several: the lowest instance ID's).
func (v *BucketView) rebuild(states map[string]*bucket.State, h bucket.Horizon) {
	byLabels := make(map[string]*viewSeries)
	objects := make(map[string]bucket.File)
	insts := make([]string, 0, len(states))
	for inst := range states {
		insts = append(insts, inst)
	}
	slices.Sort(insts)
	for _, inst := range insts {
		st := states[inst]
		srcs := make(map[uint64]*viewSource)
		for _, f := range st.Files {
			if h.Expired(f.MaxT) {
				continue
			}
			lset, ok := st.Series[f.Ref]
			if !ok {
				continue // an index without its series' labels: not readable
			}
			src := srcs[f.Ref]
			if src == nil {
				key := string(lset.Bytes(nil))
				vs := byLabels[key]
				if vs == nil {
					vs = &viewSeries{lset: lset}
					byLabels[key] = vs
				}
				vs.sources = append(vs.sources, viewSource{inst: inst})
				src = &vs.sources[len(vs.sources)-1]
				srcs[f.Ref] = src
			}
			src.files[f.Kind] = append(src.files[f.Kind], f)
			objects[v.o.Layout.FileKey(inst, f.Kind, f.Ref, f.Start, f.CRC)] = f
		}
	}
	ix := newIndex()
	series := make(map[uint32]*viewSeries, len(byLabels))
	for _, vs := range byLabels {
		for i := range vs.sources {
			for k := range vs.sources[i].files {
				slices.SortFunc(vs.sources[i].files[k], func(a, b bucket.File) int { return cmp.Compare(a.Start, b.Start) })
			}
		}
		ms := newMemSeries(0, 0)
		ix.add(ms, vs.lset)
		series[ms.id] = vs
	}
	v.mu.Lock()
	v.states, v.horizon, v.ix, v.series, v.objects = states, h, ix, series, objects
	v.mu.Unlock()
}

// Stats is the view's size: instances, series and files, and when the
// last refresh without an error ended.
func (v *BucketView) Stats() (instances, series, files int, refreshed time.Time, err error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.states), len(v.series), len(v.objects), v.refreshed, v.lastErr
}

// CountRetention adds a bucket retention pass run beside the view (a query
// instance that owns retention) to the view's metrics, so its owner
// reports what a writer owning it would.
func (v *BucketView) CountRetention(res bucket.RetentionResult) {
	v.m.retentionDeleted.Add(float64(res.Deleted))
	v.m.retentionDeletedBytes.Add(float64(res.Bytes))
}

// openObject opens a bucket file for the reader cache (keyed by object key).
func (v *BucketView) openObject(key string) (*acta.Reader, bool, error) {
	v.mu.RLock()
	f, ok := v.objects[key]
	v.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	r, err := v.c.OpenFile(key, f.Size, f.CRC, v.cache, acta.Limits{})
	if err != nil {
		v.m.readErrors.Inc()
		return nil, true, fmt.Errorf("bucket view: read %s: %w", v.c.URL(key), err)
	}
	return r, true, nil
}

// match returns the view series matching ms, sorted by labels.
func (v *BucketView) match(ms []*labels.Matcher) []*viewSeries {
	v.mu.RLock()
	ids := v.ix.selectIDs(ms)
	out := make([]*viewSeries, len(ids))
	for i, id := range ids {
		out[i] = v.series[id]
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b *viewSeries) int { return labels.Compare(a.lset, b.lset) })
	return out
}

// Select returns the series matching every matcher with samples in
// [mint, maxt] (ms, inclusive), sorted by labels, loaded one at a time
// (Store.Select's semantics and limits).
func (v *BucketView) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) SeriesSet {
	if err := ctxErr(ctx); err != nil {
		return &errSeriesSet{err: err}
	}
	if mint > maxt {
		return &errSeriesSet{}
	}
	list := v.match(ms)
	if v.o.MaxQuerySeries > 0 && len(list) > v.o.MaxQuerySeries {
		return &errSeriesSet{err: fmt.Errorf("%w: %d series match, limit %d", ErrQueryLimit, len(list), v.o.MaxQuerySeries)}
	}
	vs := &viewSet{v: v, ctx: ctx, list: list, mint: mint, maxt: maxt, i: -1}
	vs.la = newLookahead(len(list), tierLookahead, func(i int) loadedTracks {
		if err := ctxErr(ctx); err != nil {
			return loadedTracks{err: err}
		}
		var lt loadedTracks
		if lt.smps, lt.err = readView(v, floats, list[i], mint, maxt, &lt.st); lt.err == nil {
			lt.hists, lt.err = readView(v, histograms, list[i], mint, maxt, &lt.st)
		}
		return lt
	})
	return vs
}

// LabelNames returns the sorted label names of the series matching ms.
func (v *BucketView) LabelNames(ctx context.Context, ms ...*labels.Matcher) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(ms) == 0 {
		return v.ix.labelNames(nil, true), nil
	}
	return v.ix.labelNames(v.ix.selectIDs(ms), false), nil
}

// LabelValues returns the sorted values of label name among the series
// matching ms.
func (v *BucketView) LabelValues(ctx context.Context, name string, ms ...*labels.Matcher) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(ms) == 0 {
		return v.ix.labelValues(name, nil, true), nil
	}
	return v.ix.labelValues(name, v.ix.selectIDs(ms), false), nil
}

// Series returns the label sets of the series matching ms, sorted.
func (v *BucketView) Series(ctx context.Context, ms ...*labels.Matcher) ([]labels.Labels, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	list := v.match(ms)
	if v.o.MaxQuerySeries > 0 && len(list) > v.o.MaxQuerySeries {
		return nil, fmt.Errorf("%w: %d series match, limit %d", ErrQueryLimit, len(list), v.o.MaxQuerySeries)
	}
	out := make([]labels.Labels, len(list))
	for i, s := range list {
		out[i] = s.lset
	}
	return out, nil
}

// SelectExemplars returns nothing: exemplars stay with their writer.
func (v *BucketView) SelectExemplars(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesExemplars, error) {
	return nil, ctxErr(ctx)
}

// Metadata returns nothing: metric metadata stays with its writer.
func (v *BucketView) Metadata(ctx context.Context, name string) ([]NamedMetadata, error) {
	return nil, ctxErr(ctx)
}

// viewSet loads one series at a time.
type viewSet struct {
	v          *BucketView
	ctx        context.Context
	list       []*viewSeries
	mint, maxt int64
	i          int
	cur        *loadedSeries
	total      int64
	err        error
	st         readStats
	observed   bool
	la         *lookahead[loadedTracks]
}

func (vs *viewSet) Next() bool {
	if vs.err == nil && vs.next() {
		return true
	}
	if !vs.observed {
		vs.observed = true
		vs.v.m.queryBytes.Observe(float64(vs.st.bucketBytes))
		vs.v.m.queryBlocks.Add(float64(vs.st.bucketBlocks))
	}
	return false
}

func (vs *viewSet) next() bool {
	for vs.i+1 < len(vs.list) {
		vs.i++
		if err := ctxErr(vs.ctx); err != nil {
			vs.err = err
			return false
		}
		s := vs.list[vs.i]
		lt := vs.la.get(vs.i)
		smps, hists := lt.smps, lt.hists
		vs.st.bucketBytes += lt.st.bucketBytes
		vs.st.bucketBlocks += lt.st.bucketBlocks
		if lt.err != nil {
			vs.err = lt.err
			return false
		}
		if len(smps) == 0 && len(hists) == 0 {
			continue
		}
		vs.total += int64(len(smps) + len(hists))
		if lim := vs.v.o.MaxQuerySamples; lim > 0 && vs.total > lim {
			vs.err = fmt.Errorf("%w: more than %d samples selected", ErrQueryLimit, lim)
			return false
		}
		vs.cur = &loadedSeries{lset: s.lset, samples: smps, hists: hists}
		return true
	}
	return false
}

func (vs *viewSet) At() Series   { return vs.cur }
func (vs *viewSet) Err() error   { return vs.err }
func (vs *viewSet) Close() error { vs.list, vs.cur = nil, nil; return nil }

// readView reads a view series' samples of kind k in [mint, maxt]: the
// files whose bounds overlap the range, of every source, merged (one
// sample per timestamp; the lowest instance ID's wins, then the first
// stored).
func readView[S any](v *BucketView, k kind[S], s *viewSeries, mint, maxt int64, st *readStats) ([]S, error) {
	var runs [][]S
	for _, src := range s.sources {
		for _, f := range src.files[bucketKind(k.id())] {
			if f.MaxT < mint || f.MinT > maxt {
				continue
			}
			key := v.o.Layout.FileKey(src.inst, f.Kind, f.Ref, f.Start, f.CRC)
			_, _, _, err := readFileStats(k, v.readers, key, mint, maxt, st, func(run []S) error {
				runs = append(runs, run)
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("read %s series %s from %s: %w", k.name(), s.lset, v.c.URL(key), err)
			}
		}
	}
	return mergeRuns(k, runs), nil
}

var _ Querier = (*BucketView)(nil)
