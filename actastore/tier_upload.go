package actastore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/durable"
)

// The upload cycle: what tier.go describes, in this order — abort
// multipart uploads a crash left (once), read the retention horizon and
// drop expired files, plan (files to upload, local copies to delete,
// files gone from their tracks), upload and verify, record in the
// manifest, publish an index object, delete local copies that are
// uploaded and published, delete objects the published index no longer
// names, and (the owner) run bucket retention. A failed step leaves its
// work for the next cycle; a cycle with a bucket error waits a doubling
// backoff before the next one.

// TierResult reports one upload cycle.
type TierResult struct {
	Uploaded      int   // files uploaded and verified
	UploadedBytes int64 //
	Pending       int   // files waiting for upload after the cycle
	Published     bool  // an index object was published
	LocalDeleted  int   // local copies deleted
	Removed       int   // files that left the index
	Expired       int   // files dropped for the bucket retention horizon
	Errors        int
}

// TierCycle runs one upload cycle now (tests, and operators through
// tools); ErrClosed after Close, an error when the store has no tier.
func (s *Store) TierCycle() (TierResult, error) {
	if s.closed.Load() {
		return TierResult{}, ErrClosed
	}
	if s.tier == nil {
		return TierResult{}, errors.New("actastore: no object store tier configured")
	}
	return s.tier.cycle(context.Background())
}

func (s *Store) tierLoop() {
	defer s.bg.Done()
	t := s.tier
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// The first cycle comes soon: a restart publishes a full index and
	// resumes uploads without waiting a whole interval.
	timer := time.NewTimer(min(t.o.UploadInterval, 5*time.Second))
	defer timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-timer.C:
		}
		if _, err := t.cycle(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("object store upload cycle", "err", err, "retry_in", t.wait().Round(time.Millisecond))
		}
		timer.Reset(t.wait())
	}
}

// wait is the time to the next cycle: the interval, or the backoff after
// failures (doubling from MinBackoff to MaxBackoff, with jitter).
func (t *tier) wait() time.Duration {
	t.mu.Lock()
	n := t.failures
	t.mu.Unlock()
	if n == 0 {
		return t.o.UploadInterval
	}
	d := t.o.MinBackoff << min(n-1, 20)
	if d > t.o.MaxBackoff || d <= 0 {
		d = t.o.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

func (t *tier) cycle(ctx context.Context) (TierResult, error) {
	t.cycleLock.Lock()
	defer t.cycleLock.Unlock()
	var res TierResult
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, err)
			res.Errors++
		}
	}
	began := time.Now()
	root := t.o.Layout.InstanceRoot(t.o.Instance)
	if !t.aborted {
		n, err := t.c.AbortUploads(ctx, root)
		fail(err)
		if err == nil {
			t.aborted = true
			if n > 0 {
				t.s.log.Info("aborted multipart uploads left by an interrupted run", "count", n, "prefix", t.c.URL(root))
			}
		}
	}
	if h, err := t.c.ReadHorizon(ctx, t.o.Layout); err != nil {
		fail(err)
	} else {
		t.mu.Lock()
		t.horizon = h
		t.mu.Unlock()
		res.Expired = t.dropExpired(h)
	}
	p := t.plan()
	res.Removed = t.recordRemovals(p.removed)
	up, err := t.uploadAll(ctx, p.uploads)
	fail(err)
	res.Uploaded = len(up)
	for _, f := range up {
		res.UploadedBytes += f.Size
	}
	res.Pending = p.pendingFiles - len(up)
	pub, err := t.publish(ctx)
	fail(err)
	res.Published = pub
	res.LocalDeleted = t.dropLocal(t.planDrops())
	fail(t.deleteDoomed(ctx))
	fail(t.gcIndex(ctx))
	fail(t.sweepOrphans(ctx))
	n, err := t.runRetention(ctx)
	fail(err)
	res.Expired += n
	t.mu.Lock()
	if len(errs) > 0 {
		t.failures++
	} else {
		t.failures = 0
	}
	t.m.failures.Set(float64(t.failures))
	t.mu.Unlock()
	t.m.cycles.Inc()
	t.m.lastCycle.SetToCurrentTime()
	t.m.cycleSeconds.Observe(time.Since(began).Seconds())
	return res, errors.Join(errs...)
}

