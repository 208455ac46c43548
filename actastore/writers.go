package actastore

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// writerCache keeps at most max series-file writers open, least recently
// used first out, so the number of file descriptors stays bounded however
// many series there are. An entry in use is never evicted; the cache may
// exceed max briefly when every entry is in use.
type writerCache struct {
	root string
	max  int
	fo   fileOptions

	mu sync.Mutex
	ll *list.List // of *writerEntry, most recent at the front
	m  map[uint64]*list.Element
}

type writerEntry struct {
	ref   uint64
	path  string
	mu    sync.Mutex // exclusive use of w
	w     fileWriter
	inUse int  // guarded by writerCache.mu
	dirty bool // appended since the last sync; guarded by mu
	// broken: an append failed, so the writer may be poisoned; it is closed
	// on release and the file reopened (its tail repaired) next time.
	broken bool
}

func newWriterCache(root string, max int, fo fileOptions) *writerCache {
	return &writerCache{root: root, max: max, fo: fo, ll: list.New(), m: make(map[uint64]*list.Element)}
}

// acquire returns the open writer of path (series ref), opening or creating
// the file as needed, locked for the caller's exclusive use. release it.
func (c *writerCache) acquire(ref uint64, path string, create bool) (*writerEntry, error) {
	c.mu.Lock()
	if el, ok := c.m[ref]; ok {
		e := el.Value.(*writerEntry)
		if e.path == path {
			e.inUse++
			c.ll.MoveToFront(el)
			c.mu.Unlock()
			e.mu.Lock()
			return e, nil
		}
		// The series moved on to another file (rotation): close the old one.
		if e.inUse == 0 {
			c.removeLocked(el)
		}
	}
	evictErr := c.evictLocked(c.max - 1)
	c.mu.Unlock()
	if evictErr != nil {
		return nil, evictErr
	}

	var w fileWriter
	var err error
	if create {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create shard dir for series %016x: %w", ref, err)
		}
		w, err = createSeriesFile(path, c.fo)
		if err == nil {
			// Make the new name durable with the directory entry.
			err = syncDir(filepath.Dir(path))
		}
	} else {
		w, err = openSeriesFileWriter(path, c.fo)
	}
	if err != nil {
		if w != nil {
			w.close()
		}
		return nil, fmt.Errorf("open series file %s: %w", path, err)
	}
	e := &writerEntry{ref: ref, path: path, w: w, inUse: 1}
	e.mu.Lock()
	c.mu.Lock()
	if el, ok := c.m[ref]; ok {
		// Only this series' flusher opens its file, under its flushMu, so a
		// concurrent open of the same ref is a bug.
		c.mu.Unlock()
		panic(fmt.Sprintf("BUG: series %016x writer opened twice (%s)", ref, el.Value.(*writerEntry).path))
	}
	c.m[ref] = c.ll.PushFront(e)
	c.mu.Unlock()
	return e, nil
}

// release gives back an acquired entry.
func (c *writerCache) release(e *writerEntry) {
	broken := e.broken
	e.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.inUse--
	if broken && e.inUse == 0 {
		if el, ok := c.m[e.ref]; ok && el.Value == e {
			c.ll.Remove(el)
			delete(c.m, e.ref)
			_ = e.w.close() // the append already failed; its error was reported
		}
	}
}

// evictLocked closes unused writers from the back until at most keep are
// open. Closing syncs, so evicted data is durable.
func (c *writerCache) evictLocked(keep int) error {
	var errs []error
	for el := c.ll.Back(); el != nil && c.ll.Len() > keep; {
		prev := el.Prev()
		if el.Value.(*writerEntry).inUse == 0 {
			if err := c.removeLocked(el); err != nil {
				errs = append(errs, err)
			}
		}
		el = prev
	}
	return errors.Join(errs...)
}

func (c *writerCache) removeLocked(el *list.Element) error {
	e := el.Value.(*writerEntry)
	c.ll.Remove(el)
	delete(c.m, e.ref)
	if err := e.w.close(); err != nil {
		return fmt.Errorf("close series file %s: %w", e.path, err)
	}
	return nil
}

// syncDirty fsyncs every open writer with unsynced appends. Writers closed
// by eviction were synced when they closed.
func (c *writerCache) syncDirty() error {
	c.mu.Lock()
	var es []*writerEntry
	for el := c.ll.Front(); el != nil; el = el.Next() {
		e := el.Value.(*writerEntry)
		e.inUse++
		es = append(es, e)
	}
	c.mu.Unlock()
	var errs []error
	for _, e := range es {
		e.mu.Lock()
		if e.dirty {
			if err := e.w.sync(); err != nil {
				errs = append(errs, fmt.Errorf("sync series file %s: %w", e.path, err))
			} else {
				e.dirty = false
			}
		}
		e.mu.Unlock()
	}
	c.mu.Lock()
	for _, e := range es {
		e.inUse--
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// open is the number of open writers.
func (c *writerCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// closeAll closes every writer (syncing it).
func (c *writerCache) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evictLocked(0)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
