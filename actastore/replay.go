package actastore

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/durable"
)

// Start-up: what Open does before the store is shared, in this order —
// the catalog (catalog.go), the files of every kind (scanFiles), the WAL
// into the heads (replayWAL; then the WAL of a data directory written
// before the one-WAL layout, replayLegacyHistWAL), the files attached to
// their series, torn tails cut (repairTornFiles) and samples already in
// files dropped from the heads (dedupeReplayed). The registry's lock is
// not taken: nothing else sees the store yet.

// scannedFiles are the files found at start-up: starts by ref, per kind.
type scannedFiles struct {
	starts    [numKinds]map[uint64][]int64
	exemplars []uint64 // refs with an exemplar file
}

// scanFiles lists the series files of every kind, finishes tier merges a
// crash interrupted after their commit, removes leftover temporary files,
// and renames pre-rotation histogram files
// (histograms/<ab>/<ref>.acta) to <ref>-<first sample>.acta.
func (s *Store) scanFiles() (*scannedFiles, error) {
	sf := &scannedFiles{}
	for i := range sf.starts {
		sf.starts[i] = make(map[uint64][]int64)
	}
	for _, kd := range []struct {
		id  kindID
		dir string
	}{{kindFloat, floats.dir()}, {kindHistogram, histograms.dir()}} {
		root := filepath.Join(s.dir, kd.dir)
		shards, err := os.ReadDir(root)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", root, err)
		}
		for _, sh := range shards {
			if !sh.IsDir() || len(sh.Name()) != 2 {
				continue
			}
			sdir := filepath.Join(root, sh.Name())
			ents, err := os.ReadDir(sdir)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", sdir, err)
			}
			// Committed tier merges first: their temporary file is the
			// merged one, not a leftover (tiermerge.go).
			if found, err := s.finishMerges(sdir, ents); err != nil {
				return nil, err
			} else if found {
				if ents, err = os.ReadDir(sdir); err != nil {
					return nil, fmt.Errorf("list %s: %w", sdir, err)
				}
			}
			renamed := false
			for _, e := range ents {
				name := e.Name()
				switch {
				case filepath.Ext(name) == tmpSuffix:
					os.Remove(filepath.Join(sdir, name))
					continue
				case kd.id == kindHistogram && isExemplarFileName(name):
					if ref, err := strconv.ParseUint(name[:16], 16, 64); err == nil {
						sf.exemplars = append(sf.exemplars, ref)
					}
					continue
				case kd.id == kindHistogram && isLegacyHistFileName(name):
					ref, start, ok, err := s.renameLegacyHistFile(sdir, name)
					if err != nil {
						return nil, err
					}
					if ok {
						sf.starts[kd.id][ref] = append(sf.starts[kd.id][ref], start)
						renamed = true
					}
					continue
				}
				if ref, start, ok := parseSeriesFileName(name); ok {
					sf.starts[kd.id][ref] = append(sf.starts[kd.id][ref], start)
				}
			}
			if renamed {
				if err := durable.SyncDir(sdir); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, m := range sf.starts {
		for ref, starts := range m {
			slices.Sort(starts)
			m[ref] = slices.Compact(starts)
		}
	}
	return sf, nil
}

// attachFiles records each series' files; files without a known series
// (impossible unless the catalog and WAL were lost) are logged and ignored.
func (s *Store) attachFiles(sf *scannedFiles) {
	attach := func(id kindID, ref uint64, starts []int64) {
		ms := s.reg.byRef.get(ref)
		if ms == nil {
			s.log.Warn("series file without a catalog entry, ignored", "ref", fmt.Sprintf("%016x", ref), "kind", id)
			return
		}
		switch id {
		case kindFloat:
			ms.floats.setFiles(starts)
			ms.floats.setFileMax(noTime, false)
		case kindHistogram:
			tr := histograms.track(ms, true)
			tr.setFiles(starts)
			tr.setFileMax(noTime, false)
		}
	}
	for id, m := range sf.starts {
		for ref, starts := range m {
			attach(kindID(id), ref, starts)
		}
	}
	for _, ref := range sf.exemplars {
		if ms := s.reg.byRef.get(ref); ms != nil {
			ms.exemplarsLocked() // read when first needed
		}
	}
}

// replayWAL restores the heads, exemplars and metadata from the WAL: series
// records define series (those not yet in the catalog become pending),
// sample records of every kind go into the heads with the segment they came
// from, so WAL truncation keeps those segments until they are flushed.
// Exact duplicates and conflicting repeats are dropped as in Commit; the
// window and bound checks are skipped, since these were accepted once. A
// torn WAL tail is cut by wal.Replay; corruption before the tail fails Open.
func (s *Store) replayWAL() error {
	dir := filepath.Join(s.dir, walDirName)
	ckpt, ckptBytes, err := prepareCheckpoint(dir) // checkpoint.go
	if err != nil {
		return fmt.Errorf("replay WAL: %w", err)
	}
	s.ckpt = ckpt
	s.ckptBytes.Store(ckptBytes)
	rp := replayer{s: s, nowNs: s.now().UnixNano(), total: segmentBytes(dir) + ckptBytes, base: ckptBytes}
	pipe := newReplayPipe(&rp) // replay_pipeline.go
	var seen int64
	add := func(seg int, p []byte, ckpt bool) error {
		seen += int64(len(p))
		return pipe.add(seg, p, seen, ckpt)
	}
	var st wal.ReplayStats
	release := func() {}
	if ckpt >= 0 {
		rp.frozen, err = mapCheckpoint(dir, ckpt) // checkpoint_replay.go
		if err == nil {
			err = readCheckpoint(rp.frozen.m, dir, ckpt, func(p []byte) error { return add(ckpt, p, true) })
		}
	}
	if err == nil {
		st, release, err = wal.ReplayMapped(dir, func(seg int, p []byte) error {
			if checkpointOnly(p[0]) {
				return fmt.Errorf("%w: checkpoint record (type %d) in WAL segment %08d", errRecord, p[0], seg)
			}
			return add(seg, p, false)
		})
	}
	if perr := pipe.close(); err == nil {
		err = perr
	}
	// Nothing of the records is kept: the heads hold copies (but for the
	// checkpoint's chunks, which its frozenChunks owns).
	release()
	runtime.KeepAlive(rp.frozen)
	if err != nil {
		return fmt.Errorf("replay WAL: %w", err)
	}
	if st.TornBytes > 0 {
		s.log.Warn("cut torn WAL tail", "bytes", st.TornBytes)
	}
	s.replayedSamples += rp.replayed
	s.replayLookups += rp.lookups
	return nil
}

// apply applies one WAL record other than samples (the applying stage of
// replay_pipeline.go, which decodes sample records before).
func (rp *replayer) apply(seg int, p []byte) error {
	s := rp.s
	switch p[0] {
	case recSeries:
		return decodeSeriesRecord(&rp.lb, p, func(r seriesRec) error { return rp.define(r, seg) })
	case recHeadChunks: // a checkpoint's (checkpoint_replay.go)
		return decodeHeadChunksRecord(p, func(ref uint64, maxT int64, data []byte) error {
			return rp.headChunk(int32(seg), ref, maxT, data)
		})
	case recExemplars:
		return decodeExemplarsRecord(&rp.lb, p, func(ref uint64, es []Exemplar) error { return rp.exemplars(int32(seg), ref, es) })
	case recMetadata:
		return decodeMetadataRecord(p, func(m NamedMetadata) { s.md.set([]NamedMetadata{m}) })
	case recTombstones:
		return decodeTombstonesRecord(p, rp.tombstone)
	case recTombstonesDone:
		return decodeTombstonesRecord(p, rp.tombstoneDone)
	case recStartTimes:
		var err error
		rp.sts, err = decodeStartsRecord(p, rp.sts, func(ref uint64, k kindID, sts []StartTime) error {
			return rp.starts(int32(seg), ref, k, sts)
		})
		return err
	default:
		return fmt.Errorf("unknown WAL record type %d in segment %08d", p[0], seg)
	}
}

// replayer is the state of one WAL replay.
type replayer struct {
	s        *Store
	nowNs    int64
	lb       labels.ScratchBuilder
	hs       []HistogramSample // the legacy replay's scratch
	fs       []Sample          // a checkpoint's head chunk, decoded
	frozen   *frozenChunks     // the heads restored from the checkpoint's chunks
	sts      []StartTime
	replayed int
	legacy   bool // replaying the pre-one-WAL histogram WAL
	// seen and total are the record bytes replayed so far and the WAL's
	// size, checkpoint included: how far through it the replay is
	// (growForReplay); base is the checkpoint's part.
	seen, total, base int64
	// ckpt: the record being applied is a checkpoint's (replaySamples).
	ckpt    bool
	hints   [numKinds]seriesHint // replay_pipeline.go
	lookups int                  // registry lookups of sample records' series (hint misses)
	// What a record's series added to the heads, counted here and added
	// to the store's atomic counters once a record (flushCounts): an
	// atomic add per series was a tenth of the applying stage.
	headSamples, headBytes, headSeries int64
}

// flushCounts adds what the records applied since the last call added to
// the heads to the store's counters.
func (rp *replayer) flushCounts() {
	if rp.headSeries != 0 {
		rp.s.hd.series.Add(rp.headSeries)
	}
	if rp.headSamples != 0 || rp.headBytes != 0 {
		rp.s.hd.added(rp.headSamples, rp.headBytes)
	}
	rp.headSamples, rp.headBytes, rp.headSeries = 0, 0, 0
}

// segmentBytes is the size of the WAL segments in dir (0 when unknown).
func segmentBytes(dir string) int64 {
	segs, err := wal.Segments(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, i := range segs {
		if fi, err := os.Stat(filepath.Join(dir, wal.SegmentName(i))); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// growForReplay makes room in a replayed head for what the rest of the WAL
// will likely add to it: commits interleave series through the WAL, so a
// series holding n samples after a fraction f of it ends with about n/f.
// Growing to that once instead of doubling saves the copies and the
// clearing of fresh pages that were most of a restart's time
// (BenchmarkReplayFullHead; on a VM a fresh page costs microseconds); at
// most 8x at a time, so a series seen only early in the WAL reserves
// little more than doubling would. A chunk reserves bytes at its bytes a
// sample so far; a kind without a chunk reserves side samples. A
// checkpoint's chunk (frozenChunks) reserves nothing: the samples after
// it start a chunk of their own (headBuf.split), which then grows.
// seen and total count the WAL after the checkpoint. It returns how the
// head's bytes changed (a chunk is counted as allocated).
func growForReplay[S any](k kind[S], tr *track[S], incoming int, seen, total int64) int64 {
	if seen <= 0 || total <= seen {
		return 0
	}
	estimate := func(need int) int {
		want := int(float64(need) * float64(total) / float64(seen) * 1.02)
		return min(max(want, need), 8*need)
	}
	p := tr.head.p
	if !k.xorHead() {
		if need := len(tr.head.side()) + incoming; need > cap(tr.head.side()) {
			tr.head.growSide(estimate(need) - len(tr.head.side()))
		}
		return 0 // side samples count by kind.size, not capacity
	}
	// From 16 samples on: before, the first sample's 10-16 bytes make the
	// bytes a sample look several times what they will be.
	if n := p.n(); n >= 16 && !tr.head.isFrozen() {
		perSample := float64(p.chunk.Len()) / float64(n)
		want := min(estimate(n+incoming), xorHeadMaxSamples)
		if grow := int(float64(want-n) * perSample); grow > p.chunk.Cap()-p.chunk.Len() {
			before := p.chunk.Cap()
			p.chunk.Grow(grow)
			return int64(p.chunk.Cap() - before)
		}
	}
	return 0
}

func (rp *replayer) define(r seriesRec, seg int) error {
	reg := rp.s.reg
	ms := reg.byRef.get(r.Ref)
	if at, deleted := reg.deleted[r.Ref]; ms == nil && deleted && r.Created < at {
		return nil // the definition of a series removed since
	}
	if ms == nil {
		ms = reg.addLocked(r.Ref, r.Labels, r.Created)
		reg.pending = append(reg.pending, ms)
	} else if !reg.ix.syms.equal(ms.syms, r.Labels) {
		return fmt.Errorf("series %016x is %s in the catalog but %s in WAL segment %08d", r.Ref, reg.ix.labels(nil, ms), r.Labels, seg)
	}
	ms.walLogged = true
	return nil
}

// series returns the live series of ref; nil, nil for one removed since
// (its records are dropped: expired or deleted data). what names the
// records for the error: a func, so that replay, which calls this for
// every series of every record, builds no string (the concatenation was a
// fifth of a replay's CPU in BenchmarkReplayFullHead).
func (rp *replayer) series(ref uint64, seg int32, what func() string) (*memSeries, error) {
	ms := rp.s.reg.byRef.get(ref)
	if ms != nil {
		return ms, nil
	}
	if _, deleted := rp.s.reg.deleted[ref]; deleted || rp.legacy {
		return nil, nil
	}
	return nil, fmt.Errorf("%s for unknown series %016x in WAL segment %08d", what(), ref, seg)
}

// replaySamples puts one series' samples of a record into its head; the
// caller adds the counts to the store (flushCounts). The WAL's samples
// are encoded as commits encode them, but for what headBuf.addNew leaves
// to the replay (lazy): a checkpoint's samples, and those of a head
// restored from a checkpoint's chunk.
func replaySamples[S any](rp *replayer, k kind[S], ms *memSeries, seg int32, smps []S) {
	tr := k.track(ms, true)
	idle := !ms.hasHeadLocked()
	lazy := rp.ckpt || tr.head.restored()
	grown := growForReplay(k, tr, len(smps), rp.seen-rp.base, rp.total-rp.base)
	n, b := insertAll(k, tr, smps, seg, rp.nowNs, lazy)
	b += grown
	if idle && ms.hasHeadLocked() {
		rp.headSeries++
	}
	rp.headSamples += int64(n)
	rp.headBytes += b
	rp.replayed += n
}

func (rp *replayer) exemplars(seg int32, ref uint64, es []Exemplar) error {
	ms, err := rp.series(ref, seg, func() string { return "exemplars" })
	if ms == nil || err != nil {
		return err
	}
	ms.exemplarsLocked().add(es, seg, rp.nowNs)
	return nil
}

// repairTornFiles cuts incomplete final frames after an unclean stop. Only
// files of series with data replayed from the WAL can have one: a block is
// appended only while its data is in the WAL, and the WAL lets go of it
// only after the file is synced. So the check costs what the WAL holds,
// not what the store holds. The store is the files' only writer.
func (s *Store) repairTornFiles() error {
	for _, ms := range s.reg.ix.live() {
		if err := repairTrack(s, floats, ms); err != nil {
			return err
		}
		if err := repairTrack(s, histograms, ms); err != nil {
			return err
		}
		if e := ms.ex(); e != nil && e.unflushed > 0 {
			path := exemplarFilePath(s.dir, ms.ref)
			if _, err := os.Stat(path); err == nil {
				if res, err := repairFile(path); err != nil {
					return fmt.Errorf("repair exemplar file %s: %w", path, err)
				} else if res != repairNone {
					s.log.Warn("repaired exemplar file", "path", path)
				}
			}
		}
	}
	return nil
}

func repairTrack[S any](s *Store, k kind[S], ms *memSeries) error {
	tr := k.track(ms, false)
	if tr == nil || tr.head.len() == 0 || len(tr.files()) == 0 {
		return nil
	}
	kept := tr.files()[:0]
	for _, start := range tr.files() {
		if _, only := s.tier.bucketOnly(k.id(), ms.ref, start); only {
			kept = append(kept, start) // whole when uploaded; nothing local to repair
			continue
		}
		path := filePath(s.dir, k, ms.ref, start)
		res, err := repairFile(path)
		if err != nil {
			return fmt.Errorf("repair %s series %016x file %s: %w", k.name(), ms.ref, path, err)
		}
		switch res {
		case repairCut:
			s.log.Warn("cut incomplete final frame of series file", "path", path)
		case repairRemoved:
			s.log.Warn("removed series file interrupted while being created", "path", path)
			continue
		}
		kept = append(kept, start)
	}
	tr.setFiles(kept)
	return nil
}

// dedupeReplayed drops replayed head samples that a series file already
// holds: they were flushed and synced, but the WAL segment holding them had
// not been deleted yet when the process stopped. Only files of series with
// replayed samples are read, and only the blocks overlapping the head. It
// also learns each such track's newest flushed sample.
func (s *Store) dedupeReplayed() error {
	for _, ms := range s.reg.ix.live() {
		if err := dedupeTrack(s, floats, ms); err != nil {
			return err
		}
		if err := dedupeTrack(s, histograms, ms); err != nil {
			return err
		}
	}
	return nil
}

func dedupeTrack[S any](s *Store, k kind[S], ms *memSeries) error {
	tr := k.track(ms, false)
	if tr == nil || tr.head.len() == 0 || len(tr.files()) == 0 {
		return nil
	}
	mint, maxt, _ := tr.head.bounds(k)
	inFile := make(map[int64]struct{})
	for i, start := range tr.files() {
		if _, only := s.tier.bucketOnly(k.id(), ms.ref, start); only {
			// Uploaded long after these samples' WAL segment was deleted,
			// in practice; reading it would make Open wait on the bucket.
			// A copy flushed again is merged away by reads.
			continue
		}
		path := filePath(s.dir, k, ms.ref, start)
		_, hi, ok, err := readFile(k, nil, path, mint, maxt, func(run []S) error {
			for _, smp := range run {
				inFile[k.ts(smp)] = struct{}{}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s series %016x file %s: %w", k.name(), ms.ref, path, err)
		}
		if i == len(tr.files())-1 {
			// The newest file's newest sample makes duplicate and
			// out-of-order checks work after the crash as they did before.
			fmax, _ := tr.fileMax()
			if ok {
				fmax = hi
				tr.maxT = max(tr.maxT, hi)
				if newest, found, err := newestInFile(k, path); err == nil && found {
					tr.setLast(newest)
				}
			}
			tr.setFileMax(fmax, true)
		}
	}
	if len(inFile) == 0 {
		return nil
	}
	n, b := tr.head.deleteFunc(k, func(smp S) bool {
		_, ok := inFile[k.ts(smp)]
		return ok
	})
	b = -b
	b += int64(pruneStarts(k, tr)) * startBytes
	s.hd.added(-int64(n), -b)
	if tr.head.len() == 0 {
		if !ms.hasHeadLocked() {
			s.hd.series.Add(-1)
		}
	}
	return nil
}