// uploadJob is one file to upload.
type uploadJob struct {
	id   bucket.FileID
	ms   *memSeries
	path string
}

// dropJob is one local copy to delete.
type dropJob struct {
	id  bucket.FileID
	crc uint32
	ms  *memSeries
}

type tierPlan struct {
	uploads      []uploadJob
	removed      []bucket.File
	pendingFiles int
}

// plan walks every track: final files not uploaded (or changed since)
// are uploaded, uploaded and published local copies past the local
// retention are deleted, and uploaded files no track holds any more leave
// the index. It sets the lag metrics.
func (t *tier) plan() tierPlan {
	s := t.s
	now := s.now()
	var p tierPlan
	seen := make(map[bucket.FileID]bool)
	oldest := int64(noTime)
	var pendingBytes int64
	for ms := range s.reg.all() {
		planTrack(t, floats, ms, now, &p, seen, &oldest, &pendingBytes)
		planTrack(t, histograms, ms, now, &p, seen, &oldest, &pendingBytes)
	}
	t.mu.Lock()
	for id, f := range t.files {
		if !seen[id] {
			p.removed = append(p.removed, f.File)
		}
	}
	only := 0
	for _, f := range t.files {
		if !f.local {
			only++
		}
	}
	t.mu.Unlock()
	lag := 0.0
	if oldest != noTime {
		lag = max(0, float64(now.UnixMilli()-oldest)/1e3)
	}
	t.m.lag.Set(lag)
	t.m.pendingFiles.Set(float64(p.pendingFiles))
	t.m.pendingBytes.Set(float64(pendingBytes))
	t.m.bucketOnly.Set(float64(only))
	return p
}

func planTrack[S any](t *tier, k kind[S], ms *memSeries, now time.Time, p *tierPlan, seen map[bucket.FileID]bool, oldest, pendingBytes *int64) {
	s := t.s
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil || len(tr.files()) == 0 {
		ms.mu.Unlock()
		return
	}
	starts := slices.Clone(tr.files())
	busy := tr.busy()
	maxT, maxKnown := tr.fileMax()
	ms.mu.Unlock()
	pol := s.opts.Rotation
	// A newest file is final once its period is over and nothing can be
	// flushed into it any more (a late sample may still come; it makes
	// the file change, and it is uploaded again).
	grace := s.opts.MaxHeadAge*time.Duration(max(floats.headAgeFactor(), histograms.headAgeFactor())) + time.Minute
	for i, st := range starts {
		id := bucket.FileID{Kind: bucketKind(k.id()), Ref: ms.ref, Start: st}
		seen[id] = true
		newest := i == len(starts)-1
		path := filePath(s.dir, k, ms.ref, st)
		var final bool
		var end int64 // when it stopped taking data (ms), for the lag
		if newest {
			if pol.Period <= 0 || busy {
				continue
			}
			last := st
			if maxKnown && maxT != noTime {
				last = max(last, maxT)
			}
			end = pol.PeriodStart(last) + pol.Period.Milliseconds()
			if now.UnixMilli() < end+grace.Milliseconds() {
				continue
			}
			final = true
		} else {
			end = starts[i+1]
			final = s.opts.Compaction.Disabled || s.maint.done(path)
		}
		t.mu.Lock()
		tf := t.files[id]
		var cp tierFile
		if tf != nil {
			cp = *tf
		}
		t.mu.Unlock()
		if tf != nil && !cp.local {
			continue // in the bucket only
		}
		fi, err := os.Stat(path)
		if err != nil {
			if tf != nil && errors.Is(err, os.ErrNotExist) {
				t.setLocal(id, cp.CRC, false)
			}
			continue
		}
		if tf == nil || fi.ModTime().UnixNano() != cp.ModTime { // new, or changed since its upload
			p.pendingFiles++
			*pendingBytes += fi.Size()
			if *oldest == noTime || end < *oldest {
				*oldest = end
			}
			if final {
				p.uploads = append(p.uploads, uploadJob{id: id, ms: ms, path: path})
			}
		}
	}
}

