package actastore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/acta-remote/acta-remote/acta"
)

// StartTime says that the sample (or histogram) of a series at T counts
// from ST: its start timestamp, ms since the Unix epoch, as a sender gives
// it (Remote-Write 2.0 Sample.start_timestamp = 3 and
// Histogram.start_timestamp = 17; OTLP StartTimeUnixNano / 1e6). A counter's
// start timestamp is the time it last started from zero.
//
// Start timestamps are sparse: only samples a sender gave one carry one, so
// the store keeps them beside the samples, as lists sorted by T, and a
// series without any pays nothing per sample (head, WAL or file). A list
// entry whose T is not a stored sample of the series is ignored.
type StartTime struct{ T, ST int64 }

// Start-timestamp column of series files (docs/format/series.md): a
// nullable timestamp64(ms, UTC) column after the kind's columns, present
// only in files that hold at least one start timestamp; null on rows
// without one. The same name and ID in float and histogram files (the
// histogram columns use IDs 1..15, the float ones 1..3). Frozen.
const (
	colStart   = "start_timestamp"
	colStartID = 16
)

// recStartTimes: start timestamps of samples of one or more series, written
// in the same WAL write as the samples they belong to, after them (older
// WALs have none and replay unchanged). Layout (docs/format/wal.md):
//
//	type=9 | count uvarint | count × (ref uint64 LE | kind uint8 |
//	n uvarint | n × (Δt varint | t−st varint))
//
// Δt is t minus the previous entry's t (the first entry's t itself).
// Frozen.
const recStartTimes byte = 9

// refStarts are start timestamps of one kind of one series.
type refStarts struct {
	Ref    uint64
	Kind   kindID
	Starts []StartTime
}

// appendStartsRecords adds the start-timestamp records of series to rb.
func appendStartsRecords(rb *recordBuilder, series []refStarts) {
	for len(series) > 0 {
		body := rb.body[:0]
		n := 0
		for n < len(series) && len(body) < maxRecordPayload {
			body = appendStartsEntry(body, series[n])
			n++
		}
		rb.add(recStartTimes, n, body)
		rb.body = body
		series = series[n:]
	}
}

// appendStartsEntry appends one series' entry of a start-times record.
func appendStartsEntry(body []byte, s refStarts) []byte {
	body = binary.LittleEndian.AppendUint64(body, s.Ref)
	body = append(body, byte(s.Kind))
	body = binary.AppendUvarint(body, uint64(len(s.Starts)))
	prev := int64(0)
	for _, st := range s.Starts {
		body = binary.AppendVarint(body, st.T-prev)
		body = binary.AppendVarint(body, st.T-st.ST)
		prev = st.T
	}
	return body
}

// decodeStartsRecord calls fn for each series' entry of a start-timestamp
// record (type byte included); the slice passed to fn is scratch.
func decodeStartsRecord(rec []byte, scratch []StartTime, fn func(ref uint64, k kindID, sts []StartTime) error) ([]StartTime, error) {
	if len(rec) == 0 || rec[0] != recStartTimes {
		return scratch, fmt.Errorf("%w: not a start-timestamp record", errRecord)
	}
	n, c := binary.Uvarint(rec[1:])
	if c <= 0 {
		return scratch, fmt.Errorf("%w: start-timestamp series count", errRecord)
	}
	src := rec[1+c:]
	for i := uint64(0); i < n; i++ {
		if len(src) < 9 {
			return scratch, fmt.Errorf("%w: start-timestamp series %d of %d cut short", errRecord, i, n)
		}
		ref, k := binary.LittleEndian.Uint64(src), kindID(src[8])
		if k >= numKinds {
			return scratch, fmt.Errorf("%w: start timestamps of unknown kind %d", errRecord, k)
		}
		cnt, c := binary.Uvarint(src[9:])
		// Each entry takes at least two bytes: never allocate from a count
		// the record cannot hold.
		if c <= 0 || cnt > uint64(len(src))/2 {
			return scratch, fmt.Errorf("%w: start-timestamp count of series %d", errRecord, i)
		}
		src = src[9+c:]
		scratch = scratch[:0]
		t := int64(0)
		for j := uint64(0); j < cnt; j++ {
			dt, a := binary.Varint(src)
			if a <= 0 {
				return scratch, fmt.Errorf("%w: start-timestamp entry %d of series %d", errRecord, j, i)
			}
			d, b := binary.Varint(src[a:])
			if b <= 0 {
				return scratch, fmt.Errorf("%w: start-timestamp entry %d of series %d", errRecord, j, i)
			}
			t += dt
			scratch = append(scratch, StartTime{T: t, ST: t - d})
			src = src[a+b:]
		}
		if err := fn(ref, k, scratch); err != nil {
			return scratch, err
		}
	}
	if len(src) != 0 {
		return scratch, fmt.Errorf("%w: %d trailing bytes after %d start-timestamp series", errRecord, len(src), n)
	}
	return scratch, nil
}

