package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/acta-remote/acta-remote/acta"
)

// Series files are Acta v0.2 files: column 1 "timestamp" =
// timestamp64(ms, UTC), the primary column; column 2 "value", float64 when
// written by the store. Each block is appended sorted, so the writer marks it
// TS_SORTED; every block's primary bounds let readers skip it undecoded.
const (
	seriesSchemaID  = 1
	colTimestamp    = "timestamp"
	colValue        = "value"
	colTimestampID  = 1
	colValueID      = 2
	defaultValueTyp = acta.TypeFloat64
)

// seriesSchema is the schema new series files get. The value column's type
// is a parameter so a later rewrite (DESIGN.md: int64 or decimal64 for
// sealed files) only changes this call and valuesAsFloat64.
func seriesSchema(valueType acta.Type) (*acta.Schema, error) {
	return acta.NewSchema(seriesSchemaID, []acta.Column{
		{ID: colTimestampID, Name: colTimestamp, Type: acta.Timestamp(acta.Millisecond)},
		{ID: colValueID, Name: colValue, Type: valueType},
	}, colTimestamp)
}

var defaultSchema = func() *acta.Schema {
	s, err := seriesSchema(acta.Of(defaultValueTyp))
	if err != nil {
		panic("BUG: series schema: " + err.Error())
	}
	return s
}()

func writerOptions(fo fileOptions) acta.WriterOptions {
	codec := acta.CodecNone
	if fo.zstd {
		codec = acta.CodecZstd
	}
	return acta.WriterOptions{
		Codec:        codec,
		CodecMinRows: fo.zstdMinRows,
		ZstdLevel:    fo.zstdLevel,
		Encoding:     acta.EncodingAdaptive,
		// appendBlock flushes after each call, so the target only splits a
		// call larger than BlockRows.
		RowBlockTarget: fo.blockRows,
	}
}

type actaWriter struct {
	w      *acta.Writer
	schema *acta.Schema
}

// createSeriesFile creates a new series file (refusing an existing path).
func createSeriesFile(path string, fo fileOptions) (fileWriter, error) {
	w, err := acta.Create(path, defaultSchema, writerOptions(fo))
	if err != nil {
		return nil, err
	}
	return &actaWriter{w: w, schema: w.Schema()}, nil
}

// openSeriesFileWriter continues an existing series file. An incomplete
// final frame (a crash, or a failed append in this process) is cut first:
// the store is the file's only writer and that frame was never counted as
// flushed.
func openSeriesFileWriter(path string, fo fileOptions) (fileWriter, error) {
	w, err := acta.OpenWriter(path, writerOptions(fo))
	if errors.Is(err, acta.ErrIncompleteTail) {
		if _, rerr := acta.RepairIncompleteTail(path); rerr != nil {
			return nil, fmt.Errorf("repair before append: %w", rerr)
		}
		w, err = acta.OpenWriter(path, writerOptions(fo))
	}
	if err != nil {
		return nil, err
	}
	return &actaWriter{w: w, schema: w.Schema()}, nil
}

func (a *actaWriter) appendBlock(ts []int64, vs []float64) error {
	vcol, err := valuesArray(a.schema, vs)
	if err != nil {
		return err
	}
	b := &acta.Batch{Schema: a.schema, Rows: len(ts), Columns: []acta.Array{
		&acta.FixedArray[int64]{Values: ts}, vcol,
	}}
	if err := a.w.Append(b); err != nil {
		return err
	}
	return a.w.Flush()
}

// close releases the file without fsync: appendBlock already handed every
// block to the OS, and the writer cache syncs dirty files before the WAL
// lets go of their samples.
func (a *actaWriter) close() error { return a.w.Close() }

// valuesArray builds the value column for the file's value type. Only
// float64 files are written today.
func valuesArray(s *acta.Schema, vs []float64) (acta.Array, error) {
	t := s.Columns[s.Index(colValue)].Type
	if t.ID != acta.TypeFloat64 {
		return nil, fmt.Errorf("series file value column is %s; the store appends only float64", t)
	}
	return &acta.FixedArray[float64]{Values: vs}, nil
}

// valuesAsFloat64 converts a decoded value column to float64, bit-exactly
// for float64 and for integers within ±2^53.
func valuesAsFloat64(t acta.Type, arr acta.Array) ([]float64, error) {
	switch a := arr.(type) {
	case *acta.FixedArray[float64]:
		return a.Values, nil
	case *acta.FixedArray[int64]:
		out := make([]float64, len(a.Values))
		switch t.ID {
		case acta.TypeInt64:
			for i, v := range a.Values {
				out[i] = float64(v)
			}
		case acta.TypeDecimal64:
			scale := math.Pow10(int(t.Scale))
			for i, v := range a.Values {
				out[i] = float64(v) / scale
			}
		default:
			return nil, fmt.Errorf("value column type %s not readable as float64", t)
		}
		return out, nil
	}
	return nil, fmt.Errorf("value column type %s (%T) not readable as float64", t, arr)
}

