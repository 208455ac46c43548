package actastore

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/acta-remote/acta-remote/rotation"
)

// Compaction rewrites sealed files of every kind into large sorted blocks
// in the kind's sealed representation (sealed.go: decoded by the kind's
// codec, sorted, deduplicated, re-encoded, written to a temporary file,
// fsynced, fully validated, and renamed over the file under the series'
// flush lock if the file did not change meanwhile). A file written by
// compaction or a merge (the kind's final schema) is left alone. Only
// sealed files are rewritten: no flush writes them, and retention (which
// may delete them) runs in the same maintenance pass. Readers need no
// lock: the rename swaps whole files, each with the same samples.

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

// minNewestRows: the newest file is first rewritten once flushes appended
// this many rows to it (about an hour of a 15 s series).
const minNewestRows = 256

// compactJob is one sealed file to compact, or a newest one.
type compactJob struct {
	kind   kindID
	ms     *memSeries
	start  int64
	path   string
	newest bool
}

// compactSealed rewrites every sealed file not known compact, one at a
// time, paced.
func (s *Store) compactSealed(res *MaintenanceResult) {
	var jobs []compactJob
	for ms := range s.reg.all() {
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
			r, err = rewriteSealed(s, histograms, j.ms, []int64{j.start}, j.newest, opts)
		default:
			r, err = rewriteSealed(s, floats, j.ms, []int64{j.start}, j.newest, opts)
		}
		s.rm.PendingCompaction.Set(float64(len(jobs) - i - 1))
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, errStale):
			continue // deleted or rewritten meanwhile: the next pass looks again
		case err != nil:
			res.Errors++
			s.rm.Compactions.WithLabelValues("error").Inc()
			s.log.Error("compaction failed; file left as it was", "path", j.path, "err", err)
			s.maint.mark(j.path) // not retried before the next start
			continue
		}
		s.maint.mark(j.path)
		if j.newest && r.Skipped {
			noteNewestRows(j.kind, j.ms, j.start, r.RowsIn) // final already: what it holds is known now
		}
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
		s.rm.Written.Add(float64(r.BytesOut))
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
	for _, st := range tr.files()[:max(len(tr.files())-1, 0)] {
		path := filePath(s.dir, k, ms.ref, st)
		if !s.maint.done(path) {
			jobs = append(jobs, compactJob{kind: k.id(), ms: ms, start: st, path: path})
		}
	}
	// The newest file, which flushes append to in small blocks (20 rows
	// every max_head_age for a 15 s series; float64, maybe uncompressed):
	// rewritten whenever flushes appended at least as many rows as the
	// last rewrite left in it (and minNewestRows), so a day's file is
	// rewritten a handful of times and its bytes stay near a sealed
	// file's; once after Open (what it holds unknown) if its series is
	// not buffering; and once when its series went idle (nothing buffered,
	// its newest sample older than twice the head age: a series that
	// stopped, or what a replay of history left).
	// A newest file that exists only in the object store is not fetched
	// back to be rewritten (tier.go).
	if n := len(tr.files()); n > 0 && !isBucketOnly(s, k.id(), ms.ref, tr.files()[n-1]) {
		path := filePath(s.dir, k, ms.ref, tr.files()[n-1])
		idleFor := 2 * s.opts.MaxHeadAge.Milliseconds()
		fmax, fknown := tr.fileMax()
		idle := !tr.busy() && fknown && fmax != noTime && s.now().UnixMilli()-fmax >= idleFor
		appended, base, known := tr.newestRows()
		var due bool
		switch {
		case known && appended >= max(base, minNewestRows):
			due = true
		case !known || idle:
			due = !tr.busy() && !s.maint.done(path)
		}
		if due {
			jobs = append(jobs, compactJob{kind: k.id(), ms: ms, start: tr.files()[n-1], path: path, newest: true})
		}
	}
	return jobs
}

// noteNewestRows records the rows of a track's newest file compaction
// found final, when what it held was unknown.
func noteNewestRows(id kindID, ms *memSeries, start int64, rows int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch id {
	case kindHistogram:
		if h := ms.hists(); h != nil {
			noteNewest(h, start, rows)
		}
	default:
		noteNewest(&ms.floats, start, rows)
	}
}

func noteNewest[S any](tr *track[S], start int64, rows int) {
	if n := len(tr.files()); n > 0 && tr.files()[n-1] == start {
		if _, _, known := tr.newestRows(); !known {
			tr.setNewestRows(rows)
		}
	}
}
