package actastore

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/acta-remote/acta-remote/durable"

	"github.com/acta-remote/acta-remote/acta"
)

// writerCache keeps at most max series-file writers open, least recently
// used first out, so the number of file descriptors stays bounded however
// many series there are. An entry in use is never evicted; the cache may
// exceed max briefly when every entry is in use.
type writerCache struct {
	root string
	max  int
	log  *slog.Logger

	mu sync.Mutex
	ll *list.List // of *writerEntry, most recent at the front
	m  map[fileKey]*list.Element
	// unsynced are files closed (or directories changed) since the last
	// syncDirty whose data may not be durable yet.
	unsynced map[string]struct{}
}

// fileKey names the newest file of one kind of one series: a series has at
// most one open writer per kind (only the newest file is appended to).
type fileKey struct {
	ref  uint64
	kind kindID
}

type writerEntry struct {
	key   fileKey
	path  string
	mu    sync.Mutex // exclusive use of w
	w     *acta.Writer
	inUse int  // guarded by writerCache.mu
	dirty bool // appended since the last sync; guarded by mu
	// broken: an append failed, so the writer may be poisoned; it is closed
	// on release and the file reopened (its tail repaired) next time.
	broken bool
	// orphan: out of the cache while syncDirty held it (the series rotated
	// to a new file); closed by the last user. Guarded by writerCache.mu.
	orphan bool
}

func newWriterCache(root string, max int, log *slog.Logger) *writerCache {
	return &writerCache{root: root, max: max, log: log, ll: list.New(), m: make(map[fileKey]*list.Element), unsynced: make(map[string]struct{})}
}

// acquire returns the open writer of path (the newest file of key),
// opening the file, or creating it with schema, as needed, locked for the
// caller's exclusive use. release it.
func (c *writerCache) acquire(key fileKey, path string, create bool, schema *acta.Schema, opts acta.WriterOptions) (*writerEntry, error) {
	c.mu.Lock()
	if el, ok := c.m[key]; ok {
		e := el.Value.(*writerEntry)
		if e.path == path {
			e.inUse++
			c.ll.MoveToFront(el)
			c.mu.Unlock()
			e.mu.Lock()
			return e, nil
		}
		// The series moved on to another file (rotation): close the old
		// one, or, when syncDirty holds it right now, let it close it.
		if e.inUse == 0 {
			c.removeLocked(el)
		} else {
			c.ll.Remove(el)
			delete(c.m, key)
			e.orphan = true
		}
	}
	evictErr := c.evictLocked(c.max - 1)
	c.mu.Unlock()
	if evictErr != nil {
		return nil, evictErr
	}

	var w *acta.Writer
	var err error
	if create {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create shard dir for series %016x: %w", key.ref, err)
		}
		w, err = acta.Create(path, schema, opts)
		if err == nil {
			// The new directory entry becomes durable at the next
			// syncDirty, before any WAL data it replaces is deleted.
			c.mu.Lock()
			c.unsynced[filepath.Dir(path)] = struct{}{}
			c.mu.Unlock()
		}
	} else {
		w, err = openWriter(path, opts)
	}
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, fmt.Errorf("open series file %s: %w", path, err)
	}
	e := &writerEntry{key: key, path: path, w: w, inUse: 1}
	e.mu.Lock()
	c.mu.Lock()
	if el, ok := c.m[key]; ok {
		// Only this series' flusher opens its file, under its flush lock,
		// so a concurrent open of the same file is a bug.
		c.mu.Unlock()
		panic(fmt.Sprintf("BUG: series %016x writer opened twice (%s)", key.ref, el.Value.(*writerEntry).path))
	}
	c.m[key] = c.ll.PushFront(e)
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
	c.closeOrphanLocked(e)
	if broken && e.inUse == 0 {
		if el, ok := c.m[e.key]; ok && el.Value == e {
			c.ll.Remove(el)
			delete(c.m, e.key)
			_ = e.w.Close() // the append already failed; its error was reported
		}
	}
	// Back under the bound once concurrent users are done. A close error
	// here concerns another series' file whose blocks are already written;
	// it must not fail this flush, so it is logged.
	if c.ll.Len() > c.max {
		if err := c.evictLocked(c.max); err != nil && c.log != nil {
			c.log.Error("close series file writer", "err", err)
		}
	}
}

