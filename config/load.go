package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Default returns the embedded default configuration.
func Default() *Config {
	var c Config
	if err := decodeStrict(DefaultYAML, &c); err != nil {
		panic("BUG: embedded default.yaml is invalid: " + err.Error())
	}
	return &c
}

// Load reads and parses a config file; see Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: cannot read %s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes data over the defaults (keys it omits keep their default)
// and validates the result. Removed keys (removedKeys), unknown keys,
// values of the wrong type and invalid values are errors naming the key,
// e.g.
// "config: storage.block_rows: must be at least 1, got 0".
func Parse(data []byte) (*Config, error) {
	if err := checkRemoved(data); err != nil {
		return nil, err
	}
	c := Default()
	if err := decodeStrict(data, c); err != nil {
		return nil, nameKeys(data, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func decodeStrict(data []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	if errors.Is(err, io.EOF) { // empty file: all defaults
		return nil
	}
	if err != nil {
		return err
	}
	// A second document would be silently ignored; refuse it instead.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("config: more than one YAML document")
	}
	return nil
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// nameKeys rewrites yaml.v3's "line N: ..." errors, which name a Go type
// rather than the key, into "config: <dotted key>: <reason> (line N)".
func nameKeys(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("config: invalid YAML: %w", err)
	}
	keys := keyLines(data)
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := lineRE.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		reason := m[2]
		if i := strings.Index(reason, " not found in type "); i >= 0 {
			reason = "unknown key"
		}
		key := keys[line]
		if key == "" {
			key = "(top level)"
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s (line %d)", key, reason, line))
	}
	return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
}

// keyLines maps each line holding a mapping key or its scalar value to the
// key's dotted path ("remote_write.max_body_bytes").
func keyLines(data []byte) map[int]string {
	var doc yaml.Node
	out := map[int]string{}
	if yaml.Unmarshal(data, &doc) != nil {
		return out
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				out[k.Line] = p
				if v.Kind == yaml.ScalarNode {
					out[v.Line] = p
				}
				walk(v, p)
			}
		}
	}
	walk(&doc, "")
	return out
}
