package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// maxLabelsBytes bounds one series' canonical label encoding. The receivers
// enforce tighter per-label limits; this one only keeps a WAL record bounded.
const maxLabelsBytes = 64 << 10

// appendCanonicalLabels appends the canonical encoding of lset to dst: the
// label count, then each name and value in sorted order, every count and
// length an unsigned varint. It is what series refs hash and what the WAL and
// the catalog store (docs/format/catalog.md), so it is frozen.
func appendCanonicalLabels(dst []byte, lset labels.Labels) []byte {
	dst = binary.AppendUvarint(dst, uint64(lset.Len()))
	lset.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	return dst
}

var errLabelsEncoding = errors.New("bad canonical label encoding")

// decodeCanonicalLabels is appendCanonicalLabels' inverse. It returns the
// unread rest of src. b is scratch space, reused across calls.
func decodeCanonicalLabels(b *labels.ScratchBuilder, src []byte) (labels.Labels, []byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) { // each label takes at least 2 bytes
		return labels.EmptyLabels(), nil, errLabelsEncoding
	}
	src = src[k:]
	b.Reset()
	for i := uint64(0); i < n; i++ {
		var name, value string
		var ok bool
		if name, src, ok = readString(src); !ok {
			return labels.EmptyLabels(), nil, errLabelsEncoding
		}
		if value, src, ok = readString(src); !ok {
			return labels.EmptyLabels(), nil, errLabelsEncoding
		}
		b.Add(name, value)
	}
	return b.Labels(), src, nil
}

func readString(src []byte) (string, []byte, bool) {
	l, k := binary.Uvarint(src)
	if k <= 0 || l > uint64(len(src)-k) {
		return "", nil, false
	}
	return string(src[k : k+int(l)]), src[k+int(l):], true
}

// hashLabels is the preferred ref of a label set: xxhash64 of its canonical
// encoding. Zero is reserved ("no series"), so a zero hash becomes 1. Two
// label sets can share a hash; the store then gives the later one the next
// free ref, and the catalog keeps that choice across restarts.
func hashLabels(canon []byte) uint64 {
	h := xxhash.Sum64(canon)
	if h == 0 {
		h = 1
	}
	return h
}

// errUnsorted marks a label set that is valid but for its order.
var errUnsorted = fmt.Errorf("%w: unsorted", ErrInvalidSeries)

// canonicalLabels returns lset checked and in canonical (sorted) order. A
// permutation of a valid label set is sorted into its canonical series, as
// Prometheus and Mimir do (some clients send __name__ first); sorted says
// so. Duplicate and empty names stay invalid.
func canonicalLabels(lset labels.Labels) (out labels.Labels, sorted bool, err error) {
	err = validateLabels(lset)
	if !errors.Is(err, errUnsorted) {
		return lset, false, err
	}
	b := labels.NewScratchBuilder(lset.Len())
	lset.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
	b.Sort()
	out = b.Labels()
	if err := validateLabels(out); err != nil {
		return lset, false, err
	}
	return out, true, nil
}

// validateLabels checks what Append requires of a series' labels: at least
// __name__ with a non-empty value; names non-empty, valid UTF-8, strictly
// ascending (sorted, unique); values non-empty valid UTF-8 (an empty value
// means "label absent" in Prometheus, so it must not be sent).
func validateLabels(lset labels.Labels) error {
	if lset.Len() == 0 {
		return fmt.Errorf("%w: empty label set", ErrInvalidSeries)
	}
	var err error
	prev := ""
	first := true
	size := 0
	lset.Range(func(l labels.Label) {
		if err != nil {
			return
		}
		size += len(l.Name) + len(l.Value)
		switch {
		case l.Name == "":
			err = fmt.Errorf("%w: empty label name in %s", ErrInvalidSeries, lset)
		case !first && l.Name <= prev:
			if l.Name == prev {
				err = fmt.Errorf("%w: duplicate label name %q in %s", ErrInvalidSeries, l.Name, lset)
			} else {
				err = fmt.Errorf("%w: labels not sorted (%q after %q) in %s", errUnsorted, l.Name, prev, lset)
			}
		case !utf8.ValidString(l.Name):
			err = fmt.Errorf("%w: label name %q is not UTF-8", ErrInvalidSeries, l.Name)
		case l.Value == "":
			err = fmt.Errorf("%w: label %q has an empty value in %s", ErrInvalidSeries, l.Name, lset)
		case !utf8.ValidString(l.Value):
			err = fmt.Errorf("%w: value of label %q is not UTF-8", ErrInvalidSeries, l.Name)
		}
		prev, first = l.Name, false
	})
	if err != nil {
		return err
	}
	if lset.Get(labels.MetricName) == "" {
		return fmt.Errorf("%w: no %s label in %s", ErrInvalidSeries, labels.MetricName, lset)
	}
	if size > maxLabelsBytes {
		return fmt.Errorf("%w: labels take %d bytes, limit %d", ErrInvalidSeries, size, maxLabelsBytes)
	}
	return nil
}

