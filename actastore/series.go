package actastore

import (
	"encoding/binary"
	"errors"
	"fmt"
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
				err = fmt.Errorf("%w: labels not sorted (%q after %q) in %s", ErrInvalidSeries, l.Name, prev, lset)
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
