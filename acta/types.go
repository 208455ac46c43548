package acta

import (
	"fmt"
	"unicode/utf8"
)

// LogicalType is an Acta v0.2 logical type ID (spec §3). The values are
// frozen: they are written into every schema frame.
type LogicalType uint16

// Logical type IDs, Acta v0.2 §3. Frozen.
const (
	TypeBool        LogicalType = 1
	TypeInt8        LogicalType = 2
	TypeInt16       LogicalType = 3
	TypeInt32       LogicalType = 4
	TypeInt64       LogicalType = 5
	TypeUint8       LogicalType = 6
	TypeUint16      LogicalType = 7
	TypeUint32      LogicalType = 8
	TypeUint64      LogicalType = 9
	TypeFloat32     LogicalType = 10
	TypeFloat64     LogicalType = 11
	TypeDecimal64   LogicalType = 12
	TypeTimestamp64 LogicalType = 13
	TypeUTF8        LogicalType = 14
	TypeCategorical LogicalType = 15
	TypeBinary      LogicalType = 16
	TypeFixedBinary LogicalType = 17
	TypeDate32      LogicalType = 18
)

var typeNames = map[LogicalType]string{
	TypeBool: "bool", TypeInt8: "int8", TypeInt16: "int16", TypeInt32: "int32", TypeInt64: "int64",
	TypeUint8: "uint8", TypeUint16: "uint16", TypeUint32: "uint32", TypeUint64: "uint64",
	TypeFloat32: "float32", TypeFloat64: "float64", TypeDecimal64: "decimal64",
	TypeTimestamp64: "timestamp64", TypeUTF8: "utf8", TypeCategorical: "categorical",
	TypeBinary: "binary", TypeFixedBinary: "fixed_binary", TypeDate32: "date32",
}

func (t LogicalType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint16(t))
}

// Valid reports whether t is one of the 18 v0.2 logical types.
func (t LogicalType) Valid() bool { return t >= TypeBool && t <= TypeDate32 }

// FixedWidth is the canonical byte width of one value of t (spec §9.1), or 0
// for bool (bit packed) and the variable-width types. fixed_binary's width is
// a type parameter, see Type.ValueWidth.
func (t LogicalType) FixedWidth() int {
	switch t {
	case TypeInt8, TypeUint8:
		return 1
	case TypeInt16, TypeUint16:
		return 2
	case TypeInt32, TypeUint32, TypeFloat32, TypeDate32:
		return 4
	case TypeInt64, TypeUint64, TypeFloat64, TypeDecimal64, TypeTimestamp64:
		return 8
	}
	return 0
}

// Variable reports whether values of t are variable-width byte sequences
// carried with a lengths stream (utf8, categorical, binary).
func (t LogicalType) Variable() bool {
	return t == TypeUTF8 || t == TypeCategorical || t == TypeBinary
}

// TimeUnit is the storage unit of a timestamp64 column (spec §3.1).
type TimeUnit uint8

// Time units, Acta v0.2 §3.1. Frozen.
const (
	Second      TimeUnit = 0
	Millisecond TimeUnit = 1
	Microsecond TimeUnit = 2
	Nanosecond  TimeUnit = 3
)

func (u TimeUnit) String() string {
	switch u {
	case Second:
		return "s"
	case Millisecond:
		return "ms"
	case Microsecond:
		return "us"
	case Nanosecond:
		return "ns"
	}
	return fmt.Sprintf("unit(%d)", uint8(u))
}

// TimezoneMode says how a timestamp64 column's instants are zoned (spec §3.1).
type TimezoneMode uint8

// Timezone modes, Acta v0.2 §3.1. Frozen.
const (
	TZNaive TimezoneMode = 0
	TZUTC   TimezoneMode = 1
	TZIANA  TimezoneMode = 2
)

// Type is a logical type with its parameters (spec §3.1). Parameters that do
// not belong to ID are zero.
type Type struct {
	ID LogicalType

	Precision uint16 // decimal64: 1..18
	Scale     int16  // decimal64: value = unscaled × 10^(-Scale)

	Unit   TimeUnit     // timestamp64
	TZMode TimezoneMode // timestamp64
	TZName string       // timestamp64 with TZIANA: descriptive IANA name

	Ordered bool // categorical

	Width uint32 // fixed_binary: bytes per value, > 0
}

// Timestamp returns a timestamp64 type in unit u, zoned UTC.
func Timestamp(u TimeUnit) Type { return Type{ID: TypeTimestamp64, Unit: u, TZMode: TZUTC} }

// Of returns a parameterless type.
func Of(id LogicalType) Type { return Type{ID: id} }

// ValueWidth is the stored width in bytes of one dense value, or 0 for bool
// and variable-width types.
func (t Type) ValueWidth() int {
	if t.ID == TypeFixedBinary {
		return int(t.Width)
	}
	return t.ID.FixedWidth()
}

func (t Type) String() string {
	switch t.ID {
	case TypeDecimal64:
		return fmt.Sprintf("decimal64(%d,%d)", t.Precision, t.Scale)
	case TypeTimestamp64:
		switch t.TZMode {
		case TZNaive:
			return fmt.Sprintf("timestamp64[%s,naive]", t.Unit)
		case TZUTC:
			return fmt.Sprintf("timestamp64[%s,UTC]", t.Unit)
		default:
			return fmt.Sprintf("timestamp64[%s,%s]", t.Unit, t.TZName)
		}
	case TypeCategorical:
		if t.Ordered {
			return "categorical(ordered)"
		}
		return "categorical"
	case TypeFixedBinary:
		return fmt.Sprintf("fixed_binary(%d)", t.Width)
	}
	return t.ID.String()
}