// closeOrphanLocked closes an orphaned entry once nobody uses it; its
// blocks were handed to the OS, and a dirty one is synced with the rest.
func (c *writerCache) closeOrphanLocked(e *writerEntry) {
	if !e.orphan || e.inUse > 0 {
		return
	}
	e.orphan = false
	if e.dirty {
		c.unsynced[e.path] = struct{}{}
	}
	if err := e.w.Close(); err != nil && c.log != nil {
		c.log.Error("close series file writer", "path", e.path, "err", err)
	}
}

// evictLocked closes unused writers from the back until at most keep are
// open. Closing does not fsync (every block was already handed to the OS);
// a dirty file is remembered and made durable by the next syncDirty.
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
	delete(c.m, e.key)
	if e.dirty {
		c.unsynced[e.path] = struct{}{}
	}
	if err := e.w.Close(); err != nil {
		return fmt.Errorf("close series file %s: %w", e.path, err)
	}
	return nil
}

// syncDirty makes every block appended so far durable, and the directory
// entries of new files: with one syncfs where the OS has it, otherwise by
// fsyncing each dirty open writer, each closed dirty file and each changed
// directory.
func (c *writerCache) syncDirty() error {
	c.mu.Lock()
	var es []*writerEntry
	for el := c.ll.Front(); el != nil; el = el.Next() {
		e := el.Value.(*writerEntry)
		e.inUse++
		es = append(es, e)
	}
	unsynced := c.unsynced
	c.unsynced = make(map[string]struct{})
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		for _, e := range es {
			e.inUse--
			c.closeOrphanLocked(e)
		}
		c.mu.Unlock()
	}()

	// Clear the dirty flags first: an append after this point is not
	// covered and sets its flag again.
	for _, e := range es {
		e.mu.Lock()
		if e.dirty {
			e.dirty = false
			unsynced[e.path] = struct{}{}
		}
		e.mu.Unlock()
	}
	if len(unsynced) == 0 {
		return nil
	}
	restore := func() {
		c.mu.Lock()
		for p := range unsynced {
			c.unsynced[p] = struct{}{}
		}
		c.mu.Unlock()
	}
	done, err := durable.SyncFS(c.root)
	if err != nil {
		restore()
		return err
	}
	if done {
		return nil
	}
	var errs []error
	for p := range unsynced {
		if err := durable.SyncPath(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		restore()
	}
	return errors.Join(errs...)
}

// forget closes and drops the writer of path (series ref) if one is open,
// before retention deletes the file: a later file of the same name must
// not be written through a descriptor of the deleted one. The caller holds
// the series' flushMu, so no flush uses the writer; a concurrent syncDirty
// may still count it in use, which is harmless (it only reads flags).
func (c *writerCache) forget(key fileKey, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unsynced, path)
	el, ok := c.m[key]
	if !ok || el.Value.(*writerEntry).path != path {
		return
	}
	e := el.Value.(*writerEntry)
	c.ll.Remove(el)
	delete(c.m, key)
	_ = e.w.Close() // the file is being deleted; nothing in it matters
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

// appendBlock writes one block to the entry's file and hands it to the OS,
// so readers opening the file afterwards see it; syncDirty makes it
// durable (one syncfs, or an fsync per dirty file) before the WAL lets go
// of its samples.
func (e *writerEntry) appendBlock(b *acta.Batch) error {
	b.Schema = e.w.Schema()
	if err := e.w.Append(b); err != nil {
		return err
	}
	return e.w.Flush()
}

// openWriter continues an existing series file. An incomplete final frame
// (a crash, or a failed append in this process) is cut first: the store is
// the file's only writer and that frame was never counted as flushed.
func openWriter(path string, opts acta.WriterOptions) (*acta.Writer, error) {
	w, err := acta.OpenWriter(path, opts)
	if errors.Is(err, acta.ErrIncompleteTail) {
		if _, rerr := acta.RepairIncompleteTail(path); rerr != nil {
			return nil, fmt.Errorf("repair before append: %w", rerr)
		}
		w, err = acta.OpenWriter(path, opts)
	}
	return w, err
}
