package acta

import "fmt"

// Limits bound what reading one file may allocate (spec §2: readers SHOULD
// apply resource limits before allocating). Per-block limits are checked
// against the sizes a frame declares, before the bytes are read or decoded;
// the per-scan limits accumulate over the blocks a Scan or Tail decodes.
// A zero field means its default (DefaultLimits); for the two per-scan
// fields the default is no limit.
type Limits struct {
	MaxRowsPerBlock      int   // rows one block may declare
	MaxStreamBytes       int64 // stored or transformed length of one stream
	MaxDecodedBlockBytes int64 // bytes one block decode may materialize
	MaxHeaderBytes       int64 // frame header length (schema or data)
	MaxRowsPerScan       int64 // rows one scan may return, 0 = no limit
	MaxDecodedScanBytes  int64 // bytes one scan may decode, 0 = no limit
	MaxPayloadBytes      int64 // frame payload length (the frame is read whole to check its body CRC)
	MaxColumns           int   // columns a schema may declare
}

// DefaultLimits are generous for files we write (65,536-row blocks of a few
// MiB) yet keep a hostile file from asking for more than about a GiB.
func DefaultLimits() Limits {
	return Limits{
		MaxRowsPerBlock:      1 << 24,
		MaxStreamBytes:       1 << 30,
		MaxDecodedBlockBytes: 1 << 30,
		MaxHeaderBytes:       64 << 20,
		MaxPayloadBytes:      1 << 30,
		MaxColumns:           1 << 16,
	}
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxRowsPerBlock <= 0 {
		l.MaxRowsPerBlock = d.MaxRowsPerBlock
	}
	if l.MaxStreamBytes <= 0 {
		l.MaxStreamBytes = d.MaxStreamBytes
	}
	if l.MaxDecodedBlockBytes <= 0 {
		l.MaxDecodedBlockBytes = d.MaxDecodedBlockBytes
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxPayloadBytes <= 0 {
		l.MaxPayloadBytes = d.MaxPayloadBytes
	}
	if l.MaxColumns <= 0 {
		l.MaxColumns = d.MaxColumns
	}
	return l
}

// limitError is a refusal by a limit: it wraps ErrLimit and says where.
type limitError struct {
	Offset int64
	Reason string
}

func (e *limitError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("acta: resource limit at offset %d: %s", e.Offset, e.Reason)
	}
	return "acta: resource limit: " + e.Reason
}
func (e *limitError) Unwrap() error { return ErrLimit }

func limitf(off int64, format string, args ...any) error {
	return &limitError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}
