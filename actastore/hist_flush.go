package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/rotation"
)

// histHeadAgeFactor: histograms wait histHeadAgeFactor × MaxHeadAge in
// the head (in the WAL, so durable) before a timed flush, because each
// flush is one block per series and small blocks cost: at a 15 s scrape,
// 5 minutes make 20-row blocks of 131 bytes a sample, 20 minutes 80-row
// blocks of 51 (histfile's BenchmarkBytesPerHistogram).
const histHeadAgeFactor = 4

// loop flushes when a series buffers BlockRows histograms or the oldest
// unflushed item is histHeadAgeFactor × MaxHeadAge old.
func (h *histStore) loop() {
	defer close(h.done)
	maxAge := histHeadAgeFactor * h.s.opts.MaxHeadAge
	tick := time.NewTicker(max(time.Second, h.s.opts.MaxHeadAge/8))
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.flushCh:
		case <-tick.C:
			h.smu.Lock()
			due := !h.oldest.IsZero() && h.s.now().Sub(h.oldest) >= maxAge
			h.smu.Unlock()
			if !due {
				continue
			}
		}
		if err := h.flushAll(); err != nil {
			h.s.log.Error("histogram flush failed; retrying later", "err", err)
		}
	}
}

// flushAll writes every head, the new exemplars and changed metadata into
// their files, syncs them, and then deletes the histogram WAL segments,
// which hold nothing else. On error the heads and WAL stay as they were
// (a block may have reached a file: replay writes it again and reads keep
// one sample per timestamp).
func (h *histStore) flushAll() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.smu.Lock()
	all := make([]*histSeries, 0, len(h.series))
	for _, st := range h.series {
		all = append(all, st)
	}
	metaDirty := h.metaDirty
	var meta map[string]Metadata
	if metaDirty {
		meta = make(map[string]Metadata, len(h.meta))
		for k, v := range h.meta {
			meta[k] = v
		}
	}
	h.smu.Unlock()

	opts := histWriterOptions(h.s.fo)
	dirs := map[string]bool{}
	var flushed []*histSeries
	for _, st := range all {
		st.mu.Lock()
		head := st.head
		var newEx []Exemplar
		if st.exNew > 0 {
			newEx = st.exemplars[len(st.exemplars)-st.exNew:]
		}
		exRows := st.exRows
		st.mu.Unlock()
		if len(head) > 0 {
			if err := h.writeRotated(st, head, opts, dirs); err != nil {
				return err
			}
		}
		if len(newEx) > 0 {
			path := exemplarFilePath(h.s.dir, st.ref)
			if exRows+len(newEx) > exemplarFileSlack*maxExemplarsKept {
				// Keep the file bounded: rewrite it with the kept exemplars.
				st.mu.Lock()
				kept := append([]Exemplar(nil), st.exemplars...)
				st.mu.Unlock()
				if err := writeActaFileAtomic(path, exemplarSchema, exemplarBatch(kept), opts); err != nil {
					return fmt.Errorf("rewrite exemplars of series %016x: %w", st.ref, err)
				}
				exRows = len(kept)
			} else {
				created, err := appendActaBlock(path, exemplarSchema, exemplarBatch(newEx), opts)
				if err != nil {
					return fmt.Errorf("flush exemplars of series %016x: %w", st.ref, err)
				}
				if created {
					dirs[filepath.Dir(path)] = true
				}
				exRows += len(newEx)
			}
		}
		if len(head) > 0 || len(newEx) > 0 {
			st.mu.Lock()
			st.exRows = exRows
			st.mu.Unlock()
			flushed = append(flushed, st)
		}
	}
	if metaDirty {
		if err := writeActaFileAtomic(filepath.Join(h.root, metadataFileName), metadataSchema, metadataBatch(meta), opts); err != nil {
			return fmt.Errorf("write metadata: %w", err)
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	// Everything buffered is in synced files: the WAL can go. Appends are
	// excluded (mu), so nothing new sits in it.
	seg, err := h.wal.Cut()
	if err != nil {
		return fmt.Errorf("cut histogram WAL: %w", err)
	}
	if err := h.wal.TruncateBefore(seg); err != nil {
		return fmt.Errorf("truncate histogram WAL: %w", err)
	}
	for _, st := range flushed {
		st.mu.Lock()
		if n := len(st.head); n > 0 {
			st.lastFlushed, st.hasFlushed = st.head[n-1], true
		}
		h.headSamples.Add(-int64(len(st.head)))
		st.head = nil
		st.exNew = 0
		st.mu.Unlock()
	}
	h.smu.Lock()
	if metaDirty {
		h.metaDirty = false
	}
	h.oldest = time.Time{}
	h.smu.Unlock()
	return nil
}

// writeRotated writes a series' sorted head into its histogram files as
// the rotation policy routes them, as Store.writeRotated does for floats
// (h.mu held exclusively). One block per write of up to maxHistBlockRows:
// histfile's bucket columns refer to the block's previous row.
func (h *histStore) writeRotated(st *histSeries, head []HistogramSample, opts acta.WriterOptions, dirs map[string]bool) error {
	pol := h.s.opts.Rotation
	st.mu.Lock()
	var cur *rotation.Newest
	var curStart int64
	if n := len(st.files); n > 0 {
		curStart = st.files[n-1]
		cur = &rotation.Newest{Start: curStart, MaxT: st.newestMax}
		// A file renamed from before rotation may span periods: route as
		// if it started in its newest sample's period, so every new file
		// starts after everything it holds.
		if pol.Period > 0 && st.newestMax != noTime && pol.PeriodStart(st.newestMax) > curStart {
			cur.Start = pol.PeriodStart(st.newestMax)
		}
	}
	st.mu.Unlock()
	if cur != nil && pol.MaxFileBytes > 0 {
		if fi, err := os.Stat(histFilePath(h.s.dir, st.ref, curStart)); err == nil {
			cur.Bytes = fi.Size()
		}
	}
	ts := make([]int64, len(head))
	for i, x := range head {
		ts[i] = x.T
	}
	for _, part := range pol.Split(cur, ts) {
		start := part.Start
		if !part.Create {
			start = curStart
		}
		path := histFilePath(h.s.dir, st.ref, start)
		for lo := part.Lo; lo < part.Hi; lo += maxHistBlockRows {
			created, err := appendActaBlock(path, histfile.Schema(), histfile.Batch(head[lo:min(part.Hi, lo+maxHistBlockRows)]), opts)
			if err != nil {
				return fmt.Errorf("flush histograms of series %016x: %w", st.ref, err)
			}
			if created {
				dirs[filepath.Dir(path)] = true
			}
		}
		if part.Create {
			h.s.rm.FilesCreated.WithLabelValues(part.Reason).Inc()
		}
		st.mu.Lock()
		if part.Create && !slices.Contains(st.files, start) {
			st.files = append(st.files, start)
			slices.Sort(st.files)
		}
		if n := len(st.files); n > 0 && st.files[n-1] == start {
			st.newestMax = max(st.newestMax, ts[part.Hi-1])
		}
		st.mu.Unlock()
	}
	return nil
}

// close stops the loop, flushes and closes the WAL.
func (h *histStore) close() error {
	if h == nil {
		return nil
	}
	close(h.stop)
	<-h.done
	err := h.flushAll()
	return errors.Join(err, h.wal.Close())
}

// sweepTmp removes rewrites interrupted by a crash.
func (h *histStore) sweepTmp() {
	filepath.WalkDir(h.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == tmpSuffix {
			os.Remove(p)
		}
		return nil
	})
}

// abandon stops as a crash would (tests): no flush, the WAL file closed.
func (h *histStore) abandon() {
	close(h.stop)
	<-h.done
	h.wal.Close()
}
