package bucket

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// State is what one instance's index objects describe: its series (ref
// and labels) and its uploaded files. A full index object is a State; a
// delta applies to the State of the sequence number before it.
type State struct {
	Seq    uint64 // of the last index object applied; 0: none
	Series map[uint64]labels.Labels
	Files  map[FileID]File
}

// NewState is the state before any index object.
func NewState() *State {
	return &State{Series: make(map[uint64]labels.Labels), Files: make(map[FileID]File)}
}

// Apply applies one record. A file record replaces the file of the same
// id (a rewritten file); a remove record drops the file of that id if it
// has that CRC. It returns the file that left the state, if any: its
// object is garbage once an index without it is published.
func (s *State) Apply(r Record) (gone File, ok bool) {
	switch r.Type {
	case RecSeries:
		s.Series[r.Ref] = r.Labels
	case RecFile:
		gone, ok = s.Files[r.File.FileID]
		if ok && gone.CRC == r.File.CRC {
			ok = false // the same object again
		}
		s.Files[r.File.FileID] = r.File
	case RecRemove:
		if f, found := s.Files[r.File.FileID]; found && f.CRC == r.File.CRC {
			delete(s.Files, r.File.FileID)
			return f, true
		}
	}
	return gone, ok
}

// Records encodes the state as the records of a full index object: the
// series that have files, then the files, each sorted (the same state
// always gives the same bytes).
func (s *State) Records() [][]byte {
	refs := make(map[uint64]bool)
	files := make([]File, 0, len(s.Files))
	for _, f := range s.Files {
		files = append(files, f)
		refs[f.Ref] = true
	}
	slices.SortFunc(files, func(a, b File) int {
		return cmp.Or(cmp.Compare(a.Ref, b.Ref), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Start, b.Start))
	})
	out := make([][]byte, 0, len(refs)+len(files))
	sorted := make([]uint64, 0, len(refs))
	for r := range refs {
		sorted = append(sorted, r)
	}
	slices.Sort(sorted)
	for _, r := range sorted {
		if l, ok := s.Series[r]; ok {
			out = append(out, AppendSeries(nil, r, l))
		}
	}
	for _, f := range files {
		f.ModTime = 0
		out = append(out, AppendFile(nil, f))
	}
	return out
}

// IndexEntry is one listed index object.
type IndexEntry struct {
	Key      string
	Seq      uint64
	Full     bool
	Modified time.Time
}

// ListIndex lists an instance's index objects by sequence.
func (c *Client) ListIndex(ctx context.Context, l Layout, inst string) ([]IndexEntry, error) {
	var out []IndexEntry
	err := c.List(ctx, l.IndexPrefix(inst), false, func(o ObjectInfo) error {
		if seq, full, ok := parseIndexName(path.Base(o.Key)); ok && !o.Prefix {
			out = append(out, IndexEntry{Key: o.Key, Seq: seq, Full: full, Modified: o.Modified})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b IndexEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, err
}

// ListInstances lists the instance prefixes under the layout's root.
func (c *Client) ListInstances(ctx context.Context, l Layout) ([]string, error) {
	var out []string
	err := c.List(ctx, l.Root(), false, func(o ObjectInfo) error {
		if !o.Prefix {
			return nil
		}
		name := path.Base(o.Key)
		if ValidInstance(name) == nil {
			out = append(out, name)
		}
		return nil
	})
	return out, err
}

// ErrNoIndex: an instance prefix has index objects but no full one to
// start from (only deltas: damaged or being deleted).
var ErrNoIndex = errors.New("bucket: no full index object")

// LoadState brings prev (nil: nothing yet) up to the newest index objects
// of inst: the deltas after prev.Seq when they are all there, else the
// newest full index and the deltas after it. maxRaw bounds one decoded
// index object. A state with Seq 0 means the instance has published
// nothing. prev is modified.
func (c *Client) LoadState(ctx context.Context, l Layout, inst string, prev *State, maxRaw int64) (*State, error) {
	entries, err := c.ListIndex(ctx, l, inst)
	if err != nil {
		return prev, err
	}
	return c.loadFrom(ctx, entries, prev, maxRaw)
}

func (c *Client) loadFrom(ctx context.Context, entries []IndexEntry, prev *State, maxRaw int64) (*State, error) {
	if prev == nil {
		prev = NewState()
	}
	if len(entries) == 0 {
		return prev, nil
	}
	newestFull := -1
	for i, e := range entries {
		if e.Full {
			newestFull = i
		}
	}
	// Deltas after prev.Seq, if the chain from it is unbroken.
	next := slices.IndexFunc(entries, func(e IndexEntry) bool { return e.Seq > prev.Seq })
	if next < 0 {
		return prev, nil // nothing newer
	}
	chained := prev.Seq > 0 && entries[next].Seq == prev.Seq+1 && (newestFull < next || entries[newestFull].Seq <= prev.Seq)
	cur := prev
	if !chained {
		if newestFull < 0 {
			return prev, fmt.Errorf("%w under %s", ErrNoIndex, c.URL(path.Dir(entries[0].Key)+"/"))
		}
		next = newestFull
		cur = NewState() // prev stays as it was until the full index is in
	}
	for i := next; i < len(entries); i++ {
		e := entries[i]
		if cur.Seq > 0 && e.Seq != cur.Seq+1 {
			return keep(prev, cur), fmt.Errorf("%w: %s follows index %d (an index object is missing)", ErrIndex, c.URL(e.Key), cur.Seq)
		}
		obj, err := c.Get(ctx, e.Key, maxRaw+maxRaw/4+64, "index")
		if err != nil {
			return keep(prev, cur), err
		}
		io, err := DecodeIndex(c.URL(e.Key), obj, maxRaw)
		if err != nil {
			return keep(prev, cur), err
		}
		if io.Seq != e.Seq || io.Full != e.Full {
			return keep(prev, cur), fmt.Errorf("%w %s: holds index %d (full %v)", ErrIndex, c.URL(e.Key), io.Seq, io.Full)
		}
		if io.Full {
			cur = NewState()
		}
		for _, r := range io.Records {
			cur.Apply(r)
		}
		cur.Seq = io.Seq
	}
	return cur, nil
}

// keep is what a load that failed part-way returns: the state it advanced
// (each index object applied whole), or prev when it got nowhere.
func keep(prev, cur *State) *State {
	if cur.Seq == 0 {
		return prev
	}
	return cur
}
