package actastore

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/rotation"
)

// Compaction rewrites sealed files of every kind into large sorted blocks:
// decoded by the kind's codec, sorted, deduplicated (the first stored
// wins, what Select returns), re-encoded by the codec for a sealed file,
// and swapped in by rotation.Rewrite (temp file, fsync, full validation,
// rename, directory fsync). Only sealed files are rewritten: no flush
// writes them, and retention (which may delete them) runs in the same
// maintenance pass. Readers need no lock: the rename swaps whole files,
// each with the same samples.

// maintainer is the state of background maintenance.
type maintainer struct {
	mu        sync.Mutex          // one maintenance pass at a time
	cmu       sync.Mutex          // guards compacted
	compacted map[string]struct{} // sealed files known compact (or failed once) since Open
}

func newMaintainer() *maintainer { return &maintainer{compacted: make(map[string]struct{})} }

func (m *maintainer) done(path string) bool {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	_, ok := m.compacted[path]
	return ok
}

func (m *maintainer) mark(path string) {
	m.cmu.Lock()
	m.compacted[path] = struct{}{}
	m.cmu.Unlock()
}

// forget drops a deleted file.
func (m *maintainer) forget(path string) {
	m.cmu.Lock()
	delete(m.compacted, path)
	m.cmu.Unlock()
}

// compactJob is one sealed file to compact.
type compactJob struct {
	kind  kindID
	ms    *memSeries
	start int64
	path  string
}

// compactSealed rewrites every sealed file not known compact, one at a
// time, paced.
func (s *Store) compactSealed(res *MaintenanceResult) {
	var jobs []compactJob
	for _, ms := range s.reg.live() {
		jobs = appendCompactJobs(s, floats, ms, jobs)
		jobs = appendCompactJobs(s, histograms, ms, jobs)
	}
	s.rm.PendingCompaction.Set(float64(len(jobs)))
	co := s.opts.Compaction
	opts := rotation.CompactOptions{BlockRows: co.BlockRows, ZstdLevel: co.ZstdLevel,
		Limiter: rotation.NewLimiter(co.BytesPerSec, s.stop)}
	for i, j := range jobs {
		select {
		case <-s.stop:
			return
		default:
		}
		began := time.Now()
		var r rotation.CompactResult
		var err error
		switch j.kind {
		case kindHistogram:
			r, err = compactFile(histograms, j.path, opts)
		default:
			r, err = compactFile(floats, j.path, opts)
		}
		s.rm.PendingCompaction.Set(float64(len(jobs) - i - 1))
		if err == nil && !r.Skipped {
			s.readers.invalidate(j.path) // the rename replaced it
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			res.Errors++
			s.rm.Compactions.WithLabelValues("error").Inc()
			s.log.Error("compaction failed; file left as it was", "path", j.path, "err", err)
			s.maint.mark(j.path) // not retried before the next start
			continue
		}
		s.maint.mark(j.path)
		if r.Skipped {
			res.AlreadyDone++
			s.rm.Compactions.WithLabelValues("skipped").Inc()
			continue
		}
		res.Compacted++
		res.BytesBefore += r.AllocatedIn
		res.BytesAfter += r.AllocatedOut
		s.rm.Compactions.WithLabelValues("done").Inc()
		s.rm.CompactionSeconds.Observe(time.Since(began).Seconds())
		s.rm.CompactedIn.Add(float64(r.AllocatedIn))
		s.rm.CompactedOut.Add(float64(r.AllocatedOut))
		s.rm.DuplicatesDropped.Add(float64(r.RowsIn - r.RowsOut))
		s.log.Debug("compacted series file", "path", j.path, "rows", r.RowsOut, "blocks_before", r.BlocksIn,
			"blocks_after", r.BlocksOut, "bytes_before", r.AllocatedIn, "bytes_after", r.AllocatedOut)
	}
}

func appendCompactJobs[S any](s *Store, k kind[S], ms *memSeries, jobs []compactJob) []compactJob {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	tr := k.track(ms, false)
	if tr == nil {
		return jobs
	}
	for _, st := range tr.files[:max(len(tr.files)-1, 0)] {
		path := filePath(s.dir, k, ms.ref, st)
		if !s.maint.done(path) {
			jobs = append(jobs, compactJob{kind: k.id(), ms: ms, start: st, path: path})
		}
	}
	return jobs
}

// compactFile rewrites one sealed file of kind k, unless its blocks are
// compact already.
func compactFile[S any](k kind[S], path string, o rotation.CompactOptions) (rotation.CompactResult, error) {
	rows := o.BlockRows
	if rows <= 0 {
		rows = 65536
	}
	rows = min(rows, k.maxBlockRows(fileOptions{blockRows: rows}))
	r, err := acta.Open(path)
	if err != nil {
		return rotation.CompactResult{}, err
	}
	blocks := r.Blocks()
	if rotation.BlocksCompact(blocks, rows) {
		r.Close()
		return rotation.Skipped(path, blocks)
	}
	var all []S
	for i := range blocks {
		b, err := r.ReadBlock(i)
		if err != nil {
			r.Close()
			return rotation.CompactResult{}, fmt.Errorf("read block %d of %s: %w", i, path, err)
		}
		if all, err = k.decode(all, r.Schema(), b, math.MinInt64, math.MaxInt64); err != nil {
			r.Close()
			return rotation.CompactResult{}, fmt.Errorf("decode block %d of %s: %w", i, path, err)
		}
	}
	r.Close()
	slices.SortStableFunc(all, func(a, b S) int { return cmpInt64(k.ts(a), k.ts(b)) })
	all = dedupeSorted(k, all)
	var batches []*acta.Batch
	for lo := 0; lo < len(all); lo += rows {
		b, err := k.batch(all[lo:min(lo+rows, len(all))], true)
		if err != nil {
			return rotation.CompactResult{}, err
		}
		batches = append(batches, b)
	}
	return rotation.Rewrite(path, compactTmpPath(path), k.schema(), batches, o)
}
