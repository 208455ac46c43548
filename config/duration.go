package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Period is a duration that also accepts days and weeks ("1d", "7d",
// "2w"), as retention and rotation periods are usually written; Go
// durations ("2h", "90m") work too.
type Period time.Duration

// ParsePeriod parses "1d", "2w", "36h", "0s".
func ParsePeriod(s string) (Period, error) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v < 0 || v > int64(1<<62)/int64(u.d) {
				return 0, fmt.Errorf("want a non-negative whole number of %s", u.suffix)
			}
			return Period(time.Duration(v) * u.d), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a non-negative duration such as 2h, 1d or 2w")
	}
	return Period(d), nil
}

// UnmarshalYAML reports errors as a yaml.TypeError carrying the line, which
// Parse turns into the key's name.
func (p *Period) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParsePeriod(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		if err == nil {
			err = fmt.Errorf("want a scalar")
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid duration %q: %v", n.Line, n.Value, err)}}
	}
	*p = v
	return nil
}

// MarshalYAML writes whole days as "Nd".
func (p Period) MarshalYAML() (any, error) { return p.String(), nil }

func (p Period) String() string {
	d := time.Duration(p)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}
