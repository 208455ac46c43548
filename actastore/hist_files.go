package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
)

// Files of the histogram side of the store, under <dir>/histograms/:
//
//	wal/00000000 ...               histogram WAL (records in hist_records.go)
//	<ab>/<ref>-<start>.acta         a series' native histograms (histfile schema),
//	                               one file per rotation period or size, named
//	                               and routed like float series files (rotation.Policy)
//	<ab>/<ref>.exemplars.acta       a series' newest exemplars: timestamp, value, labels
//	metadata.acta                   metric family metadata: name, type, unit, help
//	*.tmp                           a rewrite before its rename; swept at open
//
// Histogram files rotate, expire and count for the size cap like float
// series files (rotate.go, maintain.go); they are not compacted
// (rotation.CompactFile knows the float schema only). A file named
// <ab>/<ref>.acta (before rotation) is renamed at open to
// <ref>-<first sample>.acta.
const (
	histDirName       = "histograms"
	histFileExt       = ".acta"
	exemplarFileExt   = ".exemplars.acta"
	metadataFileName  = "metadata.acta"
	exemplarSchemaID  = 3
	metadataSchemaID  = 4
	maxExemplarsKept  = 32 // per series, newest first out: Prometheus's exemplar storage is a bounded ring too
	exemplarFileSlack = 4  // rewrite an exemplar file once it holds this many times maxExemplarsKept rows
	maxHistBlockRows  = 4096
)

// histFilePath is the histogram file of series ref starting at startMs;
// the name is a series file's (seriesFileName).
func histFilePath(root string, ref uint64, startMs int64) string {
	return filepath.Join(root, histDirName, shardName(ref), seriesFileName(ref, startMs))
}

// legacyHistFilePath is the one histogram file of a series written before
// histogram files rotated.
func legacyHistFilePath(root string, ref uint64) string {
	return filepath.Join(root, histDirName, shardName(ref), fmt.Sprintf("%016x%s", ref, histFileExt))
}

