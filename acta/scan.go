package acta

import (
	"fmt"
	"io"
	"sort"
)

// PrimaryRange is a half-open range [Start, End) over the primary column, in
// its raw storage unit (timestamp64) or in days (date32). No unit
// conversion happens.
type PrimaryRange struct{ Start, End int64 }

// ScanOptions select what a Scan or Tail returns.
type ScanOptions struct {
	// Columns names the output columns in output order. nil means every
	// column in schema order; a non-nil empty slice means none (batches
	// then carry only row counts).
	Columns []string
	// Range, when set, keeps only rows whose primary value is in range.
	Range *PrimaryRange
}

// Scan iterates a snapshot's blocks in file order.
type Scan struct {
	r       *Reader
	out     []int // schema indexes of the output columns
	decode  []int // schema indexes to decode: out, plus the primary if filtering needs it
	schema  *Schema
	rng     *PrimaryRange
	pdec    int // index of the primary column in decode, -1 without a range
	next    int // next block index
	end     int // block index to stop at; -1 follows the reader (Tail)
	met     ScanMetrics
	scanned int64 // cumulative decoded bytes charged
}

// Scan returns a file-order scan of the blocks in the snapshot now. It
// checks the projection names and the range before reading anything.
func (r *Reader) Scan(o ScanOptions) (*Scan, error) {
	s, err := r.newScan(o)
	if err != nil {
		return nil, err
	}
	s.end = len(r.blocks)
	return s, nil
}

func (r *Reader) newScan(o ScanOptions) (*Scan, error) {
	fs := r.fh.schema
	s := &Scan{r: r, rng: o.Range, pdec: -1}
	if o.Columns == nil {
		s.out = make([]int, len(fs.Columns))
		for i := range s.out {
			s.out[i] = i
		}
	} else {
		s.out = make([]int, 0, len(o.Columns))
		seen := map[int]bool{}
		for _, n := range o.Columns {
			i := fs.Index(n)
			if i < 0 {
				return nil, fmt.Errorf("acta: projection: no column %q in schema", n)
			}
			if seen[i] {
				return nil, fmt.Errorf("acta: projection: column %q named twice", n)
			}
			seen[i] = true
			s.out = append(s.out, i)
		}
	}
	s.schema = &Schema{ID: fs.ID, Columns: make([]Column, len(s.out))}
	for k, i := range s.out {
		s.schema.Columns[k] = fs.Columns[i]
		if fs.Columns[i].ID == fs.Primary {
			s.schema.Primary = fs.Primary
		}
	}
	s.decode = s.out
	if o.Range != nil {
		pi := fs.PrimaryIndex()
		if pi < 0 {
			return nil, fmt.Errorf("acta: primary range on a schema without a primary column")
		}
		if o.Range.Start > o.Range.End {
			return nil, fmt.Errorf("acta: primary range [%d, %d) has start after end", o.Range.Start, o.Range.End)
		}
		for k, i := range s.out {
			if i == pi {
				s.pdec = k
			}
		}
		if s.pdec < 0 {
			s.decode = append(append([]int(nil), s.out...), pi)
			s.pdec = len(s.out)
		}
	}
	return s, nil
}

// Schema is the projected schema of the batches.
func (s *Scan) Schema() *Schema { return s.schema }

// Metrics reports what the scan has done so far.
func (s *Scan) Metrics() ScanMetrics { return s.met }

// Next returns the next batch with at least one row. It returns io.EOF at
// the end. Any other error belongs to one block: the scan has moved past it,
// and the next call continues with the following block.
func (s *Scan) Next() (*Batch, error) {
	for {
		end := s.end
		if end < 0 {
			end = len(s.r.blocks)
		}
		if s.next >= end {
			return nil, io.EOF
		}
		m := &s.r.blocks[s.next]
		s.next++
		b, err := s.block(m)
		if err != nil || b != nil {
			return b, err
		}
	}
}