// planDrops lists the local copies to delete: files uploaded, published
// and past the local retention. (After publish: a file uploaded by this
// cycle goes in this cycle.)
func (t *tier) planDrops() []dropJob {
	cut := t.s.now().Add(-t.o.LocalRetention).UnixMilli()
	t.mu.Lock()
	var jobs []dropJob
	for id, f := range t.files {
		if f.local && f.published && f.MaxT < cut {
			jobs = append(jobs, dropJob{id: id, crc: f.CRC})
		}
	}
	t.mu.Unlock()
	for i := range jobs {
		jobs[i].ms = t.s.reg.get(jobs[i].id.Ref)
	}
	return jobs
}

// recordRemovals makes the removal of files no track holds durable and
// queues it for the next index object. Their objects are this writer's to
// delete once that index is out (a file rewritten away, merged, deleted).
func (t *tier) recordRemovals(files []bucket.File) int {
	if len(files) == 0 {
		return 0
	}
	recs := make([][]byte, len(files))
	for i, f := range files {
		recs[i] = bucket.AppendRemove(nil, f.FileID, f.CRC)
	}
	if err := t.man.append(recs); err != nil {
		t.s.log.Error("cannot record removed files in the tier manifest; retried next cycle", "err", err)
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, f := range files {
		if cur := t.files[f.FileID]; cur != nil && cur.CRC == f.CRC {
			delete(t.files, f.FileID)
		}
		t.pending = append(t.pending, pendingRec{rec: recs[i], id: f.FileID, crc: f.CRC, doomKey: t.key(f), doomSize: f.Size})
	}
	return len(files)
}

// uploadChunk is how many uploads are recorded in the manifest at once
// (one sync): what a crash makes the next run upload again, at most.
const uploadChunk = 64

// uploadAll uploads the jobs, Concurrency at a time, recording the
// verified ones in the manifest and in memory every uploadChunk.
func (t *tier) uploadAll(ctx context.Context, jobs []uploadJob) ([]bucket.File, error) {
	var done []bucket.File
	var errs []error
	for len(jobs) > 0 && ctx.Err() == nil {
		n := min(len(jobs), uploadChunk)
		d, err := t.uploadBatch(ctx, jobs[:n])
		done = append(done, d...)
		if err != nil {
			errs = append(errs, err)
		}
		jobs = jobs[n:]
	}
	return done, errors.Join(errs...)
}

func (t *tier) uploadBatch(ctx context.Context, jobs []uploadJob) ([]bucket.File, error) {
	type result struct {
		f   bucket.File
		err error
	}
	results := make([]result, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(t.o.Concurrency, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f, err := t.uploadOne(ctx, jobs[i])
				results[i] = result{f, err}
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			results[i].err = ctx.Err()
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var done []bucket.File
	var recs [][]byte
	var errs []error
	for i, r := range results {
		switch {
		case errors.Is(r.err, errNothingToUpload):
		case r.err != nil:
			t.m.uploads.WithLabelValues("error").Inc()
			errs = append(errs, fmt.Errorf("upload %s: %w", jobs[i].path, r.err))
		default:
			done = append(done, r.f)
			recs = append(recs, bucket.AppendFile(nil, r.f))
		}
	}
	if err := t.man.append(recs); err != nil {
		// Uploaded but not recorded: the next cycle uploads them again (to
		// the same keys: the names carry the content's CRC).
		return nil, errors.Join(append(errs, err)...)
	}
	t.mu.Lock()
	for i, f := range done {
		old := t.files[f.FileID]
		pr := pendingRec{rec: recs[i], id: f.FileID, crc: f.CRC, file: true}
		if old != nil && old.CRC != f.CRC {
			pr.doomKey, pr.doomSize = t.key(old.File), old.Size // replaced by the new object
		}
		t.files[f.FileID] = &tierFile{File: f, local: true}
		t.pending = append(t.pending, pr)
	}
	t.mu.Unlock()
	for _, f := range done {
		t.m.uploads.WithLabelValues("ok").Inc()
		t.m.uploadedBytes.Add(float64(f.Size))
	}
	return done, errors.Join(errs...)
}

var errNothingToUpload = errors.New("no committed block")

// uploadOne uploads one file and verifies it. The file is read through
// one descriptor: a rename over the path meanwhile (compaction, a
// rewrite) leaves this upload a consistent copy of the old file, and the
// change is noticed by the next cycle. Only committed frames are sent.
func (t *tier) uploadOne(ctx context.Context, j uploadJob) (bucket.File, error) {
	began := time.Now()
	f, err := os.Open(j.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return bucket.File{}, errNothingToUpload // deleted meanwhile
		}
		return bucket.File{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return bucket.File{}, err
	}
	r, err := acta.OpenReaderAt(j.path, f, fi.Size(), 0, acta.Limits{})
	if err != nil {
		return bucket.File{}, err
	}
	out := bucket.File{FileID: j.id, Size: r.CommittedSize(), ModTime: fi.ModTime().UnixNano()}
	have := false
	for _, b := range r.Blocks() {
		if !have {
			out.MinT, out.MaxT, have = b.Min, b.Max, true
		}
		out.MinT, out.MaxT = min(out.MinT, b.Min), max(out.MaxT, b.Max)
	}
	if !have {
		return bucket.File{}, errNothingToUpload
	}
	crc, err := crcOf(io.NewSectionReader(f, 0, out.Size))
	if err != nil {
		return bucket.File{}, err
	}
	out.CRC = crc
	key := t.key(out)
	if err := t.c.Put(ctx, key, f, out.Size); err != nil {
		return bucket.File{}, err
	}
	if err := t.c.Verify(ctx, key, out.Size, out.CRC); err != nil {
		return bucket.File{}, err
	}
	if err := t.cache.Put(key, out.Size, out.CRC, r.Head(), r.Blocks()); err != nil {
		t.s.log.Warn("cannot cache a block index", "key", key, "err", err)
	}
	t.m.uploadSeconds.Observe(time.Since(began).Seconds())
	return out, nil
}

func crcOf(r io.Reader) (uint32, error) {
	buf := make([]byte, 256<<10)
	var c uint32
	for {
		n, err := r.Read(buf)
		c = bucket.UpdateCRC32C(c, buf[:n])
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// publish puts the next index object: a full one first after Open (it
// supersedes whatever an earlier run published), and whenever the deltas
// since the last full one add up to a quarter of it; a delta otherwise,
// when anything is pending. A failed attempt is retried with the same
// bytes under the same sequence number.
func (t *tier) publish(ctx context.Context) (bool, error) {
	t.mu.Lock()
	pub := t.pub
	blocked := t.blocked
	t.mu.Unlock()
	if blocked != "" {
		return false, errors.New(blocked)
	}
	if pub == nil {
		t.mu.Lock()
		seq := t.seq
		idle := len(t.pending) == 0
		t.mu.Unlock()
		if seq == 0 {
			entries, err := t.c.ListIndex(ctx, t.o.Layout, t.o.Instance)
			if err != nil {
				return false, err
			}
			var last uint64
			for _, e := range entries {
				last = max(last, e.Seq)
			}
			if t.fresh && last > 0 {
				msg := fmt.Sprintf("tier: %s already holds index objects of instance %q, and this data directory has no manifest of them: "+
					"publishing would hide them; give this writer another storage.object_store.instance_id", t.c.URL(t.o.Layout.IndexPrefix(t.o.Instance)), t.o.Instance)
				t.mu.Lock()
				t.blocked = msg
				t.mu.Unlock()
				t.m.blocked.Set(1)
				return false, errors.New(msg)
			}
			t.mu.Lock()
			t.seq = last
			t.mu.Unlock()
			seq = last
			idle = false // the first publication of a run is a full one
		} else if idle {
			return false, nil
		}
		pub = t.buildPublication(seq + 1)
		t.mu.Lock()
		t.pub = pub
		t.mu.Unlock()
	}
	err := t.c.PutBytes(ctx, pub.key, pub.bytes)
	typ := "delta"
	if pub.full {
		typ = "full"
	}
	if err != nil {
		t.m.publications.WithLabelValues(typ, "error").Inc()
		return false, fmt.Errorf("publish index %d: %w", pub.seq, err)
	}
	t.m.publications.WithLabelValues(typ, "ok").Inc()
	t.m.lastPublish.SetToCurrentTime()
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq, t.pub = pub.seq, nil
	for _, p := range pub.files {
		if f := t.files[p.id]; f != nil && f.CRC == p.crc {
			f.published = true
		}
	}
	for _, pr := range t.pending[:pub.covers] {
		if pr.doomKey != "" {
			t.doomed = append(t.doomed, doomedObject{key: pr.doomKey, after: now.Add(t.o.DeleteDelay)})
		}
	}
	t.pending = slices.Delete(t.pending, 0, pub.covers)
	if pub.full {
		t.lastFull, t.lastFullAt, t.deltas, t.deltaRecs = pub.seq, now, 0, 0
	} else {
		t.deltas++
		t.deltaRecs += pub.covers
	}
	t.m.unpublished.Set(float64(len(t.pending)))
	return true, nil
}

// buildPublication encodes index object seq from the pending records (a
// delta, with the series records of the files it names) or from every
// uploaded file (a full one). Labels come from the registry: a series
// the store no longer has is leaving the index anyway.
func (t *tier) buildPublication(seq uint64) *publication {
	t.mu.Lock()
	full := t.lastFull == 0 || t.deltas >= 100 || t.deltaRecs >= max(10000, len(t.files)/4)
	pub := &publication{seq: seq, full: full, key: t.o.Layout.IndexKey(t.o.Instance, seq, full), covers: len(t.pending)}
	var files []bucket.File
	var removes [][]byte
	if full {
		for _, f := range t.files {
			files = append(files, f.File)
		}
	} else {
		for _, pr := range t.pending {
			if pr.file {
				if f := t.files[pr.id]; f != nil && f.CRC == pr.crc {
					files = append(files, f.File)
				}
			} else {
				removes = append(removes, pr.rec)
			}
		}
	}
	t.mu.Unlock()
	st := bucket.NewState()
	for _, f := range files {
		ms := t.s.reg.get(f.Ref)
		if ms == nil {
			continue
		}
		st.Series[f.Ref] = t.s.reg.labels(nil, ms)
		f.ModTime = 0
		st.Files[f.FileID] = f
		pub.files = append(pub.files, publishedID{id: f.FileID, crc: f.CRC})
	}
	recs := st.Records()
	if !full {
		recs = append(removes, recs...) // a removal then a re-upload of the same id applies in that order
	}
	pub.bytes = bucket.EncodeIndex(seq, full, recs)
	return pub
}

// dropLocal deletes local copies that are uploaded, published and past
// the local retention, unless they changed since (checked under the
// series' flush lock, which flushes and rewrites hold). The files stay in
// their tracks: reads go to the bucket from now on.
func (t *tier) dropLocal(jobs []dropJob) int {
	s := t.s
	dirs := make(map[string]bool)
	n := 0
	for _, j := range jobs {
		t.mu.Lock()
		f := t.files[j.id]
		ok := f != nil && f.CRC == j.crc && f.published && f.local
		var file bucket.File
		if ok {
			file = f.File
		}
		t.mu.Unlock()
		if !ok || j.ms == nil {
			continue
		}
		var freed int64
		var err error
		var gone bool
		switch storeKind(j.id.Kind) {
		case kindHistogram:
			freed, gone, err = dropLocalCopy(t, histograms, j.ms, file)
		default:
			freed, gone, err = dropLocalCopy(t, floats, j.ms, file)
		}
		if err != nil {
			s.log.Warn("cannot delete the local copy of an uploaded file", "err", err)
			continue
		}
		if gone {
			n++
			dirs[filepath.Dir(t.path(j.id))] = true
			t.m.localDeleted.Inc()
			t.m.localDeletedBytes.Add(float64(freed))
		}
	}
	for d := range dirs {
		if err := durable.SyncDir(d); err != nil {
			s.log.Warn("cannot sync a series directory", "dir", d, "err", err)
		}
	}
	return n
}

func dropLocalCopy[S any](t *tier, k kind[S], ms *memSeries, f bucket.File) (int64, bool, error) {
	s := t.s
	mu := s.flushLock(ms)
	mu.Lock()
	defer mu.Unlock()
	ms.mu.Lock()
	tr := k.track(ms, false)
	held := tr != nil && slices.Contains(tr.files(), f.Start)
	ms.mu.Unlock()
	if !held {
		return 0, false, nil
	}
	path := t.path(f.FileID)
	fi, err := os.Stat(path)
	if err != nil || fi.ModTime().UnixNano() != f.ModTime {
		return 0, false, nil // changed since its upload: uploaded again first
	}
	freed, err := s.removeFile(k, ms, path)
	if err != nil {
		return 0, false, err
	}
	s.maint.mark(path) // nothing left to compact
	t.setLocal(f.FileID, f.CRC, false)
	return freed, true, nil
}

// tierRetentionDrop is local retention by size (rotation.retention.
// max_size) with a tier: the local copy of an uploaded and published file
// goes, the file stays in its track; a file not yet uploaded stays.
func tierRetentionDrop[S any](s *Store, k kind[S], ms *memSeries, start int64) (int64, bool, error) {
	t := s.tier
	id := bucket.FileID{Kind: bucketKind(k.id()), Ref: ms.ref, Start: start}
	t.mu.Lock()
	f := t.files[id]
	ok := f != nil && f.published && f.local
	var file bucket.File
	if ok {
		file = f.File
	}
	t.mu.Unlock()
	if !ok {
		t.m.retentionBlocked.Inc()
		return 0, false, nil
	}
	freed, gone, err := dropLocalCopy(t, k, ms, file)
	if gone {
		t.m.localDeleted.Inc()
		t.m.localDeletedBytes.Add(float64(freed))
	}
	return freed, gone, err
}

// dropExpired drops from their tracks the uploaded files past the bucket
// retention horizon and removes series left without files. Their objects
// go a delete delay after an index without them is published, as other
// removed files' do: once a writer drops a file its index no longer names
// it, so the retention owner, which deletes what indexes name, would not
// see it. It returns how many went.
func (t *tier) dropExpired(h bucket.Horizon) int {
	if h.MinTime == 0 {
		return 0
	}
	s := t.s
	t.mu.Lock()
	var expired []bucket.File
	for _, f := range t.files {
		if h.Expired(f.MaxT) {
			expired = append(expired, f.File)
		}
	}
	t.mu.Unlock()
	var touched []*memSeries
	var gone []bucket.File
	for _, f := range expired {
		ms := s.reg.get(f.Ref)
		if ms == nil {
			gone = append(gone, f)
			continue
		}
		var ok bool
		switch storeKind(f.Kind) {
		case kindHistogram:
			ok = dropExpiredFile(t, histograms, ms, f)
		default:
			ok = dropExpiredFile(t, floats, ms, f)
		}
		if ok {
			gone = append(gone, f)
			touched = append(touched, ms)
		}
	}
	if len(gone) == 0 {
		return 0
	}
	recs := make([][]byte, len(gone))
	for i, f := range gone {
		recs[i] = bucket.AppendRemove(nil, f.FileID, f.CRC)
	}
	if err := t.man.append(recs); err != nil {
		s.log.Error("cannot record expired files in the tier manifest", "err", err)
	}
	t.mu.Lock()
	for i, f := range gone {
		if cur := t.files[f.FileID]; cur != nil && cur.CRC == f.CRC {
			delete(t.files, f.FileID)
		}
		t.pending = append(t.pending, pendingRec{rec: recs[i], id: f.FileID, crc: f.CRC, doomKey: t.key(f), doomSize: f.Size})
	}
	t.mu.Unlock()
	if _, err := s.removeSeries(touched); err != nil {
		s.log.Warn("cannot remove series left without files by bucket retention", "err", err)
	}
	t.m.expired.Add(float64(len(gone)))
	return len(gone)
}

func dropExpiredFile[S any](t *tier, k kind[S], ms *memSeries, f bucket.File) bool {
	s := t.s
	mu := s.flushLock(ms)
	mu.Lock()
	defer mu.Unlock()
	ms.mu.Lock()
	tr := k.track(ms, false)
	if tr == nil || !slices.Contains(tr.files(), f.Start) {
		ms.mu.Unlock()
		return true // gone already
	}
	if tr.files()[len(tr.files())-1] == f.Start && tr.busy() {
		ms.mu.Unlock()
		return false // samples are being flushed into it
	}
	ms.mu.Unlock()
	path := t.path(f.FileID)
	if _, err := s.removeFile(k, ms, path); err != nil {
		s.log.Warn("cannot delete the local copy of an expired file", "path", path, "err", err)
		return false
	}
	ms.mu.Lock()
	dropFile(tr, f.Start)
	ms.mu.Unlock()
	return true
}

// deleteDoomed deletes the objects no published index names, once
// DeleteDelay has passed.
func (t *tier) deleteDoomed(ctx context.Context) error {
	now := time.Now()
	t.mu.Lock()
	var due []doomedObject
	keep := t.doomed[:0]
	for _, d := range t.doomed {
		if now.After(d.after) {
			due = append(due, d)
		} else {
			keep = append(keep, d)
		}
	}
	t.doomed = keep
	t.mu.Unlock()
	var errs []error
	for _, d := range due {
		if err := t.c.Delete(ctx, d.key); err != nil {
			errs = append(errs, err)
			t.mu.Lock()
			t.doomed = append(t.doomed, d)
			t.mu.Unlock()
			continue
		}
		t.cache.Forget(d.key)
		t.m.objectsDeleted.Inc()
	}
	return errors.Join(errs...)
}

// gcIndex deletes the index objects before the newest full one, once it
// is DeleteDelay old (a reader listing before it may still read them).
func (t *tier) gcIndex(ctx context.Context) error {
	t.mu.Lock()
	full, at := t.lastFull, t.lastFullAt
	due := full > t.gcFull && time.Since(at) > t.o.DeleteDelay
	t.mu.Unlock()
	if !due {
		return nil
	}
	entries, err := t.c.ListIndex(ctx, t.o.Layout, t.o.Instance)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Seq >= full {
			break
		}
		if err := t.c.Delete(ctx, e.Key); err != nil {
			return err
		}
	}
	t.mu.Lock()
	t.gcFull = full
	t.mu.Unlock()
	return nil
}

// sweepOrphans deletes, once per run, the objects under this instance's
// prefix that no index names: uploads a crash cut off before the manifest
// recorded them, objects replaced before a restart. It waits until this
// run's first full index is DeleteDelay old, so no reader still holds an
// index naming them.
func (t *tier) sweepOrphans(ctx context.Context) error {
	t.mu.Lock()
	due := !t.swept && t.lastFull > 0 && time.Since(t.lastFullAt) > t.o.DeleteDelay
	t.mu.Unlock()
	if !due {
		return nil
	}
	var orphans []string
	l, inst := t.o.Layout, t.o.Instance
	for _, dir := range []string{bucket.KindFloat.Dir(), bucket.KindHistogram.Dir()} {
		err := t.c.List(ctx, l.InstanceRoot(inst)+dir+"/", true, func(o bucket.ObjectInfo) error {
			k, ref, start, crc, ok := l.ParseFileKey(inst, o.Key)
			if !ok || time.Since(o.Modified) < t.o.DeleteDelay {
				return nil
			}
			t.mu.Lock()
			f := t.files[bucket.FileID{Kind: k, Ref: ref, Start: start}]
			named := f != nil && f.CRC == crc
			t.mu.Unlock()
			if !named {
				orphans = append(orphans, o.Key)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, key := range orphans {
		if err := t.c.Delete(ctx, key); err != nil {
			return err
		}
		t.cache.Forget(key)
		t.m.objectsDeleted.Inc()
	}
	t.mu.Lock()
	t.swept = true
	t.mu.Unlock()
	if len(orphans) > 0 {
		t.s.log.Info("deleted objects no index names", "count", len(orphans), "prefix", t.c.URL(l.InstanceRoot(inst)))
	}
	return nil
}

// runRetention runs bucket retention when this instance owns it, every
// retentionInterval, and drops its own files past the new horizon at once
// (what it deletes is past an older horizon, dropped already). It
// returns how many files it dropped.
func (t *tier) runRetention(ctx context.Context) (int, error) {
	if t.retainer == nil || time.Since(t.lastRetain) < t.retentionInterval() {
		return 0, nil
	}
	res, err := t.retainer.Run(ctx, t.s.now())
	t.lastRetain = time.Now()
	n := 0
	if res.Horizon.MinTime != 0 {
		t.mu.Lock()
		t.horizon = res.Horizon
		t.mu.Unlock()
		n = t.dropExpired(res.Horizon)
	}
	t.m.retentionDeleted.Add(float64(res.Deleted))
	t.m.retentionDeletedBytes.Add(float64(res.Bytes))
	if res.Deleted > 0 {
		t.s.log.Info("bucket retention", "deleted", res.Deleted, "bytes", res.Bytes, "horizon", time.UnixMilli(res.Horizon.MinTime).UTC())
	}
	return n, err
}

func (t *tier) retentionInterval() time.Duration {
	return max(t.o.UploadInterval, t.o.RetentionInterval)
}