// sortStarts sorts a start-timestamp list by T, keeping the first entry of
// each T (the first stored wins, as for samples).
func sortStarts(sts []StartTime) []StartTime {
	if !slices.IsSortedFunc(sts, func(a, b StartTime) int { return cmpInt64(a.T, b.T) }) {
		slices.SortStableFunc(sts, func(a, b StartTime) int { return cmpInt64(a.T, b.T) })
	}
	for i := 1; i < len(sts); i++ {
		if sts[i].T == sts[i-1].T {
			out := sts[:i]
			for _, s := range sts[i+1:] {
				if s.T != out[len(out)-1].T {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return sts
}

// mergeStarts merges the lists of runs (earlier runs win a T).
func mergeStarts(runs [][]StartTime) []StartTime {
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return sortStarts(runs[0])
	}
	var all []StartTime
	for _, r := range runs {
		all = append(all, r...)
	}
	return sortStarts(all)
}

// startsFor returns the entries of sorted sts whose T is a timestamp of
// sorted ss: the start timestamps of exactly those samples.
func startsFor[S any](k kind[S], sts []StartTime, ss []S) []StartTime {
	if len(sts) == 0 || len(ss) == 0 {
		return nil
	}
	var out []StartTime
	j := 0
	for _, st := range sts {
		for j < len(ss) && k.ts(ss[j]) < st.T {
			j++
		}
		if j == len(ss) {
			break
		}
		if k.ts(ss[j]) == st.T {
			out = append(out, st)
		}
	}
	return out
}

// startsIn returns the entries of sorted sts with T in [mint, maxt].
func startsIn(sts []StartTime, mint, maxt int64) []StartTime {
	lo, _ := slices.BinarySearchFunc(sts, mint, func(s StartTime, t int64) int { return cmpInt64(s.T, t) })
	hi := lo
	for hi < len(sts) && sts[hi].T <= maxt {
		hi++
	}
	if lo == hi {
		return nil
	}
	return sts[lo:hi]
}

// schemaWithStart returns s with the start-timestamp column appended
// (same schema ID: a file is final or not as before). Cached: schemas are
// few and never modified.
func schemaWithStart(s *acta.Schema) *acta.Schema {
	if s.Index(colStart) >= 0 {
		return s
	}
	key := schemaKey(s)
	if v, ok := startSchemas.Load(key); ok {
		return v.(*acta.Schema)
	}
	cols := append(slices.Clone(s.Columns), acta.Column{ID: colStartID, Name: colStart, Type: acta.Timestamp(acta.Millisecond), Nullable: true})
	primary := ""
	for _, c := range s.Columns {
		if c.ID == s.Primary {
			primary = c.Name
		}
	}
	ws, err := acta.NewSchema(s.ID, cols, primary)
	if err != nil {
		panic("BUG: start-timestamp schema: " + err.Error())
	}
	v, _ := startSchemas.LoadOrStore(key, ws)
	return v.(*acta.Schema)
}

// schemaWithoutStart is s without its start-timestamp column (s itself
// when it has none).
func schemaWithoutStart(s *acta.Schema) *acta.Schema {
	i := s.Index(colStart)
	if i < 0 {
		return s
	}
	key := schemaKey(s)
	if v, ok := startSchemas.Load(key); ok {
		return v.(*acta.Schema)
	}
	cols := slices.Delete(slices.Clone(s.Columns), i, i+1)
	primary := ""
	for _, c := range cols {
		if c.ID == s.Primary {
			primary = c.Name
		}
	}
	ws, err := acta.NewSchema(s.ID, cols, primary)
	if err != nil {
		panic("BUG: schema without start timestamps: " + err.Error())
	}
	v, _ := startSchemas.LoadOrStore(key, ws)
	return v.(*acta.Schema)
}

// startSchemas maps a schema (by schemaKey) to its twin with (or without)
// the start-timestamp column. The store writes and reads few distinct
// schemas (the kinds' and the value types'), so it stays small.
var startSchemas sync.Map

// schemaKey identifies a schema by content: files opened by readers each
// carry their own copy.
func schemaKey(s *acta.Schema) string {
	return fmt.Sprint(s.ID, s.Primary, s.Columns)
}

// splitStart takes the start-timestamp column out of a decoded block of
// schema s: the block and schema the kind decodes, and the column (nil
// when the file has none).
func splitStart(s *acta.Schema, b *acta.Batch) (*acta.Schema, *acta.Batch, *acta.FixedArray[int64], error) {
	i := s.Index(colStart)
	if i < 0 {
		return s, b, nil, nil
	}
	col, ok := b.Columns[i].(*acta.FixedArray[int64])
	if !ok {
		return s, b, nil, fmt.Errorf("%s column is %T", colStart, b.Columns[i])
	}
	base := schemaWithoutStart(s)
	cols := slices.Delete(slices.Clone(b.Columns), i, i+1)
	return base, &acta.Batch{Schema: base, Rows: b.Rows, Columns: cols}, col, nil
}

// decodeWithStarts decodes one block of a file of schema s with kind k,
// appending its samples in [mint, maxt] to dst and their start timestamps
// to sts (unsorted when the block is).
func decodeWithStarts[S any](k kind[S], dst []S, sts []StartTime, s *acta.Schema, b *acta.Batch, mint, maxt int64) ([]S, []StartTime, error) {
	base, kb, col, err := splitStart(s, b)
	if err != nil {
		return dst, sts, err
	}
	dst, err = k.decode(dst, base, kb, mint, maxt)
	if err != nil || col == nil {
		return dst, sts, err
	}
	ti := s.PrimaryIndex()
	if ti < 0 {
		return dst, sts, fmt.Errorf("file schema %d has no primary timestamp column", s.ID)
	}
	tcol, ok := b.Columns[ti].(*acta.FixedArray[int64])
	if !ok || len(tcol.Values) != len(col.Values) {
		return dst, sts, fmt.Errorf("%s column does not match the timestamps", colStart)
	}
	for i, t := range tcol.Values {
		if t >= mint && t <= maxt && col.Valid.Valid(i) {
			sts = append(sts, StartTime{T: t, ST: col.Values[i]})
		}
	}
	return dst, sts, nil
}

// withStarts appends the start-timestamp column to b, a block of the
// sorted samples ss, from sorted sts; force adds it even when no row has
// one (every block of a file shares its schema).
func withStarts[S any](k kind[S], b *acta.Batch, ss []S, sts []StartTime, force bool) *acta.Batch {
	mine := startsFor(k, sts, ss)
	if len(mine) == 0 && !force {
		return b
	}
	col := &acta.FixedArray[int64]{Values: make([]int64, len(ss)), Valid: acta.NewBitmap(len(ss))}
	j := 0
	for i, smp := range ss {
		for j < len(mine) && mine[j].T < k.ts(smp) {
			j++
		}
		if j < len(mine) && mine[j].T == k.ts(smp) {
			col.Values[i] = mine[j].ST
			col.Valid.Set(i, true)
		}
	}
	return &acta.Batch{Schema: schemaWithStart(b.Schema), Rows: b.Rows, Columns: append(slices.Clone(b.Columns), col)}
}

// sealedBatchesWithStarts is k.sealedBatches with the start-timestamp
// column on every block when sts holds one for some sample of ss.
func sealedBatchesWithStarts[S any](k kind[S], ss []S, sts []StartTime, rows int) ([]*acta.Batch, error) {
	batches, err := k.sealedBatches(ss, rows)
	if err != nil || len(startsFor(k, sts, ss)) == 0 {
		return batches, err
	}
	lo := 0
	for i, b := range batches {
		batches[i] = withStarts(k, b, ss[lo:lo+b.Rows], sts, true)
		lo += b.Rows
	}
	return batches, nil
}

// adaptWithStarts converts a flush's block (maybe with the start-timestamp
// column) to the schema fs of the file it is appended to:
// errNotRepresentable when the block holds start timestamps and the file
// has no column for them (the file is then rewritten with one, as for a
// value its type does not hold).
func adaptWithStarts[S any](k kind[S], b *acta.Batch, ss []S, fs *acta.Schema) (*acta.Batch, error) {
	has := b.Schema.Index(colStart) >= 0
	fileHas := fs.Index(colStart) >= 0
	if has && !fileHas {
		return nil, errNotRepresentable
	}
	_, kb, col, err := splitStart(b.Schema, b)
	if err != nil {
		return nil, err
	}
	out, err := k.adapt(kb, schemaWithoutStart(fs))
	if err != nil || !fileHas {
		return out, err
	}
	if col == nil {
		col = &acta.FixedArray[int64]{Values: make([]int64, b.Rows), Valid: acta.NewBitmap(b.Rows)}
	}
	return &acta.Batch{Schema: fs, Rows: out.Rows, Columns: append(slices.Clone(out.Columns), col)}, nil
}

// trackStarts is a track's start timestamps in memory: of its head and of
// the samples being flushed, each sorted by T. A track gets one only when a
// sample with a start timestamp arrives.
type trackStarts struct {
	head, flushing []StartTime
}

// startBytes is what one head entry costs (16 bytes in a slice that
// append grows by up to 2x), counted in the head's bytes.
const startBytes = 32

// addStarts adds sts (sorted) to the track's head list; entries whose T
// already has one keep it (the first stored wins). It returns the number
// of entries added.
func addStarts[S any](tr *track[S], sts []StartTime) int {
	if len(sts) == 0 {
		return 0
	}
	c := tr.coldState()
	if c.starts == nil {
		c.starts = &trackStarts{}
	}
	h := c.starts.head
	before := len(h)
	if len(h) == 0 || h[len(h)-1].T < sts[0].T {
		h = append(h, sts...)
	} else {
		h = sortStarts(append(h, sts...))
	}
	c.starts.head = h
	return len(h) - before
}

// startsOf is the track's start timestamps in memory (nil when none).
func (tr *track[S]) startsOf() *trackStarts {
	if tr.cold == nil {
		return nil
	}
	return tr.cold.starts
}

// headStarts is the track's head list (nil when none).
func (tr *track[S]) headStarts() []StartTime {
	if st := tr.startsOf(); st != nil {
		return st.head
	}
	return nil
}

// flushingStarts is the list of the samples being flushed.
func (tr *track[S]) flushingStarts() []StartTime {
	if st := tr.startsOf(); st != nil {
		return st.flushing
	}
	return nil
}

// pruneStarts drops head entries whose T is no longer a head sample (after
// a deletion or a replay dedupe) and returns how many it dropped.
func pruneStarts[S any](k kind[S], tr *track[S]) int {
	st := tr.startsOf()
	if st == nil || len(st.head) == 0 {
		return 0
	}
	before := len(st.head)
	st.head = slices.Clone(startsFor(k, st.head, tr.head.all(k, nil)))
	if len(st.head) == 0 {
		st.head = nil
	}
	return before - len(st.head)
}

// starts adds replayed start timestamps to the head of their series' track:
// those of samples the head holds (a sample replay dropped takes its start
// timestamp with it).
func (rp *replayer) starts(seg int32, ref uint64, k kindID, sts []StartTime) error {
	ms, err := rp.series(ref, seg, func() string { return "start timestamps" })
	if ms == nil || err != nil {
		return err
	}
	sorted := sortStarts(slices.Clone(sts))
	var n int
	switch k {
	case kindFloat:
		n = addStarts(&ms.floats, startsFor(floats, sorted, ms.floats.head.all(floats, nil)))
	case kindHistogram:
		if tr := histograms.track(ms, false); tr != nil {
			n = addStarts(tr, startsFor(histograms, sorted, tr.head.all(histograms, nil)))
		}
	}
	rp.s.hd.added(0, int64(n)*startBytes)
	return nil
}

// walStarts is ref's start timestamps of kind k that the WAL holds in
// [mint, maxt], in segment order (unsorted).
func walStarts[S any](r *ReadOnly, k kind[S], ref uint64, mint, maxt int64) []StartTime {
	var out []StartTime
	for _, seg := range r.segs {
		if w := r.walData[seg][ref]; w != nil {
			for _, st := range w.starts[k.id()] {
				if st.T >= mint && st.T <= maxt {
					out = append(out, st)
				}
			}
		}
	}
	return out
}