// validate checks the type's parameters against spec §3.1.
func (t Type) validate() error {
	if !t.ID.Valid() {
		return fmt.Errorf("unknown logical type %d", uint16(t.ID))
	}
	switch t.ID {
	case TypeDecimal64:
		if t.Precision < 1 || t.Precision > 18 {
			return fmt.Errorf("decimal64 precision %d outside 1..18", t.Precision)
		}
	case TypeTimestamp64:
		if t.Unit > Nanosecond {
			return fmt.Errorf("timestamp64 unit %d unknown", t.Unit)
		}
		if t.TZMode > TZIANA {
			return fmt.Errorf("timestamp64 timezone mode %d unknown", t.TZMode)
		}
		if t.TZMode == TZIANA && t.TZName == "" {
			return fmt.Errorf("timestamp64 IANA timezone mode needs a name")
		}
		if t.TZMode != TZIANA && t.TZName != "" {
			return fmt.Errorf("timestamp64 timezone name %q without IANA mode", t.TZName)
		}
		if !utf8.ValidString(t.TZName) {
			return fmt.Errorf("timestamp64 timezone name is not UTF-8")
		}
	case TypeFixedBinary:
		if t.Width == 0 {
			return fmt.Errorf("fixed_binary width must be > 0")
		}
	}
	return nil
}

// Column is one schema column (spec §7). IDs are nonzero and unique; names
// are unique UTF-8.
type Column struct {
	ID       uint32
	Name     string
	Type     Type
	Nullable bool
}

// Schema is the fixed schema of one Acta file (spec §7). Columns are in
// schema order. Primary is the primary timestamp column's ID, or 0 when the
// file has no time index.
type Schema struct {
	ID      uint64
	Columns []Column
	Primary uint32
}

// PrimaryAuto selects the first timestamp64 or date32 column (spec §7.1).
const PrimaryAuto = "auto"

// NewSchema builds and validates a schema. primary is "" for no primary
// column, PrimaryAuto, or a column name (spec §7.1). It returns an error
// naming the first rule broken.
func NewSchema(id uint64, cols []Column, primary string) (*Schema, error) {
	s := &Schema{ID: id, Columns: cols}
	switch primary {
	case "":
	case PrimaryAuto:
		for _, c := range cols {
			if c.Type.ID == TypeTimestamp64 || c.Type.ID == TypeDate32 {
				if c.Nullable {
					return nil, fmt.Errorf("acta: auto primary: first time column %q is nullable", c.Name)
				}
				s.Primary = c.ID
				break
			}
		}
		if s.Primary == 0 {
			return nil, fmt.Errorf("acta: auto primary: no timestamp64 or date32 column")
		}
	default:
		for _, c := range cols {
			if c.Name == primary {
				s.Primary = c.ID
			}
		}
		if s.Primary == 0 {
			return nil, fmt.Errorf("acta: primary column %q not in schema", primary)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks the schema rules of spec §7: nonzero schema ID, at least one
// column, unique nonzero IDs, unique UTF-8 names, valid type parameters, and a
// primary column that is a non-nullable timestamp64 or date32.
func (s *Schema) Validate() error {
	if s.ID == 0 {
		return fmt.Errorf("acta: schema ID must be nonzero")
	}
	if len(s.Columns) == 0 {
		return fmt.Errorf("acta: schema has no columns")
	}
	ids := make(map[uint32]bool, len(s.Columns))
	names := make(map[string]bool, len(s.Columns))
	primaryFound := s.Primary == 0
	for _, c := range s.Columns {
		if c.ID == 0 {
			return fmt.Errorf("acta: column %q has ID 0", c.Name)
		}
		if ids[c.ID] {
			return fmt.Errorf("acta: duplicate column ID %d", c.ID)
		}
		ids[c.ID] = true
		if !utf8.ValidString(c.Name) {
			return fmt.Errorf("acta: column %d name is not UTF-8", c.ID)
		}
		if names[c.Name] {
			return fmt.Errorf("acta: duplicate column name %q", c.Name)
		}
		names[c.Name] = true
		if err := c.Type.validate(); err != nil {
			return fmt.Errorf("acta: column %q: %w", c.Name, err)
		}
		if c.ID == s.Primary {
			primaryFound = true
			if c.Type.ID != TypeTimestamp64 && c.Type.ID != TypeDate32 {
				return fmt.Errorf("acta: primary column %q is %s, not timestamp64 or date32", c.Name, c.Type)
			}
			if c.Nullable {
				return fmt.Errorf("acta: primary column %q is nullable", c.Name)
			}
		}
	}
	if !primaryFound {
		return fmt.Errorf("acta: primary column ID %d not in schema", s.Primary)
	}
	return nil
}

// Index returns the schema-order index of the column named name, or -1.
func (s *Schema) Index(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// PrimaryIndex returns the schema-order index of the primary column, or -1.
func (s *Schema) PrimaryIndex() int {
	if s.Primary == 0 {
		return -1
	}
	for i, c := range s.Columns {
		if c.ID == s.Primary {
			return i
		}
	}
	return -1
}