// histFileRange returns the least and greatest timestamp of a histogram
// file from its block index (no block is read); ok is false without rows.
func histFileRange(path string) (minT, maxT int64, ok bool, err error) {
	r, err := acta.Open(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer r.Close()
	for _, bi := range r.Blocks() {
		if bi.Rows == 0 {
			continue
		}
		if !ok {
			minT, maxT, ok = bi.Min, bi.Max, true
			continue
		}
		minT, maxT = min(minT, bi.Min), max(maxT, bi.Max)
	}
	return minT, maxT, ok, nil
}

func exemplarFilePath(root string, ref uint64) string {
	return filepath.Join(root, histDirName, shardName(ref), fmt.Sprintf("%016x%s", ref, exemplarFileExt))
}

var exemplarSchema = mustSchema(acta.NewSchema(exemplarSchemaID, []acta.Column{
	{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
	{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	{ID: 3, Name: "labels", Type: acta.Of(acta.TypeBinary)}, // canonical label encoding (catalog.md)
}, "timestamp"))

var metadataSchema = mustSchema(acta.NewSchema(metadataSchemaID, []acta.Column{
	{ID: 1, Name: "name", Type: acta.Of(acta.TypeUTF8)},
	{ID: 2, Name: "type", Type: acta.Of(acta.TypeUTF8)},
	{ID: 3, Name: "unit", Type: acta.Of(acta.TypeUTF8)},
	{ID: 4, Name: "help", Type: acta.Of(acta.TypeUTF8)},
}, ""))

func mustSchema(s *acta.Schema, err error) *acta.Schema {
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return s
}

// histWriterOptions: histogram blocks are small and their binary columns
// repetitive, so zstd always.
func histWriterOptions(fo fileOptions) acta.WriterOptions {
	return acta.WriterOptions{Codec: acta.CodecZstd, ZstdLevel: fo.zstdLevel, Encoding: acta.EncodingAdaptive, RowBlockTarget: maxHistBlockRows}
}

// appendActaBlock appends b as one block to path (created with schema if
// missing, an incomplete tail cut first) and syncs it.
func appendActaBlock(path string, schema *acta.Schema, b *acta.Batch, opts acta.WriterOptions) (created bool, err error) {
	w, err := acta.OpenWriter(path, opts)
	if errors.Is(err, acta.ErrIncompleteTail) {
		if _, rerr := acta.RepairIncompleteTail(path); rerr != nil {
			return false, fmt.Errorf("repair %s before append: %w", path, rerr)
		}
		w, err = acta.OpenWriter(path, opts)
	}
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, err
		}
		w, err = acta.Create(path, schema, opts)
		created = true
	}
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	if err := w.Append(b); err != nil {
		w.Close()
		return created, fmt.Errorf("append to %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		w.Close()
		return created, fmt.Errorf("flush %s: %w", path, err)
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return created, fmt.Errorf("sync %s: %w", path, err)
	}
	return created, w.Close()
}

// readHistFile returns the samples of a histogram file in [mint, maxt],
// block by block in file order (each block sorted); blocks outside the
// range are skipped undecoded.
func readHistFile(path string, mint, maxt int64) ([][]HistogramSample, error) {
	r, err := acta.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var runs [][]HistogramSample
	for i, bi := range r.Blocks() {
		if bi.Rows == 0 || bi.Max < mint || bi.Min > maxt {
			continue
		}
		b, err := r.ReadBlock(i)
		if err != nil {
			return nil, fmt.Errorf("read block %d of %s: %w", i, path, err)
		}
		hs, err := histfile.Decode(nil, b)
		if err != nil {
			return nil, fmt.Errorf("decode block %d of %s: %w", i, path, err)
		}
		hs = slices.DeleteFunc(hs, func(h HistogramSample) bool { return h.T < mint || h.T > maxt })
		slices.SortStableFunc(hs, func(a, b HistogramSample) int { return cmpInt64(a.T, b.T) })
		runs = append(runs, hs)
	}
	return runs, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// writeFileAtomic writes an Acta file with one block through a temporary
// name: fsync, rename, fsync the directory.
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
	if err := w.Flush(); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func metadataBatch(md map[string]Metadata) *acta.Batch {
	names := make([]string, 0, len(md))
	for n := range md {
		names = append(names, n)
	}
	slices.Sort(names)
	cols := [4]acta.BytesArray{}
	for i := range cols {
		cols[i].Offsets = []int{0}
	}
	for _, n := range names {
		m := md[n]
		for i, s := range []string{n, string(m.Type), m.Unit, m.Help} {
			cols[i].Data = append(cols[i].Data, s...)
			cols[i].Offsets = append(cols[i].Offsets, len(cols[i].Data))
		}
	}
	return &acta.Batch{Schema: metadataSchema, Rows: len(names), Columns: []acta.Array{&cols[0], &cols[1], &cols[2], &cols[3]}}
}

func readMetadataFile(path string, into map[string]Metadata) error {
	r, err := acta.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			return fmt.Errorf("read block %d of %s: %w", i, path, err)
		}
		var c [4]*acta.BytesArray
		for j := range c {
			var ok bool
			if c[j], ok = b.Columns[j].(*acta.BytesArray); !ok {
				return fmt.Errorf("%s: column %d is %T", path, j, b.Columns[j])
			}
		}
		for j := 0; j < b.Rows; j++ {
			into[string(c[0].Value(j))] = Metadata{Type: model.MetricType(c[1].Value(j)), Unit: string(c[2].Value(j)), Help: string(c[3].Value(j))}
		}
	}
	return nil
}

// sameHistogram compares two samples bit for bit (every field).
func sameHistogram(a, b HistogramSample) bool {
	if a.IsFloat() != b.IsFloat() || math.Float64bits(a.Sum()) != math.Float64bits(b.Sum()) {
		return false
	}
	return string(histfile.AppendRecord(nil, a)) == string(histfile.AppendRecord(nil, b))
}

// scanHistFiles registers every series' histogram files (renaming a
// pre-rotation <ref>.acta to <ref>-<first sample>.acta) and notes the
// newest file's newest sample.
func (h *histStore) scanHistFiles() error {
	shards, err := os.ReadDir(h.root)
	if err != nil {
		return err
	}
	var found []*histSeries
	for _, sh := range shards {
		if !sh.IsDir() || len(sh.Name()) != 2 {
			continue
		}
		dir := filepath.Join(h.root, sh.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		renamed := false
		for _, f := range files {
			name := f.Name()
			ref, start, ok := parseSeriesFileName(name)
			legacy := !ok && len(name) == 16+len(histFileExt) && name[16:] == histFileExt
			if legacy {
				var err error
				if ref, err = strconv.ParseUint(name[:16], 16, 64); err != nil {
					continue
				}
				minT, _, any, err := histFileRange(filepath.Join(dir, name))
				if err != nil {
					return fmt.Errorf("histogram file %s: %w", name, err)
				}
				start = 0
				if any {
					start = minT
				}
				to := histFilePath(h.s.dir, ref, start)
				if _, err := os.Stat(to); err == nil {
					h.s.log.Warn("pre-rotation histogram file left alone: its new name is taken", "file", name)
					continue
				}
				if err := os.Rename(filepath.Join(dir, name), to); err != nil {
					return err
				}
				renamed, ok = true, true
			} else if !ok {
				if len(name) != 16+len(exemplarFileExt) || name[16:] != exemplarFileExt {
					continue
				}
				var err error
				if ref, err = strconv.ParseUint(name[:16], 16, 64); err != nil {
					continue
				}
			}
			st := h.seriesByRef(ref)
			if st == nil {
				h.s.log.Warn("histogram file of an unknown series left alone", "file", name)
				continue
			}
			if ok {
				if len(st.files) == 0 {
					found = append(found, st)
				}
				st.files = append(st.files, start)
			}
		}
		if renamed {
			if err := syncDir(dir); err != nil {
				return err
			}
		}
	}
	for _, st := range found {
		slices.Sort(st.files)
		st.files = slices.Compact(st.files)
		if err := st.noteNewestLocked(h.s.dir); err != nil {
			return err
		}
	}
	return nil
}

// noteNewestLocked reads the newest file's newest sample (st.mu held or
// st not shared).
func (st *histSeries) noteNewestLocked(root string) error {
	st.newestMax = noTime
	if n := len(st.files); n > 0 {
		_, maxT, ok, err := histFileRange(histFilePath(root, st.ref, st.files[n-1]))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("histogram file of series %016x: %w", st.ref, err)
		}
		if ok {
			st.newestMax = maxT
		}
	}
	return nil
}
