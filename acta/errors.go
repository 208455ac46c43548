package acta

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is; every error the
// package returns wraps at most one of them.
var (
	// ErrCorrupt marks data that breaks a MUST of the v0.2 spec. Errors that
	// wrap it are *CorruptionError and carry the file and byte offset.
	ErrCorrupt = errors.New("acta: corrupt file")
	// ErrUnsupportedVersion marks a well-formed file of a format version this
	// package does not implement (spec §2.1): unsupported, not corrupt.
	ErrUnsupportedVersion = errors.New("acta: unsupported format version")
	// ErrUnsupported marks a valid file using a feature this build cannot
	// decode (for example an unknown codec in a later minor version).
	ErrUnsupported = errors.New("acta: unsupported feature")
	// ErrLimit marks a read refused because it would exceed a Limits bound.
	ErrLimit = errors.New("acta: resource limit exceeded")
	// ErrWriterLocked is returned when another writer holds the file's lock.
	ErrWriterLocked = errors.New("acta: writer lock held by another writer")
	// ErrPoisoned is returned by every call on a writer after a partial write
	// or sync failure: the file may hold a torn frame that needs recovery.
	ErrPoisoned = errors.New("acta: writer poisoned by an earlier I/O failure")
	// ErrFileReplaced is returned by Refresh when the path no longer names the
	// file the snapshot came from.
	ErrFileReplaced = errors.New("acta: file replaced")
	// ErrFileTruncated is returned by Refresh when the file shrank below the
	// snapshot's committed boundary.
	ErrFileTruncated = errors.New("acta: file truncated below committed data")
	// ErrIncompleteTail is returned by Writer Open on a file whose final frame
	// is incomplete; see RepairIncompleteTail.
	ErrIncompleteTail = errors.New("acta: incomplete final frame")
	// ErrSchemaMismatch is returned when a batch does not match the schema.
	ErrSchemaMismatch = errors.New("acta: batch does not match schema")
)

// CorruptionError describes corrupt bytes: which file, at which byte offset,
// and what rule they broke. It wraps ErrCorrupt and, when present, the
// underlying cause. It is the package's only corruption error type.
type CorruptionError struct {
	Path   string // file path, "" for in-memory input
	Offset int64  // byte offset in the file where the bad structure starts, -1 if unknown
	Reason string // what is wrong, naming the numbers found and expected
	Err    error  // optional cause
}

func (e *CorruptionError) Error() string {
	s := "acta: corrupt"
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrCorrupt) true for every CorruptionError.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptionError) Unwrap() error { return e.Err }

// IsCorruption reports whether err is or wraps a corruption error.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorrupt) }

// corruptf builds a CorruptionError with no path; layers that know the path
// and offset fill them in with annotate.
func corruptf(offset int64, format string, args ...any) *CorruptionError {
	return &CorruptionError{Offset: offset, Reason: fmt.Sprintf(format, args...)}
}
