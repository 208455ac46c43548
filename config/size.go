package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a size in bytes. In YAML it is a plain integer or a number
// with a binary (KiB, MiB, GiB) or decimal (KB, MB, GB) unit: "32MiB".
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{ // longest suffixes first, so "MiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// ParseByteSize parses "4096", "64KiB", "1MB".
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative integer with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)")
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size overflows int64")
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML reports errors as a yaml.TypeError carrying the line, which
// Parse turns into the key's name.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		if err == nil {
			err = fmt.Errorf("want a scalar")
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid size %q: %v", n.Line, n.Value, err)}}
	}
	*b = v
	return nil
}

// MarshalYAML writes the size back in the most readable exact unit.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

func (b ByteSize) String() string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.m == 0 {
			return strconv.FormatInt(int64(b)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
