package actastore

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/prometheus/prometheus/model/labels"
)

// ReadOnly is a view of a store directory for tools (acta-remote query and
// tail) while a server may have it open: it takes no lock and writes
// nothing. It sees everything the server acknowledged: what the files hold,
// and what the WAL holds that is not flushed yet (the server's head), of
// every kind; it knows a series as soon as its definition is in the WAL or
// the catalog.
//
// The series files may change under it: blocks appended, a new file per
// time range (rotation), a file replaced by rename (compaction) or removed
// (retention). Reads of a file that disappears are retried from a fresh
// listing.
type ReadOnly struct {
	dir     string
	catalog *wal.Follower
	wal     *wal.Follower
	ix      *index
	byRef   refTable
	// walNewest is the newest timestamp of each series in the WAL records
	// read so far: samples the server acknowledged, flushed or not.
	walNewest map[uint64]int64
	// walData holds the samples of every kind the WAL segments still on
	// disk hold, by segment: a segment the server deleted held only what
	// its files hold now, so its part is dropped at the next Reload.
	walData map[int]map[uint64]*walSeries
	segs    []int // the keys of walData, in order
	// keep, when set, limits walData to the series matching it
	// (OpenReadOnlyFor); keepRef caches the verdict per ref, unresolved
	// holds refs whose definition had not been read when their samples
	// were (it is in the catalog, read after the WAL).
	keep       []*labels.Matcher
	keepRef    map[uint64]bool
	unresolved map[uint64]bool
	// listed is the WAL segment listing of the last Reload; truncations
	// counts the Reloads that found a listed segment gone.
	listed      []int
	hasListed   bool
	ckpt        int       // the WAL checkpoint read (its segment), -1: none
	carry       *takenSet // what TakeWAL handed out before a new checkpoint, until marked
	truncations int
	fs          []Sample
	hs          []HistogramSample
	sts         []StartTime
	lb          labels.ScratchBuilder
	tier        *readOnlyTier // the server uploads to an object store (readonly_tier.go)
}

// walSeries is what one WAL segment holds of one series, in WAL order;
// takenF and takenH count the samples TakeWAL has handed out.
type walSeries struct {
	floats         []Sample
	hists          []HistogramSample
	takenF, takenH int
	// start timestamps of floats and hists, by kind (unsorted)
	starts [numKinds][]StartTime
}

// SeriesInfo is one series of a ReadOnly view.
type SeriesInfo struct {
	Ref     uint64
	Labels  labels.Labels
	Created int64 // ms, when the server first saw it
}

// SeriesFile is one file of a series and its time range.
type SeriesFile struct {
	Path       string
	Start      int64 // from the name: the first timestamp written to it
	MinT, MaxT int64 // over its committed blocks; meaningless when Rows is 0
	Rows       int
}

// OpenReadOnly reads the series definitions of the store in dir, and what
// its WAL holds of every series.
func OpenReadOnly(dir string) (*ReadOnly, error) {
	return OpenReadOnlyFor(dir)
}