// readSeriesFile calls fn with each committed block of the file whose
// bounds overlap [mint, maxt]; other blocks are skipped without decoding.
// An incomplete final frame is ignored (it is not committed).
func readSeriesFile(path string, mint, maxt int64, fn func(block) error) error {
	_, _, err := readSeriesFileMin(path, mint, maxt, fn)
	return err
}

// readSeriesFileMin is readSeriesFile that also returns the smallest
// timestamp in the file (from the block bounds; ok false without rows).
func readSeriesFileMin(path string, mint, maxt int64, fn func(block) error) (fileMin int64, ok bool, err error) {
	r, err := acta.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer r.Close()
	for _, bi := range r.Blocks() {
		if bi.Rows > 0 && (!ok || bi.Min < fileMin) {
			fileMin, ok = bi.Min, true
		}
	}
	return fileMin, ok, readBlocks(r, path, mint, maxt, fn)
}

func readBlocks(r *acta.Reader, path string, mint, maxt int64, fn func(block) error) error {
	s := r.Schema()
	ti, vi := s.Index(colTimestamp), s.Index(colValue)
	if ti < 0 || vi < 0 {
		return fmt.Errorf("%s is not a series file (columns %q and %q needed)", path, colTimestamp, colValue)
	}
	vt := s.Columns[vi].Type
	for i, bi := range r.Blocks() {
		if bi.Rows == 0 || bi.Max < mint || bi.Min > maxt {
			continue
		}
		b, err := r.ReadBlock(i)
		if err != nil {
			return fmt.Errorf("read block %d (offset %d): %w", i, bi.Offset, err)
		}
		tcol, ok := b.Columns[ti].(*acta.FixedArray[int64])
		if !ok {
			return fmt.Errorf("block %d: timestamp column is %T", i, b.Columns[ti])
		}
		vs, err := valuesAsFloat64(vt, b.Columns[vi])
		if err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
		if len(vs) != len(tcol.Values) {
			return fmt.Errorf("block %d: %d timestamps, %d values", i, len(tcol.Values), len(vs))
		}
		if err := fn(block{ts: tcol.Values, vs: vs, sorted: bi.Sorted}); err != nil {
			return err
		}
	}
	return nil
}

// repairResult says what repairSeriesFile did.
type repairResult uint8

const (
	repairNone    repairResult = iota
	repairCut                  // an incomplete final frame was cut
	repairRemoved              // the file ended inside its prologue or schema: it held no block and was removed
)

// repairSeriesFile cuts an incomplete final frame left by a crash. A file
// that ends before its schema is complete holds no block (it was being
// created); it is removed, and its samples are still in the WAL because the
// WAL is only truncated after the series files are synced.
func repairSeriesFile(path string) (repairResult, error) {
	plan, err := acta.InspectRecovery(path)
	if err != nil {
		return repairNone, err
	}
	if plan.SchemaIncomplete {
		if err := os.Remove(path); err != nil {
			return repairNone, err
		}
		return repairRemoved, nil
	}
	if !plan.RequiresRepair() {
		return repairNone, nil
	}
	if _, err := acta.RepairIncompleteTail(path); err != nil {
		return repairNone, err
	}
	return repairCut, nil
}

// validateSeriesFile runs Acta's full validation (every stream decoded).
func validateSeriesFile(path string) error {
	return acta.Validate(path, acta.ValidateFull)
}

// seriesFileNewest returns the sample with the greatest timestamp in the
// file (the later one if a timestamp repeats), reading only the block whose
// bounds hold it. ok is false for a file without rows.
func seriesFileNewest(path string) (newest Sample, ok bool, err error) {
	r, err := acta.Open(path)
	if err != nil {
		return Sample{}, false, err
	}
	defer r.Close()
	best := -1
	for i, bi := range r.Blocks() {
		if bi.Rows > 0 && (best < 0 || bi.Max >= r.Blocks()[best].Max) {
			best = i
		}
	}
	if best < 0 {
		return Sample{}, false, nil
	}
	s := r.Schema()
	ti, vi := s.Index(colTimestamp), s.Index(colValue)
	b, err := r.ReadBlock(best)
	if err != nil {
		return Sample{}, false, fmt.Errorf("read block %d: %w", best, err)
	}
	tcol, okT := b.Columns[ti].(*acta.FixedArray[int64])
	if !okT {
		return Sample{}, false, fmt.Errorf("block %d: timestamp column is %T", best, b.Columns[ti])
	}
	vs, err := valuesAsFloat64(s.Columns[vi].Type, b.Columns[vi])
	if err != nil {
		return Sample{}, false, fmt.Errorf("block %d: %w", best, err)
	}
	for i, t := range tcol.Values {
		if !ok || t >= newest.T {
			newest, ok = Sample{T: t, V: vs[i]}, true
		}
	}
	return newest, ok, nil
}
