package actastore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/acta-remote/acta-remote/acta"
)

// Metric family metadata: the latest type, unit and help per family name,
// in the WAL first, and in histograms/metadata.acta (name, type, unit,
// help; one block, rewritten whole) before the WAL segments holding it go.
const metadataSchemaID = 4

var metadataSchema = mustSchema(acta.NewSchema(metadataSchemaID, []acta.Column{
	{ID: 1, Name: "name", Type: acta.Of(acta.TypeUTF8)},
	{ID: 2, Name: "type", Type: acta.Of(acta.TypeUTF8)},
	{ID: 3, Name: "unit", Type: acta.Of(acta.TypeUTF8)},
	{ID: 4, Name: "help", Type: acta.Of(acta.TypeUTF8)},
}, ""))

// metaStore holds the metadata of every family. Its mu is a leaf lock.
type metaStore struct {
	path string

	mu      sync.Mutex
	m       map[string]Metadata
	changed bool // differs from the file
}

func newMetaStore(root string) *metaStore {
	return &metaStore{path: filepath.Join(root, histDirName, metadataFileName), m: make(map[string]Metadata)}
}

// set records the batch's metadata (after its WAL write).
func (ms *metaStore) set(md []NamedMetadata) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, m := range md {
		if old, ok := ms.m[m.Name]; !ok || old != m.Metadata {
			ms.m[m.Name] = m.Metadata
			ms.changed = true
		}
	}
}

// flush rewrites the metadata file when it differs from memory. WAL
// truncation calls it after finding what it may delete: every metadata
// record in those segments is applied already.
func (ms *metaStore) flush() error {
	ms.mu.Lock()
	if !ms.changed {
		ms.mu.Unlock()
		return nil
	}
	snap := make(map[string]Metadata, len(ms.m))
	for k, v := range ms.m {
		snap[k] = v
	}
	ms.changed = false
	ms.mu.Unlock()
	if err := writeActaFileAtomic(ms.path, metadataSchema, metadataBatch(snap), exemplarWriterOptions); err != nil {
		ms.mu.Lock()
		ms.changed = true
		ms.mu.Unlock()
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

// load reads the metadata file (a missing one is empty).
func (ms *metaStore) load() error {
	r, err := acta.Open(ms.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read metadata %s: %w", ms.path, err)
	}
	defer r.Close()
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			return fmt.Errorf("read block %d of %s: %w", i, ms.path, err)
		}
		var c [4]*acta.BytesArray
		for j := range c {
			var ok bool
			if c[j], ok = b.Columns[j].(*acta.BytesArray); !ok {
				return fmt.Errorf("%s: column %d is %T", ms.path, j, b.Columns[j])
			}
		}
		for j := 0; j < b.Rows; j++ {
			ms.m[string(c[0].Value(j))] = Metadata{Type: model.MetricType(c[1].Value(j)), Unit: string(c[2].Value(j)), Help: string(c[3].Value(j))}
		}
	}
	return nil
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

// Metadata returns the stored metadata of a metric family, or of all
// families sorted by name when name is "" (MetadataQuerier).
func (s *Store) Metadata(ctx context.Context, name string) ([]NamedMetadata, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.md.mu.Lock()
	defer s.md.mu.Unlock()
	if name != "" {
		if m, ok := s.md.m[name]; ok {
			return []NamedMetadata{{Name: name, Metadata: m}}, nil
		}
		return nil, nil
	}
	out := make([]NamedMetadata, 0, len(s.md.m))
	for n, m := range s.md.m {
		out = append(out, NamedMetadata{Name: n, Metadata: m})
	}
	slices.SortFunc(out, func(a, b NamedMetadata) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