// block decodes one block for the scan: nil, nil when it holds no matching
// row.
func (s *Scan) block(m *blockMeta) (*Batch, error) {
	s.met.BlocksConsidered++
	if s.rng != nil && (m.Max < s.rng.Start || m.Min >= s.rng.End) {
		s.met.BlocksPruned++
		return nil, nil
	}
	lim := &s.r.lim
	if lim.MaxRowsPerScan > 0 && s.met.RowsReturned >= lim.MaxRowsPerScan {
		return nil, limitf(m.Offset, "scan returned %d rows, limit %d", s.met.RowsReturned, lim.MaxRowsPerScan)
	}
	budget := lim.MaxDecodedBlockBytes
	if lim.MaxDecodedScanBytes > 0 {
		budget = min(budget, lim.MaxDecodedScanBytes-s.scanned)
	}
	if len(s.decode) == 0 {
		// Zero-column batch: the row count is in the header, already checked.
		// The body CRC is still verified so a scan never vouches for bytes
		// it did not check.
		if _, _, err := s.r.decodeBlock(m, nil, budget, &s.met); err != nil {
			return nil, err
		}
		return s.emit(&Batch{Schema: s.schema, Rows: m.Rows}, m)
	}
	cols, rows, err := s.r.decodeBlock(m, s.decode, budget, &s.met)
	if err != nil {
		return nil, err
	}
	s.scanned += decodedSize(cols)
	if s.rng != nil {
		lo, hi, idx := filterPrimary(cols[s.pdec], rows, *s.rng, m.Sorted)
		switch {
		case idx != nil:
			for k := range cols {
				cols[k] = gatherArray(cols[k], idx)
			}
			rows = len(idx)
		case lo != 0 || hi != rows:
			for k := range cols {
				cols[k] = sliceArray(cols[k], lo, hi)
			}
			rows = hi - lo
		}
		cols = cols[:len(s.out)]
		if rows == 0 {
			return nil, nil
		}
	}
	return s.emit(&Batch{Schema: s.schema, Columns: cols, Rows: rows}, m)
}

func (s *Scan) emit(b *Batch, m *blockMeta) (*Batch, error) {
	lim := &s.r.lim
	if lim.MaxRowsPerScan > 0 && s.met.RowsReturned+int64(b.Rows) > lim.MaxRowsPerScan {
		return nil, limitf(m.Offset, "scan would return %d rows, limit %d", s.met.RowsReturned+int64(b.Rows), lim.MaxRowsPerScan)
	}
	s.met.RowsReturned += int64(b.Rows)
	return b, nil
}

// decodedSize estimates the bytes held by decoded arrays.
func decodedSize(cols []Array) int64 {
	var n int64
	for _, a := range cols {
		switch x := a.(type) {
		case *BytesArray:
			n += int64(len(x.Data)) + 8*int64(len(x.Offsets))
		default:
			n += int64(a.Len()) * 8
		}
	}
	return n
}

// primaryValue returns row i's primary value widened to int64.
func primaryValues(a Array) func(i int) int64 {
	switch x := a.(type) {
	case *FixedArray[int64]:
		return func(i int) int64 { return x.Values[i] }
	case *FixedArray[int32]:
		return func(i int) int64 { return int64(x.Values[i]) }
	}
	return func(int) int64 { return 0 }
}

// filterPrimary finds the rows of a block inside r: a contiguous [lo, hi)
// found by binary search when the block is TS_SORTED, otherwise the
// matching row indexes in their original order (idx nil when all match).
func filterPrimary(a Array, rows int, r PrimaryRange, sorted bool) (lo, hi int, idx []int) {
	v := primaryValues(a)
	if sorted {
		lo = sort.Search(rows, func(i int) bool { return v(i) >= r.Start })
		hi = sort.Search(rows, func(i int) bool { return v(i) >= r.End })
		return lo, max(lo, hi), nil
	}
	all := true
	for i := 0; i < rows; i++ {
		x := v(i)
		if x >= r.Start && x < r.End {
			idx = append(idx, i)
		} else {
			all = false
		}
	}
	if all {
		return 0, rows, nil
	}
	if idx == nil {
		return 0, 0, nil
	}
	return 0, 0, idx
}

// RemainingCandidateBlocks is how many of the scan's remaining blocks
// pruning has not excluded: an upper bound on the batches still to come (a
// block that overlaps the range may still hold no matching row).
func (s *Scan) RemainingCandidateBlocks() int {
	end := s.end
	if end < 0 {
		end = len(s.r.blocks)
	}
	n := 0
	for i := s.next; i < end; i++ {
		m := &s.r.blocks[i]
		if s.rng == nil || !(m.Max < s.rng.Start || m.Min >= s.rng.End) {
			n++
		}
	}
	return n
}
