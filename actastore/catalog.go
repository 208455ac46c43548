package actastore

import (
	"fmt"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/prometheus/prometheus/model/labels"
)

// catalog is the durable list of every series the store has seen: ref,
// created time and labels (docs/format/catalog.md). It is an append-only
// log of series records in the WAL's framing, in its own directory, and is
// never truncated.
//
// A new series is first made durable by a series record in the WAL, in the
// same group commit as its first samples; the catalog receives it later, and
// is synced before any WAL segment holding that record is deleted. So the
// series survives in one place or the other at every moment, and start-up
// rebuilds the set from the catalog and then the WAL.
type catalog struct {
	dir string
	log *wal.Log
}

// loadCatalog replays the catalog in dir, calling fn for each series record
// (a ref may appear more than once; the labels are the same each time), then
// opens it for appending.
//
// del is called for each ref of a series-deleted record (retention removed
// the series); records apply in order, so a series defined again later
// comes back.
func loadCatalog(dir string, fn func(seriesRec) error, del func(deletedRec)) (*catalog, error) {
	var b labels.ScratchBuilder
	_, err := wal.Replay(dir, func(seg int, p []byte) error {
		return applyCatalogRecord(&b, seg, p, fn, del)
	})
	if err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", dir, err)
	}
	l, err := wal.Open(dir, wal.Options{SegmentSize: 64 << 20})
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", dir, err)
	}
	return &catalog{dir: dir, log: l}, nil
}

// applyCatalogRecord decodes one catalog record of segment seg: series
// definitions go to add, removals (type 4) to del. Readers of the catalog
// (Open, ReadOnly) share it so a record type is never understood by one
// and refused by the other.
func applyCatalogRecord(b *labels.ScratchBuilder, seg int, p []byte, add func(seriesRec) error, del func(deletedRec)) error {
	switch {
	case len(p) > 0 && p[0] == recSeries:
		return decodeSeriesRecord(b, p, add)
	case len(p) > 0 && p[0] == recSeriesDeleted:
		return decodeDeletedRecord(p, del)
	case len(p) == 0:
		return fmt.Errorf("catalog segment %08d: empty record", seg)
	}
	return fmt.Errorf("catalog segment %08d: unexpected record type %d", seg, p[0])
}

// add makes n series records durable in the catalog, rec(i) giving the
// i-th: encoded and appended catalogAppendSeries at a time (the records of
// 200,000 series at once, and the write buffer holding them again, were
// about 50 MB: the peak RSS of the memory scenario, once checkpoints wrote
// the catalog while it ingested), then synced once.
func (c *catalog) add(n int, rec func(i int) seriesRec) error {
	if n == 0 {
		return nil
	}
	batch := make([]seriesRec, 0, min(n, catalogAppendSeries))
	// One builder for every batch: Append has written the records when it
	// returns (a new one each batch was 4 MB of garbage per 8,192 series,
	// 0.5 GB for a million new series at one checkpoint).
	var rb recordBuilder
	var recs [][]byte
	for lo := 0; lo < n; lo += catalogAppendSeries {
		batch = batch[:0]
		for i := lo; i < min(lo+catalogAppendSeries, n); i++ {
			batch = append(batch, rec(i))
		}
		rb.reset()
		rb.addSeries(batch)
		recs = rb.records(recs[:0])
		clear(batch) // the labels: garbage once encoded
		if _, err := c.log.Append(recs...); err != nil {
			return fmt.Errorf("append %d series to catalog: %w", len(batch), err)
		}
	}
	if err := c.log.Sync(c.log.End()); err != nil {
		return fmt.Errorf("sync catalog: %w", err)
	}
	return nil
}

// catalogAppendSeries is how many series definitions are encoded and
// appended to the catalog at a time. What a batch holds while it is
// written (its label sets, their records and the log's copy of them, about
// 750 bytes a series of the bench's node_exporter shape) is live when a
// collection runs during a checkpoint, and the heap goal, so the resident
// memory, grows by its GOGC share of it: 8,192 at a time were 6 MB of the
// 74 MB live heap of 200,000 series; 2,048 are a quarter of it, and each
// batch is still about 400 KB written at once.
const catalogAppendSeries = 2048

// remove makes the removal of series durable in the catalog.
func (c *catalog) remove(dels []deletedRec) error {
	if len(dels) == 0 {
		return nil
	}
	var recs [][]byte
	for len(dels) > 0 {
		n := min(len(dels), maxRecordPayload/20)
		recs = append(recs, appendDeletedRecord(nil, dels[:n]))
		dels = dels[n:]
	}
	pos, err := c.log.Append(recs...)
	if err != nil {
		return fmt.Errorf("append series removals to catalog: %w", err)
	}
	if err := c.log.Sync(pos); err != nil {
		return fmt.Errorf("sync catalog: %w", err)
	}
	return nil
}

func (c *catalog) close() error { return c.log.Close() }

// catalogCompactSegments: past this many segments (each Open starts one),
// Open rewrites the catalog into a single segment.
const catalogCompactSegments = 8

// compact rewrites every series (n, rec as for add) into the current segment, syncs it, and
// deletes the older segments. A crash in between leaves both copies, which
// load to the same series.
//
// dels (removed series) are written again after all: the WAL may still
// hold definitions of theirs, which replay must keep skipping.
func (c *catalog) compact(n int, rec func(i int) seriesRec, dels []deletedRec) error {
	segs, err := wal.Segments(c.dir)
	if err != nil || len(segs) <= catalogCompactSegments {
		return err
	}
	if err := c.add(n, rec); err != nil {
		return fmt.Errorf("compact catalog: %w", err)
	}
	if err := c.remove(dels); err != nil {
		return fmt.Errorf("compact catalog: %w", err)
	}
	if err := c.log.TruncateBefore(c.log.Current()); err != nil {
		return fmt.Errorf("compact catalog: %w", err)
	}
	return nil
}
