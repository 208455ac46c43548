package actastore

import (
	"math"
	"os"
)

// After a restart every series file is closed, and the first read of each
// opens and parses it (its frame headers, its schema): a query of a
// thousand series right after a restart spent most of its time opening
// files a running server would have had open. Prometheus opens every block
// (and maps its chunks) at start-up; the store instead opens, in the
// background once Open has returned, the newest file of every series (the
// one recent-range queries read), then the one before it, into the reader
// cache, until the cache holds warmShare of its bounds, and builds the XOR chunks of the float
// ones (xorcache.go) up to warmShare of their bound: a streamed read of
// part of a file then decodes the one or two chunks that straddle its
// range instead of the file's whole block. Warming never evicts a reader;
// the rest of the cache is for the files queries open themselves, and once
// it is full the cache's admission rule (readers.go) decides as for any
// other reader. One goroutine, one file at a time: at most one core for a
// few seconds (10,000 files of 1,440 samples, chunks included, about 2 s
// here), stopped by Close.

// warmShare is the part of the reader cache's bound warming fills.
const warmShare = 0.9

// warmReaders opens the two newest float and histogram files of each
// series into the reader cache (Options.WarmReaders). Errors are left to the
// reads that meet them: a file removed meanwhile is simply skipped.
func (s *Store) warmReaders() {
	defer s.bg.Done()
	c := s.readers
	if c == nil || c.maxOpen <= 0 {
		return
	}
	limit := int(float64(c.maxOpen) * warmShare)
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
			if n := len(ms.floats.files); n > back && !ms.removed {
				paths = append(paths, warmFile{filePath(s.dir, floats, ms.ref, ms.floats.files[n-1-back]), true})
			}
			if h := ms.hists; h != nil && len(h.files) > back && !ms.removed {
				paths = append(paths, warmFile{filePath(s.dir, histograms, ms.ref, h.files[len(h.files)-1-back]), false})
			}
			ms.mu.Unlock()
			for _, p := range paths {
				select {
				case <-s.stop:
					return
				default:
				}
				if n, bytes := c.stats(); n >= limit || (c.maxBytes > 0 && float64(bytes) >= warmShare*float64(c.maxBytes)) {
					return
				}
				s.warmFile(p.path, p.float)
			}
		}
	}
}

// warmFilesBack is how many of each series' newest files warming opens.
const warmFilesBack = 2

// warmFile opens one file into the reader cache and builds its chunks
// when it is a float file and their bound leaves room.
func (s *Store) warmFile(path string, float bool) {
	c := s.readers
	// Only local files: one whose copy lives in the object store alone is
	// fetched when a query wants it, not now.
	if _, err := os.Stat(path); err != nil {
		return
	}
	// Not counted as a read: admission weighs what queries read.
	cr, done, err := c.acquire(path, false)
	if err != nil {
		return
	}
	if float && c.warmChunksRoom() && !cr.solo && !cr.remote && covers(cr.r, math.MinInt64, math.MaxInt64) {
		_, _ = c.buildKept(cr, nil) // a bad file is the reads' to report
	}
	done()
	s.m.warmedReaders.Inc()
}

// warmChunksRoom reports whether warming may build more kept XOR chunks:
// up to warmShare of their bound, the rest left to reads.
func (c *readerCache) warmChunksRoom() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxChunkBytes > 0 && float64(c.chunkBytes) < warmShare*float64(c.maxChunkBytes)
}
