package actastore

import (
	"math"
	"os"
	"runtime"

	"github.com/cespare/xxhash/v2"

	"github.com/acta-remote/acta-remote/acta"
)

// After a restart every series file is closed, and the first read of each
// opens and parses it (its frame headers, its schema): a query of a
// thousand series right after a restart spent most of its time opening
// files a running server would have had open. Prometheus opens every block
// (and maps its chunks) at start-up; the store instead opens, in the
// background once Open has returned, the newest file of every series (the
// one recent-range queries read), then the one before it, into the reader
// cache, until the cache holds warmShare of its bounds, and builds the XOR
// chunks of the float ones (xorcache.go) up to warmShare of their bound,
// the readers full or not: a streamed read of part of a file then decodes
// the one or two chunks that straddle its range instead of the file's
// whole block, and one of all of it opens nothing. Warming never evicts a
// reader or chunks; the rest of each bound is for the files queries read
// themselves, and once it is full the admission rule (readers_admit.go)
// decides as for any other file. One goroutine, one file at a time, giving
// way to other goroutines after each: at most one core for a few seconds
// (10,000 files of 1,440 samples, chunks included, about 2 s here),
// stopped by Close.

// warmShare is the part of the reader cache's bound warming fills.
const warmShare = 0.9

// warmReaders opens the two newest float and histogram files of each
// series into the reader cache (Options.WarmReaders), and builds the
// float ones' XOR chunks, each while its bound leaves room: once the
// readers are full (more files than readers: two day files a series),
// float files are still opened, one at a time and closed again, for
// their chunks. Errors are left to the reads that meet them: a file
// removed meanwhile is simply skipped.
func (s *Store) warmReaders() {
	defer s.bg.Done()
	c := s.readers
	if c == nil || c.maxOpen <= 0 {
		return
	}
	type warmFile struct {
		path  string
		float bool
	}
	var paths []warmFile
	live := s.reg.live()
	// Two passes: every series' newest file, then the one before it (a
	// day file begun an hour ago leaves most of a recent range's samples
	// in the one before).
	for back := range warmFilesBack {
		for _, ms := range live {
			paths = paths[:0]
			ms.mu.Lock()
			if n := len(ms.floats.files()); n > back && !ms.removed {
				paths = append(paths, warmFile{filePath(s.dir, floats, ms.ref, ms.floats.files()[n-1-back]), true})
			}
			if h := ms.hists(); h != nil && len(h.files()) > back && !ms.removed {
				paths = append(paths, warmFile{filePath(s.dir, histograms, ms.ref, h.files()[len(h.files())-1-back]), false})
			}
			ms.mu.Unlock()
			for _, p := range paths {
				select {
				case <-s.stop:
					return
				default:
				}
				readers, chunks := c.warmRoom()
				if !readers && !chunks {
					return
				}
				s.warmFile(p.path, readers, p.float && chunks)
				// Let a query that became runnable meanwhile have the
				// core: otherwise it waits for the scheduler's 10 ms
				// preemption when every core is busy.
				runtime.Gosched()
			}
		}
	}
}

// warmFilesBack is how many of each series' newest files warming opens.
const warmFilesBack = 2

// warmFile opens one file into the reader cache (intoCache), and builds
// and keeps its XOR chunks (chunks: a float file, and their bound leaves
// room) from that reader or, out of the cache, one of its own.
func (s *Store) warmFile(path string, intoCache, chunks bool) {
	c := s.readers
	// Only local files: one whose copy lives in the object store alone is
	// fetched when a query wants it, not now.
	if _, err := os.Stat(path); err != nil {
		return
	}
	h := xxhash.Sum64String(path)
	c.mu.Lock()
	_, kept := c.kept[path]
	gen, epoch := c.gens[h%uint64(len(c.gens))], c.freq.halvings
	c.mu.Unlock()
	chunks = chunks && !kept
	var r *acta.Reader
	switch {
	case intoCache:
		// Not counted as a read: admission weighs what queries read.
		cr, done, err := c.acquire(path, false)
		if err != nil {
			return
		}
		defer done()
		s.m.warmedReaders.Inc()
		if cr.remote {
			return
		}
		r = cr.r
	case chunks:
		var err error
		if r, err = acta.Open(path); err != nil {
			return
		}
		defer r.Close()
	default:
		return
	}
	if !chunks || !covers(r, math.MinInt64, math.MaxInt64) {
		return
	}
	fc, err := buildFileChunks(r, false, nil)
	if err != nil {
		return // a bad file is the reads' to report
	}
	c.chunkBuilds.Add(1)
	c.mu.Lock()
	c.keepLocked(path, h, gen, 0, epoch, fc)
	c.mu.Unlock()
}

// warmRoom reports whether warming may open more readers into the cache
// and build more kept XOR chunks: each up to warmShare of its bounds, the
// rest left to reads.
func (c *readerCache) warmRoom() (readers, chunks bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	readers = c.ll.Len() < int(warmShare*float64(c.maxOpen)) &&
		(c.maxBytes <= 0 || float64(c.bytes) < warmShare*float64(c.maxBytes))
	chunks = c.maxChunkBytes > 0 && float64(c.chunkBytes) < warmShare*float64(c.maxChunkBytes)
	return readers, chunks
}
