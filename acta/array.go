package acta

// Decoded data is columnar: one typed slice per column plus an optional
// validity bitmap, never one interface value per cell. Arrays are
// slot-per-row: Len() equals the batch's row count, and a null row holds the
// zero value in its slot. (On disk values are dense, spec §3; the reader
// expands them and the writer compacts them.)

// Bitmap is an LSB-first validity bitmap: bit i of byte i/8 is 1 when row i
// is present. A nil Bitmap means every row is present.
type Bitmap []byte

// Valid reports whether row i is present.
func (b Bitmap) Valid(i int) bool { return b == nil || b[i>>3]&(1<<(uint(i)&7)) != 0 }

// Set marks row i present (v) or null (!v). b must be long enough.
func (b Bitmap) Set(i int, v bool) {
	if v {
		b[i>>3] |= 1 << (uint(i) & 7)
	} else {
		b[i>>3] &^= 1 << (uint(i) & 7)
	}
}

// NewBitmap returns a bitmap of n rows, all null.
func NewBitmap(n int) Bitmap { return make(Bitmap, (n+7)/8) }

// nullCount counts the null rows among the first n.
func (b Bitmap) nullCount(n int) int {
	if b == nil {
		return 0
	}
	c := 0
	for i := 0; i < n; i++ {
		if !b.Valid(i) {
			c++
		}
	}
	return c
}

// Array is one decoded column of a batch.
type Array interface {
	// Len is the number of rows.
	Len() int
	// Validity is the row validity bitmap, nil when every row is present.
	Validity() Bitmap
}

// Fixed lists the Go element types of fixed-width arrays.
type Fixed interface {
	bool | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// FixedArray holds a fixed-width column. Go element type by logical type:
// bool→bool; intN/uintN→intN/uintN; float32/float64→float32/float64;
// decimal64→int64 (unscaled); timestamp64→int64 (raw count in the column's
// unit); date32→int32 (days since 1970-01-01).
type FixedArray[T Fixed] struct {
	Values []T
	Valid  Bitmap
}

func (a *FixedArray[T]) Len() int         { return len(a.Values) }
func (a *FixedArray[T]) Validity() Bitmap { return a.Valid }

// BytesArray holds a utf8, categorical, binary or fixed_binary column. Row
// i's bytes are Data[Offsets[i]:Offsets[i+1]]; len(Offsets) is Len()+1. A
// null row has an empty range.
type BytesArray struct {
	Offsets []int
	Data    []byte
	Valid   Bitmap
}

func (a *BytesArray) Len() int {
	if len(a.Offsets) == 0 {
		return 0
	}
	return len(a.Offsets) - 1
}
func (a *BytesArray) Validity() Bitmap { return a.Valid }

// Value returns row i's bytes (aliasing Data).
func (a *BytesArray) Value(i int) []byte { return a.Data[a.Offsets[i]:a.Offsets[i+1]] }

// Batch is a group of rows: one Array per column of Schema, in that order.
// Schema is the scan's projected schema (a subset of the file's columns, in
// the requested order); an empty projection gives zero columns and Rows > 0.
type Batch struct {
	Schema  *Schema
	Columns []Array
	Rows    int
}
