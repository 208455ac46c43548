package actastore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/durable"
)

// Exemplars: each series keeps its newest maxExemplarsKept, in memory and in
// its exemplar file histograms/<ab>/<ref>.exemplars.acta (timestamp, value,
// canonical labels). New exemplars are in the WAL first; the series' flush
// appends them to the file, which is rewritten with the kept ones once it
// holds exemplarFileSlack times as many rows.
const (
	maxExemplarsKept  = 32 // per series, newest first out: Prometheus's exemplar storage is a bounded ring too
	exemplarFileSlack = 4
	// exemplarAgeFactor: exemplars wait at most this many MaxHeadAge in the
	// head (in the WAL) when their series flushes nothing else.
	exemplarAgeFactor = 4
	exemplarSchemaID  = 3
)

// exemplarFileKind keys exemplar files in the writer cache beside the
// sample kinds' files.
const exemplarFileKind kindID = 100

var exemplarSchema = mustSchema(acta.NewSchema(exemplarSchemaID, []acta.Column{
	{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
	{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	{ID: 3, Name: "labels", Type: acta.Of(acta.TypeBinary)}, // canonical label encoding (catalog.md)
}, "timestamp"))

var exemplarWriterOptions = acta.WriterOptions{Codec: acta.CodecZstd, Encoding: acta.EncodingAdaptive}

func exemplarFilePath(root string, ref uint64) string {
	return filepath.Join(root, histDirName, shardName(ref), fmt.Sprintf("%016x%s", ref, exemplarFileExt))
}

// exemplars are one series' newest exemplars. Guarded by the series' mu.
type exemplars struct {
	kept      []Exemplar // newest last, at most maxExemplarsKept
	unflushed int        // how many of the newest kept are not in the file
	fileRows  int        // rows in the file (when loaded)
	loaded    bool       // the file's exemplars are merged into kept
	seg       int32      // WAL segment of the oldest unflushed exemplar
	since     int64      // unix ns when the oldest unflushed arrived
	// added counts the exemplars ever kept: a flush leaves unflushed
	// those added since it took its copy (subtracting what it wrote
	// marked some written when more than the free room arrived meanwhile,
	// and a WAL checkpoint or truncation then lost them).
	added uint64
}

// exemplarsLocked returns the series' exemplars, creating them (mu held).
func (ms *memSeries) exemplarsLocked() *exemplars {
	x := ms.extrasLocked()
	if x.ex == nil {
		x.ex = &exemplars{}
	}
	return x.ex
}

func sameExemplar(a, b Exemplar) bool {
	return a.T == b.T && math.Float64bits(a.Value) == math.Float64bits(b.Value) && labels.Equal(a.Labels, b.Labels)
}

// add keeps es (newest last), dropping exact repeats of a kept one (senders
// resend). It returns how many it was given: repeats count as stored.
func (e *exemplars) add(es []Exemplar, seg int32, nowNs int64) int {
	for _, x := range es {
		if slices.ContainsFunc(e.kept, func(o Exemplar) bool { return sameExemplar(o, x) }) {
			continue
		}
		if e.unflushed == 0 {
			e.seg, e.since = seg, nowNs
		} else {
			e.seg = min(e.seg, seg) // commits apply out of WAL order (track.headFrom)
		}
		x.Labels = x.Labels.Copy() // the caller's batch memory is not ours
		e.kept = append(e.kept, x)
		e.unflushed++
		e.added++
	}
	if n := len(e.kept); n > maxExemplarsKept {
		e.kept = slices.Delete(e.kept, 0, n-maxExemplarsKept)
	}
	e.unflushed = min(e.unflushed, len(e.kept))
	return len(es)
}

// loadExemplars merges the series' exemplar file into what it keeps in
// memory, once (the file is read outside the series' lock).
func (s *Store) loadExemplars(ms *memSeries) {
	ms.mu.Lock()
	if e := ms.ex(); e != nil && e.loaded {
		ms.mu.Unlock()
		return
	}
	ms.mu.Unlock()
	old, rows, err := readExemplarFile(exemplarFilePath(s.dir, ms.ref), maxExemplarsKept)
	if err != nil {
		s.log.Warn("cannot read exemplar file; starting it over", "ref", fmt.Sprintf("%016x", ms.ref), "err", err)
		old, rows = nil, 0
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	e := ms.exemplarsLocked()
	if e.loaded {
		return
	}
	e.kept, e.unflushed = mergeExemplars(old, e.kept, e.unflushed, maxExemplarsKept)
	e.fileRows, e.loaded = rows, true
}

// flushExemplars appends the series' unflushed exemplars to its exemplar
// file, or rewrites the file with the kept ones once it has grown past its
// slack. Called with the series' flush lock held.
func (s *Store) flushExemplars(ms *memSeries) error {
	ms.mu.Lock()
	if e := ms.ex(); e == nil || e.unflushed == 0 {
		ms.mu.Unlock()
		return nil
	}
	ms.mu.Unlock()
	s.loadExemplars(ms)
	ms.mu.Lock()
	e := ms.ex()
	n := e.unflushed
	if n == 0 { // the file held them all
		ms.mu.Unlock()
		return nil
	}
	fresh := slices.Clone(e.kept[len(e.kept)-n:])
	kept := slices.Clone(e.kept)
	rows, added := e.fileRows, e.added
	ms.mu.Unlock()

	path := exemplarFilePath(s.dir, ms.ref)
	key := fileKey{ref: ms.ref, kind: exemplarFileKind}
	if rows+len(fresh) > exemplarFileSlack*maxExemplarsKept {
		// Keep the file bounded: rewrite it with the kept exemplars.
		s.writers.forget(key, path)
		if err := writeActaFileAtomic(path, exemplarSchema, exemplarBatch(kept), exemplarWriterOptions); err != nil {
			return fmt.Errorf("rewrite exemplars of series %016x: %w", ms.ref, err)
		}
		rows = len(kept)
	} else {
		_, err := os.Stat(path)
		create := errors.Is(err, os.ErrNotExist)
		w, err := s.writers.acquire(key, path, create, exemplarSchema, exemplarWriterOptions)
		if err != nil {
			return fmt.Errorf("flush exemplars of series %016x: %w", ms.ref, err)
		}
		err = w.appendBlock(exemplarBatch(fresh))
		if err != nil {
			w.broken = true
		} else {
			w.dirty = true
		}
		s.writers.release(w)
		if err != nil {
			return fmt.Errorf("flush exemplars of series %016x: %w", ms.ref, err)
		}
		rows += len(fresh)
	}
	ms.mu.Lock()
	e.fileRows = rows
	e.unflushed = int(min(e.added-added, uint64(len(e.kept))))
	ms.mu.Unlock()
	return nil
}

func exemplarBatch(es []Exemplar) *acta.Batch {
	ts := make([]int64, len(es))
	vs := make([]float64, len(es))
	ls := acta.BytesArray{Offsets: []int{0}}
	for i, e := range es {
		ts[i], vs[i] = e.T, e.Value
		ls.Data = appendCanonicalLabels(ls.Data, e.Labels)
		ls.Offsets = append(ls.Offsets, len(ls.Data))
	}
	return &acta.Batch{Schema: exemplarSchema, Rows: len(es), Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}, &ls}}
}

// readExemplarFile returns the newest max exemplars of a file and its row
// count.
func readExemplarFile(path string, max int) ([]Exemplar, int, error) {
	r, err := acta.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var out []Exemplar
	rows := 0
	var sb labels.ScratchBuilder
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			return nil, 0, fmt.Errorf("read block %d of %s: %w", i, path, err)
		}
		ts, ok1 := b.Columns[0].(*acta.FixedArray[int64])
		vs, ok2 := b.Columns[1].(*acta.FixedArray[float64])
		ls, ok3 := b.Columns[2].(*acta.BytesArray)
		if !ok1 || !ok2 || !ok3 {
			return nil, 0, fmt.Errorf("%s block %d: unexpected column types", path, i)
		}
		for j := 0; j < b.Rows; j++ {
			lset, _, err := decodeCanonicalLabels(&sb, ls.Value(j))
			if err != nil {
				return nil, 0, fmt.Errorf("%s block %d row %d: %w", path, i, j, err)
			}
			out = append(out, Exemplar{T: ts.Values[j], Value: vs.Values[j], Labels: lset})
		}
		rows += b.Rows
	}
	if len(out) > max {
		out = slices.Clone(out[len(out)-max:])
	}
	return out, rows, nil
}

