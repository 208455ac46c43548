package bucket

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Every object name under a bucket prefix (docs/format/bucket.md):
//
//	<prefix>/
//	  retention.json                          the bucket retention horizon, written by the
//	                                          one instance that runs bucket retention
//	  <instance>/
//	    series/<ab>/<ref>-<start>-<crc>.acta      an uploaded float series file
//	    histograms/<ab>/<ref>-<start>-<crc>.acta  an uploaded native histogram file
//	    index/<seq>.full                      every series and file of the instance
//	    index/<seq>.delta                     what changed since index <seq>-1
//
// <ab>, <ref> and <start> are those of the local file (the ref's top byte
// in hex, 16 hex digits, the start in decimal ms); <crc> is the CRC-32C of
// the whole file, 8 hex digits, so a rewritten file gets a new key and an
// object, once written, never changes. <seq> is 20 decimal digits, so
// names sort by sequence. Readers find files only through an index object:
// an upload cut short by a crash is either a multipart upload never
// completed (not an object) or an object no index names.

// Kind is the kind of series file: what the store keeps under series/ and
// histograms/.
type Kind uint8

const (
	KindFloat     Kind = 0 // float64 samples, series/
	KindHistogram Kind = 1 // native histograms, histograms/
	numKinds           = 2
)

// Dir is the directory of a kind's files, in the bucket as on local disk.
func (k Kind) Dir() string {
	if k == KindHistogram {
		return "histograms"
	}
	return "series"
}

func (k Kind) valid() bool { return k < numKinds }

const (
	fileExt       = ".acta"
	indexDir      = "index/"
	fullExt       = ".full"
	deltaExt      = ".delta"
	retentionName = "retention.json"
)

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidInstance checks an instance ID: 1-128 characters of letters,
// digits, '.', '_' and '-', starting with a letter or digit (a plain
// object name segment on every S3 implementation).
func ValidInstance(id string) error {
	if !instanceRE.MatchString(id) {
		return fmt.Errorf("instance ID %q: want 1-128 of [A-Za-z0-9._-], starting with a letter or digit", id)
	}
	return nil
}

// ValidPrefix checks a key prefix: empty, or segments separated by single
// slashes without a leading or trailing one.
func ValidPrefix(p string) error {
	if p == "" {
		return nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("prefix %q: want segments separated by single slashes, none empty, \".\" or \"..\", no leading or trailing slash", p)
		}
	}
	return nil
}

// Layout names the objects under one prefix of a bucket.
type Layout struct {
	Prefix string // "" for the bucket's root; no leading or trailing slash
}

func (l Layout) root() string {
	if l.Prefix == "" {
		return ""
	}
	return l.Prefix + "/"
}

// Root is where instances' prefixes are listed: "" or "<prefix>/".
func (l Layout) Root() string { return l.root() }

// InstanceRoot is "<prefix>/<instance>/": every object of one instance.
func (l Layout) InstanceRoot(inst string) string { return l.root() + inst + "/" }

// FileKey is the key of an uploaded series file.
func (l Layout) FileKey(inst string, k Kind, ref uint64, start int64, crc uint32) string {
	return fmt.Sprintf("%s%s/%02x/%016x-%d-%08x%s", l.InstanceRoot(inst), k.Dir(), ref>>56, ref, start, crc, fileExt)
}

// ParseFileKey is FileKey's inverse for keys under inst; ok is false for
// other names.
func (l Layout) ParseFileKey(inst, key string) (k Kind, ref uint64, start int64, crc uint32, ok bool) {
	rest, found := strings.CutPrefix(key, l.InstanceRoot(inst))
	if !found {
		return 0, 0, 0, 0, false
	}
	dir, rest, found := strings.Cut(rest, "/")
	switch {
	case !found:
		return 0, 0, 0, 0, false
	case dir == KindFloat.Dir():
		k = KindFloat
	case dir == KindHistogram.Dir():
		k = KindHistogram
	default:
		return 0, 0, 0, 0, false
	}
	shard, name, found := strings.Cut(rest, "/")
	base, isActa := strings.CutSuffix(name, fileExt)
	if !found || !isActa || len(shard) != 2 || len(base) < 16+1+1+1+8 || base[16] != '-' || base[len(base)-9] != '-' {
		return 0, 0, 0, 0, false
	}
	ref, err1 := strconv.ParseUint(base[:16], 16, 64)
	start, err2 := strconv.ParseInt(base[17:len(base)-9], 10, 64)
	c, err3 := strconv.ParseUint(base[len(base)-8:], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || shard != fmt.Sprintf("%02x", ref>>56) {
		return 0, 0, 0, 0, false
	}
	return k, ref, start, uint32(c), true
}

// IndexPrefix is where an instance's index objects are.
func (l Layout) IndexPrefix(inst string) string { return l.InstanceRoot(inst) + indexDir }

// IndexKey names index object seq of an instance: a full one (every series
// and file) or a delta (the changes since seq-1).
func (l Layout) IndexKey(inst string, seq uint64, full bool) string {
	ext := deltaExt
	if full {
		ext = fullExt
	}
	return fmt.Sprintf("%s%020d%s", l.IndexPrefix(inst), seq, ext)
}

// parseIndexName reads "<seq>.full" or "<seq>.delta".
func parseIndexName(name string) (seq uint64, full, ok bool) {
	base, isFull := strings.CutSuffix(name, fullExt)
	if !isFull {
		var isDelta bool
		if base, isDelta = strings.CutSuffix(name, deltaExt); !isDelta {
			return 0, false, false
		}
	}
	if len(base) != 20 {
		return 0, false, false
	}
	seq, err := strconv.ParseUint(base, 10, 64)
	if err != nil || seq == 0 {
		return 0, false, false
	}
	return seq, isFull, true
}

// RetentionKey is the bucket retention horizon object.
func (l Layout) RetentionKey() string { return l.root() + retentionName }