// memSeries is one series in memory: its identity, a track per kind of
// sample it holds, and its newest exemplars. An idle series (nothing
// buffered) costs the struct, its labels and its postings entries.
type memSeries struct {
	ref uint64
	id  uint32 // index id, assigned by index.add
	// ckptEpoch is the WAL checkpoint that copied the series' heads last
	// (checkpointCopy; guarded by mu). In the padding after id.
	ckptEpoch uint32
	// syms are its labels as ids of its index's symbols (index.labels),
	// set by index.add.
	syms    string
	created int64 // ms

	mu     sync.Mutex // guards everything below
	floats track[Sample]
	// extras are the series' native histograms and exemplars, nil until
	// it gets one of them: one pointer for both keeps the struct in the
	// 112-byte size class (TestMemSeriesSize).
	extras *seriesExtras
	// removed: retention or deletion took the series out of the index;
	// nothing may be added to it.
	removed   bool
	walLogged bool // a series record for it is in the WAL (or catalog)
	inCatalog bool // its record is in the catalog
}

// seriesExtras is what a series holds besides float samples (guarded by
// its mu).
type seriesExtras struct {
	hists *track[HistogramSample] // nil until the series gets a histogram
	ex    *exemplars              // nil until the series gets an exemplar
}

// hists is the series' histogram track, nil until it gets a histogram
// (histKind.track creates it). Called with mu held.
func (ms *memSeries) hists() *track[HistogramSample] {
	if ms.extras == nil {
		return nil
	}
	return ms.extras.hists
}

// ex is the series' exemplars, nil until it gets one (exemplarsLocked
// creates them). Called with mu held.
func (ms *memSeries) ex() *exemplars {
	if ms.extras == nil {
		return nil
	}
	return ms.extras.ex
}

// extrasLocked returns the series' extras, creating them (mu held).
func (ms *memSeries) extrasLocked() *seriesExtras {
	if ms.extras == nil {
		ms.extras = &seriesExtras{}
	}
	return ms.extras
}

// dropExemplarsLocked forgets the series' exemplars (mu held), and its
// extras when it has no histograms either.
func (ms *memSeries) dropExemplarsLocked() {
	if ms.extras == nil {
		return
	}
	ms.extras.ex = nil
	if ms.extras.hists == nil {
		ms.extras = nil
	}
}

func newMemSeries(ref uint64, created int64) *memSeries {
	return &memSeries{ref: ref, created: created, floats: newTrack[Sample]()}
}

// busyLocked reports whether the series holds unflushed data of any kind
// (exemplars included). Called with mu held.
func (ms *memSeries) busyLocked() bool {
	h, e := ms.hists(), ms.ex()
	return ms.floats.busy() || (h != nil && h.busy()) || (e != nil && e.unflushed > 0)
}

// hasFilesLocked reports whether the series has a file of any kind.
func (ms *memSeries) hasFilesLocked() bool {
	h := ms.hists()
	return len(ms.floats.files()) > 0 || (h != nil && len(h.files()) > 0)
}

// walSegNeededLocked is the lowest WAL segment whose data the series still
// holds only in memory, or -1.
func (ms *memSeries) walSegNeededLocked() int32 {
	seg := ms.floats.walSegNeeded()
	lower := func(s int32) {
		if s >= 0 && (seg < 0 || s < seg) {
			seg = s
		}
	}
	if h := ms.hists(); h != nil {
		lower(h.walSegNeeded())
	}
	if e := ms.ex(); e != nil && e.unflushed > 0 {
		lower(e.seg)
	}
	return seg
}
