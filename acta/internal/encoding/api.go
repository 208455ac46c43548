package encoding

// Policy selects how Encode chooses encodings (mirrors the Acta README's
// WriterEncoding).
type Policy uint8

const (
	// PolicyRaw writes plain layout and raw transform for every stream:
	// byte-for-byte stable output.
	PolicyRaw Policy = iota
	// PolicyAdaptive profiles the column and keeps the smallest of raw and
	// at most two specialized candidates (spec §12).
	PolicyAdaptive
	// PolicyFixed applies Options.Transform (or layout) to every value stream.
	PolicyFixed
)

// StatsPolicy selects min/max statistics (mirrors WriterStatistics).
type StatsPolicy uint8

const (
	StatsNone StatsPolicy = iota
	StatsMinMax
	StatsAutomatic
)

// Options configure Encode. The zero value is raw, uncompressed, no
// statistics.
type Options struct {
	Policy    Policy
	Transform uint16 // with PolicyFixed
	// FixedLayout, with PolicyFixed, forces a layout (LayoutConstant,
	// LayoutDictionary, LayoutRunLength) instead of a transform; 0 means use
	// Transform under plain layout.
	FixedLayout uint16
	Codec       uint16 // CodecNone or CodecZstd
	ZstdLevel   int    // 0 means the default (3)
	Stats       StatsPolicy
	// Primary is true for the file's primary column; StatsAutomatic then
	// writes no statistic (the block header carries its bounds).
	Primary bool
}

// Encoder encodes columns. It keeps scratch buffers and compressors across
// calls; it is not safe for concurrent use.
type Encoder struct {
	opts Options
	zstd *zstdEncoder // shared per level; nil without CodecZstd

	// Scratch reused across calls, so a warm Encoder allocates nothing: one
	// arena per materialized candidate (each holding its compressed copy
	// and stream slice), the profile and its dictionary table, the
	// statistics.
	cand        [4]candidate // raw, two shortlisted, one byte-aligned variant
	aligned     bool         // materialize packed widths rounded up to bytes
	noDictBound bool         // tests: profile the full dictionary
	stats       []byte
	prof        profile
	nums        []uint64 // dense values as uint64 keys
	ktab        keyTable
	smap        map[string]uint16
	dictFirst   []int32  // first position of each dictionary entry
	idx         []uint16 // dictionary entry of each value
}

// NewEncoder returns an Encoder for opts, or an error naming the option that
// is not valid. A fixed transform the column's class does not offer (for
// example delta on float64) is refused by the first Encode, which is the
// first call that knows the class.
func NewEncoder(opts Options) (*Encoder, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	e := &Encoder{opts: opts}
	if opts.Codec == CodecZstd {
		e.zstd = sharedZstdEncoder(opts.ZstdLevel)
	}
	return e, nil
}

// Encode encodes one column of one block: rows rows, validity (nil when every
// row is present; LSB-first bitmap otherwise) and the dense values of the
// present rows. The returned Column's stream Data may alias the Encoder's
// scratch and is valid until the next call.
func (e *Encoder) Encode(class Class, width int, nullable bool, rows int, validity []byte, vals Values) (Column, error) {
	return e.encode(class, width, nullable, rows, validity, vals)
}