// OpenReadOnlyFor is OpenReadOnly keeping, of the WAL's samples, only those
// of the series matching every matcher in ms (Prometheus semantics; none:
// every series), so a view of a few series of a large store holds a few
// series' worth of memory. Samples, Histograms, Read and TakeWAL of other
// series return what their files hold only.
func OpenReadOnlyFor(dir string, ms ...*labels.Matcher) (*ReadOnly, error) {
	if _, err := os.Stat(filepath.Join(dir, seriesDirName)); err != nil {
		return nil, fmt.Errorf("%s is not an acta-remote data directory: %w", dir, err)
	}
	r := &ReadOnly{
		dir:        dir,
		catalog:    wal.NewFollower(filepath.Join(dir, catalogDirName)),
		wal:        wal.NewFollower(filepath.Join(dir, walDirName)),
		ix:         newIndex(),
		walNewest:  make(map[uint64]int64),
		walData:    make(map[int]map[uint64]*walSeries),
		keepRef:    make(map[uint64]bool),
		unresolved: make(map[uint64]bool),
		ckpt:       -1,
	}
	if len(ms) > 0 {
		r.keep = ms
	}
	if _, err := r.Reload(); err != nil {
		return nil, err
	}
	if err := r.loadTier(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the series defined since the last call and returns how many
// are new. The WAL is read before the catalog: the server copies a series
// to the catalog before it deletes the WAL segment defining it, so a series
// missed in a segment deleted meanwhile is found in the catalog after.
//
// A WAL tombstone (a deletion, type 8) drops the samples it covers from
// what the view holds of the WAL records before it, as the server's replay
// does; the files are rewritten by the server.
func (r *ReadOnly) Reload() (int, error) {
	before := len(r.ix.series)
	if err := r.readWAL(); err != nil { // readonly_checkpoint.go
		return 0, err
	}
	if segs, err := wal.Segments(filepath.Join(r.dir, walDirName)); err == nil {
		live := make(map[int]bool, len(segs))
		for _, s := range segs {
			live[s] = true
		}
		for seg := range r.walData {
			if seg != checkpointKey && (!live[seg] || seg < r.ckpt) {
				delete(r.walData, seg) // flushed (the files hold it) or in the checkpoint
			}
		}
		// The server deletes segments oldest first, so a segment created
		// and deleted between two Reloads takes every listed one with it.
		for _, s := range r.listed {
			if r.hasListed && !live[s] && s >= r.ckpt { // below it: the checkpoint counted
				r.truncations++
				break
			}
		}
		r.listed, r.hasListed = segs, true
	}
	r.segs = r.segs[:0]
	for seg := range r.walData {
		r.segs = append(r.segs, seg)
	}
	slices.Sort(r.segs)
	// A removed series (retention deleted its last file) stays in the view:
	// it has no files left, so it prints nothing, and tail keeps looking
	// for the files it gets if its labels come back.
	err := r.catalog.Read(func(seg int, p []byte) error {
		return applyCatalogRecord(&r.lb, seg, p, r.add, func(deletedRec) {})
	})
	if err != nil {
		return 0, fmt.Errorf("read catalog of %s: %w", r.dir, err)
	}
	r.resolveKept()
	return len(r.ix.series) - before, nil
}

// walRecord takes one record of WAL segment seg (or of the checkpoint,
// seg checkpointKey) into the view.
func (r *ReadOnly) walRecord(seg int, p []byte) error {
	switch p[0] {
	case recHeadChunks: // a checkpoint's
		return decodeHeadChunksRecord(p, func(ref uint64, maxT int64, data []byte) error {
			if !r.keeps(ref) {
				r.noteWAL(ref, maxT) // its newest is all the view needs of it
				return nil
			}
			var err error
			if r.fs, err = chunkSamples(floats, r.fs[:0], data); err != nil {
				return err
			}
			return r.addFloats(seg, ref, r.fs)
		})
	case recSeries:
		return decodeSeriesRecord(&r.lb, p, r.add)
	case recSamples:
		var err error
		r.fs, err = decodeSamplesRecord(floats, p, r.fs, func(ref uint64, ss []Sample) error {
			return r.addFloats(seg, ref, ss)
		})
		return err
	case recHistograms:
		var err error
		r.hs, err = decodeSamplesRecord(histograms, p, r.hs, func(ref uint64, hs []HistogramSample) error {
			for _, h := range hs {
				r.noteWAL(ref, h.T)
			}
			if r.keeps(ref) {
				w := r.walSeriesOf(seg, ref)
				w.hists = append(w.hists, hs...)
			}
			return nil
		})
		return err
	case recTombstones:
		return decodeTombstonesRecord(p, func(t tombstone) error {
			r.applyTombstone(t)
			return nil
		})
	case recStartTimes:
		var err error
		r.sts, err = decodeStartsRecord(p, r.sts, func(ref uint64, k kindID, sts []StartTime) error {
			if r.keeps(ref) {
				w := r.walSeriesOf(seg, ref)
				w.starts[k] = append(w.starts[k], sts...)
			}
			return nil
		})
		return err
	}
	return nil // exemplars, metadata, or a record type from a newer server
}

func (r *ReadOnly) addFloats(seg int, ref uint64, ss []Sample) error {
	for _, s := range ss {
		r.noteWAL(ref, s.T)
	}
	if r.keeps(ref) {
		w := r.walSeriesOf(seg, ref)
		w.floats = append(w.floats, ss...)
	}
	return nil
}

// keeps says whether the view keeps ref's WAL samples (OpenReadOnlyFor). A
// ref not defined yet is kept until resolveKept knows its labels.
func (r *ReadOnly) keeps(ref uint64) bool {
	if r.keep == nil {
		return true
	}
	if k, ok := r.keepRef[ref]; ok {
		return k
	}
	ms := r.byRef.get(ref)
	if ms == nil {
		r.unresolved[ref] = true
		return true
	}
	k := seriesMatches(r.ix.labels(nil, ms), r.keep)
	r.keepRef[ref] = k
	return k
}

// resolveKept drops the WAL samples of refs that were unknown when read
// and, now that the catalog named them, turn out not to match.
func (r *ReadOnly) resolveKept() {
	for ref := range r.unresolved {
		delete(r.unresolved, ref)
		if r.byRef.get(ref) == nil || r.keeps(ref) {
			continue
		}
		for _, m := range r.walData {
			delete(m, ref)
		}
	}
}

func seriesMatches(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}

// applyTombstone drops the WAL samples of t.Ref in [t.Mint, t.Maxt] read
// so far (records before the tombstone).
func (r *ReadOnly) applyTombstone(t tombstone) {
	for _, m := range r.walData {
		if w := m[t.Ref]; w != nil {
			w.floats, w.takenF = dropRange(w.floats, w.takenF, func(s Sample) int64 { return s.T }, t)
			w.hists, w.takenH = dropRange(w.hists, w.takenH, func(h HistogramSample) int64 { return h.T }, t)
		}
	}
}

// dropRange removes the samples in t's range from ss, and returns how
// many of the first taken are left.
func dropRange[S any](ss []S, taken int, ts func(S) int64, t tombstone) ([]S, int) {
	out := ss[:0]
	left := taken
	for i, s := range ss {
		if x := ts(s); x >= t.Mint && x <= t.Maxt {
			if i < taken {
				left--
			}
			continue
		}
		out = append(out, s)
	}
	return out, left
}

// Truncations counts the Reloads that found WAL segments deleted since the
// Reload before (the server truncating its WAL after a flush) or a new
// WAL checkpoint. Samples of a segment deleted before this view read them
// are in the series files, possibly in files that were not there at the
// last listing, or in the checkpoint, which TakeWAL hands out.
func (r *ReadOnly) Truncations() int { return r.truncations }

// TakeWAL returns ref's samples of both kinds read from the WAL since the
// last TakeWAL of ref (everything the view holds of it, the first time),
// in the order the server acknowledged them: what a follower of the store
// prints as new. Each WAL record's samples are handed out once, out of
// order ones included; samples of a segment deleted before they were taken
// are not if a flush deleted it (the files hold them; see Truncations),
// and are, in timestamp order, if a checkpoint did.
func (r *ReadOnly) TakeWAL(ref uint64) (fs []Sample, hs []HistogramSample) {
	for _, seg := range r.segs {
		w := r.walData[seg][ref]
		if w == nil {
			continue
		}
		fs = append(fs, w.floats[w.takenF:]...)
		hs = append(hs, w.hists[w.takenH:]...)
		w.takenF, w.takenH = len(w.floats), len(w.hists)
	}
	return fs, hs
}

func (r *ReadOnly) walSeriesOf(seg int, ref uint64) *walSeries {
	m := r.walData[seg]
	if m == nil {
		m = make(map[uint64]*walSeries)
		r.walData[seg] = m
	}
	w := m[ref]
	if w == nil {
		w = &walSeries{}
		m[ref] = w
	}
	return w
}

func (r *ReadOnly) noteWAL(ref uint64, t int64) {
	if old, ok := r.walNewest[ref]; !ok || t > old {
		r.walNewest[ref] = t
	}
}

// walRuns returns ref's samples of kind k that the WAL holds in [mint,
// maxt], one sorted run per segment, segments in order.
func walRuns[S any](r *ReadOnly, k kind[S], ref uint64, mint, maxt int64) [][]S {
	var runs [][]S
	for _, seg := range r.segs {
		w := r.walData[seg][ref]
		if w == nil {
			continue
		}
		var src []S
		switch any(k).(type) {
		case floatKind:
			src = any(w.floats).([]S)
		case histKind:
			src = any(w.hists).([]S)
		}
		var run []S
		for _, smp := range src {
			if t := k.ts(smp); t >= mint && t <= maxt {
				run = append(run, smp)
			}
		}
		if len(run) > 0 {
			slices.SortStableFunc(run, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
			runs = append(runs, run)
		}
	}
	return runs
}

func (r *ReadOnly) add(s seriesRec) error {
	if r.byRef.get(s.Ref) != nil {
		return nil
	}
	ms := newMemSeries(s.Ref, s.Created)
	r.byRef.put(ms)
	r.ix.add(ms, s.Labels)
	return nil
}

// Series returns the series matching every matcher (Prometheus semantics),
// sorted by labels.
func (r *ReadOnly) Series(ms ...*labels.Matcher) []SeriesInfo {
	ids := r.ix.selectIDs(ms)
	out := make([]SeriesInfo, len(ids))
	var sb labels.ScratchBuilder
	for i, id := range ids {
		s := r.ix.series[id]
		out[i] = SeriesInfo{Ref: s.ref, Labels: r.ix.labels(&sb, s), Created: s.created}
	}
	slices.SortFunc(out, func(a, b SeriesInfo) int { return labels.Compare(a.Labels, b.Labels) })
	return out
}

// NewestInWAL is the newest timestamp of ref in the WAL as last read: the
// server acknowledged it, but it may still be in its head only.
func (r *ReadOnly) NewestInWAL(ref uint64) (int64, bool) {
	t, ok := r.walNewest[ref]
	return t, ok
}

// Files lists ref's files now, by start time, with the time range of their
// committed blocks (read from the frame headers, nothing is decoded). A file
// still being created, or removed while listed, is left out.
func (r *ReadOnly) Files(ref uint64) ([]SeriesFile, error) {
	listed, err := r.ListFiles(ref)
	if err != nil {
		return nil, err
	}
	out := listed[:0]
	for _, f := range listed {
		rd, err := OpenSeriesFile(f.Path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && rd == nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, b := range rd.Blocks() {
			if b.Rows == 0 {
				continue
			}
			if f.Rows == 0 || b.Min < f.MinT {
				f.MinT = b.Min
			}
			if f.Rows == 0 || b.Max > f.MaxT {
				f.MaxT = b.Max
			}
			f.Rows += b.Rows
		}
		rd.Close()
		out = append(out, f)
	}
	return out, nil
}

// OpenSeriesFile opens a series file for reading. It returns nil, nil for a
// file whose prologue or schema is not complete yet: the server is creating
// it, and it holds no block.
func OpenSeriesFile(path string) (*acta.Reader, error) {
	rd, err := acta.Open(path)
	if err == nil || !errors.Is(err, acta.ErrCorrupt) {
		return rd, err
	}
	if plan, perr := acta.InspectRecovery(path); perr == nil && plan.SchemaIncomplete {
		return nil, nil
	}
	return nil, err
}

// BatchSamples returns the samples of a batch read from a float series
// file with every column (a Scan or Tail without projection), values as
// float64 bit-exactly whatever the file's value type.
func BatchSamples(s *acta.Schema, b *acta.Batch) ([]Sample, error) {
	if len(b.Columns) != len(s.Columns) {
		return nil, fmt.Errorf("not a series file batch (%d columns, schema %d)", len(b.Columns), len(s.Columns))
	}
	return floats.decode(nil, s, b, math.MinInt64, math.MaxInt64)
}

// BatchHistograms returns the samples of a batch read from a histogram
// series file with every column.
func BatchHistograms(s *acta.Schema, b *acta.Batch) ([]HistogramSample, error) {
	return histograms.decode(nil, s, b, math.MinInt64, math.MaxInt64)
}

// Samples returns ref's float samples in [mint, maxt]: its files merged with
// what the WAL holds of it (acknowledged, maybe not flushed yet), as Select
// merges them (sorted, one sample per timestamp, the one stored first
// wins). When a listed file disappears during the read (compaction merged
// it, retention removed it) the read starts again from a fresh listing.
func (r *ReadOnly) Samples(ref uint64, mint, maxt int64) ([]Sample, error) {
	smps, _, _, err := readOnlyRead(r, floats, ref, mint, maxt)
	return smps, err
}

// Histograms is Samples for native histograms.
func (r *ReadOnly) Histograms(ref uint64, mint, maxt int64) ([]HistogramSample, error) {
	hs, _, _, err := readOnlyRead(r, histograms, ref, mint, maxt)
	return hs, err
}

// SeriesRead is one series' samples of both kinds in a range (Read).
type SeriesRead struct {
	Floats     []Sample          // sorted, one per timestamp
	Histograms []HistogramSample // sorted, one per timestamp
	// FloatStarts and HistogramStarts are the start timestamps stored with
	// Floats and Histograms (sorted by T, one per sample that has one; nil
	// when none has).
	FloatStarts, HistogramStarts []StartTime
	// WALOnly counts those of both kinds that no series file holds yet:
	// acknowledged, still in the server's head.
	WALOnly int
}

// Read is Samples and Histograms of ref at once, with how many of them only
// the WAL holds.
func (r *ReadOnly) Read(ref uint64, mint, maxt int64) (SeriesRead, error) {
	var out SeriesRead
	var nf, nh int
	var err error
	if out.Floats, out.FloatStarts, nf, err = readOnlyRead(r, floats, ref, mint, maxt); err != nil {
		return SeriesRead{}, err
	}
	if out.Histograms, out.HistogramStarts, nh, err = readOnlyRead(r, histograms, ref, mint, maxt); err != nil {
		return SeriesRead{}, err
	}
	out.WALOnly = nf + nh
	return out, nil
}

// readOnlyRead returns ref's samples of kind k in [mint, maxt] and how many
// of them are in the WAL only.
func readOnlyRead[S any](r *ReadOnly, k kind[S], ref uint64, mint, maxt int64) ([]S, []StartTime, int, error) {
	const attempts = 5
	var err error
	for range attempts {
		var runs [][]S
		var stRuns [][]StartTime
		if runs, stRuns, err = readOnlyFiles(r, k, ref, mint, maxt); !errors.Is(err, os.ErrNotExist) {
			if err != nil {
				return nil, nil, 0, err
			}
			inFiles := mergeRuns(k, runs)
			stRuns = append(stRuns, walStarts(r, k, ref, mint, maxt)) // files first: they win ties
			wal := walRuns(r, k, ref, mint, maxt)
			if len(wal) == 0 {
				return inFiles, startsFor(k, mergeStarts(stRuns), inFiles), 0, nil
			}
			n := len(inFiles)
			if n > 0 {
				wal = append([][]S{inFiles}, wal...) // first: files win ties, as in Select
			}
			all := mergeRuns(k, wal)
			return all, startsFor(k, mergeStarts(stRuns), all), len(all) - n, nil
		}
	}
	return nil, nil, 0, fmt.Errorf("series %016x: files kept changing during %d reads: %w", ref, attempts, err)
}

func readOnlyFiles[S any](r *ReadOnly, k kind[S], ref uint64, mint, maxt int64) ([][]S, [][]StartTime, error) {
	files, err := listFiles(r.dir, k.dir(), ref)
	if err != nil {
		return nil, nil, err
	}
	files, rc := r.withBucketFiles(k.id(), ref, files)
	var runs [][]S
	var stRuns [][]StartTime
	for _, f := range SkipSealedBefore(files, mint) {
		_, _, _, err := readFileStarts(k, rc, f.Path, mint, maxt, nil, func(run []S, sts []StartTime) error {
			runs = append(runs, run)
			if len(sts) > 0 {
				stRuns = append(stRuns, sts)
			}
			return nil
		})
		if err != nil && errors.Is(err, acta.ErrCorrupt) {
			if rd, oerr := OpenSeriesFile(f.Path); oerr == nil && rd == nil {
				continue // being created: no block yet
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s series %016x file %s: %w", k.name(), ref, f.Path, err)
		}
	}
	return runs, stRuns, nil
}

// SkipSealedBefore drops, from a series' files sorted by start, the sealed
// ones that hold nothing at or after mint: every sample of a sealed file is
// before the next file's start (docs/format/series.md), so they are known
// from the names without opening them.
func SkipSealedBefore(files []SeriesFile, mint int64) []SeriesFile {
	for len(files) > 1 && files[1].Start <= mint {
		files = files[1:]
	}
	return files
}

// Newest returns the newest flushed timestamp of ref: the greatest block
// bound of its newest file with rows (a sealed file's samples are all
// before its successor's start).
func (r *ReadOnly) Newest(ref uint64) (int64, bool, error) {
	files, err := r.ListFiles(ref)
	if err != nil {
		return 0, false, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		rd, err := OpenSeriesFile(files[i].Path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && rd == nil) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		newest, ok := int64(0), false
		for _, b := range rd.Blocks() {
			if b.Rows > 0 && (!ok || b.Max > newest) {
				newest, ok = b.Max, true
			}
		}
		rd.Close()
		if ok {
			return newest, true, nil
		}
	}
	return 0, false, nil
}

// ListFiles lists ref's float files now, by start time, from their names
// only (Path and Start; no file is opened).
func (r *ReadOnly) ListFiles(ref uint64) ([]SeriesFile, error) {
	return listFiles(r.dir, seriesDirName, ref)
}

// ListHistogramFiles is ListFiles for ref's native histogram files.
func (r *ReadOnly) ListHistogramFiles(ref uint64) ([]SeriesFile, error) {
	return listFiles(r.dir, histDirName, ref)
}

func listFiles(root, kindDir string, ref uint64) ([]SeriesFile, error) {
	sdir := filepath.Join(root, kindDir, shardName(ref))
	ents, err := os.ReadDir(sdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SeriesFile
	away := mergedAway(ents)
	for _, e := range ents {
		if away[e.Name()] {
			continue
		}
		if fref, start, ok := parseSeriesFileName(e.Name()); ok && fref == ref {
			out = append(out, SeriesFile{Path: filepath.Join(sdir, e.Name()), Start: start})
		}
	}
	slices.SortFunc(out, func(a, b SeriesFile) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}

// ListFilesOf is ListFiles for many series at once, reading each shard
// directory once: what a tail of thousands of series does every rescan.
func (r *ReadOnly) ListFilesOf(refs []uint64) (map[uint64][]SeriesFile, error) {
	return listFilesOf(r.dir, seriesDirName, refs)
}

// ListHistogramFilesOf is ListFilesOf for the series' native histogram files.
func (r *ReadOnly) ListHistogramFilesOf(refs []uint64) (map[uint64][]SeriesFile, error) {
	return listFilesOf(r.dir, histDirName, refs)
}

func listFilesOf(root, kindDir string, refs []uint64) (map[uint64][]SeriesFile, error) {
	want := make(map[uint64]bool, len(refs))
	shards := make(map[string]bool)
	for _, ref := range refs {
		want[ref] = true
		shards[shardName(ref)] = true
	}
	out := make(map[uint64][]SeriesFile, len(refs))
	for sh := range shards {
		sdir := filepath.Join(root, kindDir, sh)
		ents, err := os.ReadDir(sdir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		away := mergedAway(ents)
		for _, e := range ents {
			if away[e.Name()] {
				continue
			}
			if ref, start, ok := parseSeriesFileName(e.Name()); ok && want[ref] {
				out[ref] = append(out[ref], SeriesFile{Path: filepath.Join(sdir, e.Name()), Start: start})
			}
		}
	}
	for _, files := range out {
		slices.SortFunc(files, func(a, b SeriesFile) int { return cmp.Compare(a.Start, b.Start) })
	}
	return out, nil
}