// writeActaFileAtomic writes an Acta file with one block through a
// temporary name: fsync, rename, fsync the directory.
func writeActaFileAtomic(path string, schema *acta.Schema, b *acta.Batch, opts acta.WriterOptions) error {
	tmp := path + tmpSuffix
	os.Remove(tmp)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	w, err := acta.Create(tmp, schema, opts)
	if err != nil {
		return err
	}
	if b.Rows > 0 {
		if err := w.Append(b); err != nil {
			w.Close()
			return err
		}
	}
	if _, err := w.Finish(); err != nil { // publishes, fsyncs the file and its directory entry
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}

// SelectExemplars returns the kept exemplars of matching series in
// [mint, maxt] (ms, inclusive), per series in timestamp order
// (ExemplarQuerier).
func (s *Store) SelectExemplars(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]SeriesExemplars, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var with []*memSeries
	exs := map[*memSeries][]Exemplar{}
	for _, m := range s.matchSeries(ms) {
		// A series with exemplars (in memory or in its file, found at
		// Open) has ex set.
		m.mu.Lock()
		none := m.ex() == nil
		m.mu.Unlock()
		if none {
			continue
		}
		s.loadExemplars(m)
		m.mu.Lock()
		var es []Exemplar
		for _, e := range m.ex().kept {
			if e.T >= mint && e.T <= maxt {
				es = append(es, e)
			}
		}
		m.mu.Unlock()
		if len(es) > 0 {
			slices.SortStableFunc(es, func(a, b Exemplar) int { return cmpInt64(a.T, b.T) })
			with = append(with, m)
			exs[m] = es
		}
	}
	with, lsets := s.sortByLabels(with)
	var out []SeriesExemplars
	for i, m := range with {
		out = append(out, SeriesExemplars{Labels: lsets[i], Exemplars: exs[m]})
	}
	return out, nil
}
