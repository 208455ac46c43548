package actastore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/durable"
)

// Data directories of earlier releases, opened without loss:
//
//   - Before the one-WAL layout, native histograms, exemplars and metadata
//     had a WAL of their own, histograms/wal (record types 1 histograms, 2
//     exemplars, 3 metadata: the bodies of today's types 5, 6 and 7). Open
//     replays it once into the heads, flushes what it held into the files
//     and syncs them, and only then deletes it (retireLegacyHistWAL). A
//     crash before the deletion replays it again: its samples are then in
//     the files already and dedupeReplayed drops them.
//   - Before histogram files rotated, a series had one histogram file,
//     histograms/<ab>/<ref>.acta; it is renamed to <ref>-<first sample>.acta
//     (renameLegacyHistFile).

// Legacy record types of histograms/wal. Frozen.
const (
	legacyHistRecHistograms byte = 1
	legacyHistRecExemplars  byte = 2
	legacyHistRecMetadata   byte = 3
)

func legacyHistWALDir(root string) string { return filepath.Join(root, histDirName, walDirName) }

// replayLegacyHistWAL replays histograms/wal if there is one, and reports
// whether there was. Its samples get WAL segment 0 in the heads (it has no
// segments of the one WAL): they are flushed before Open returns.
func (s *Store) replayLegacyHistWAL() (bool, error) {
	dir := legacyHistWALDir(s.dir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	rp := replayer{s: s, nowNs: s.now().UnixNano(), legacy: true}
	_, err := wal.Replay(dir, func(seg int, p []byte) error {
		switch p[0] {
		case legacyHistRecHistograms:
			var err error
			rp.hs, err = decodeSamplesRecord(histograms, p, rp.hs, func(ref uint64, hs []HistogramSample) error {
				ms, err := rp.series(ref, 0, func() string { return "histogram samples" })
				if ms != nil {
					replaySamples(&rp, histograms, ms, 0, hs)
					rp.flushCounts()
				}
				return err
			})
			return err
		case legacyHistRecExemplars:
			return decodeExemplarsRecord(&rp.lb, p, func(ref uint64, es []Exemplar) error { return rp.exemplars(0, ref, es) })
		case legacyHistRecMetadata:
			return decodeMetadataRecord(p, func(m NamedMetadata) { s.md.set([]NamedMetadata{m}) })
		}
		return fmt.Errorf("unknown record type %d in segment %08d of the pre-1 histogram WAL %s", p[0], seg, dir)
	})
	if err != nil {
		return true, fmt.Errorf("replay the histogram WAL of an earlier release: %w", err)
	}
	s.replayedSamples += rp.replayed
	return true, nil
}

// retireLegacyHistWAL makes everything the legacy histogram WAL held
// durable in files — every histogram head, exemplars, metadata — and then
// deletes it.
func (s *Store) retireLegacyHistWAL() error {
	for _, ms := range s.reg.ix.live() {
		mu := s.flushLock(ms)
		mu.Lock()
		err := flushTrack(s, histograms, ms)
		if err == nil {
			err = s.flushExemplars(ms)
		}
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("flush what the histogram WAL of an earlier release held: %w", err)
		}
	}
	if err := s.md.flush(); err != nil {
		return err
	}
	if err := s.writers.syncDirty(); err != nil {
		return err
	}
	dir := legacyHistWALDir(s.dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the histogram WAL of an earlier release: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	s.log.Info("retired the histogram WAL of an earlier release: its data is in the series files", "dir", dir)
	return nil
}

func isExemplarFileName(name string) bool {
	return len(name) == 16+len(exemplarFileExt) && name[16:] == exemplarFileExt
}

func isLegacyHistFileName(name string) bool {
	return len(name) == 16+len(seriesFileExt) && name[16:] == seriesFileExt
}

// renameLegacyHistFile renames a pre-rotation histogram file <ref>.acta in
// dir to <ref>-<first sample>.acta. ok is false when it is left alone (a
// bad name, or the new name is taken).
func (s *Store) renameLegacyHistFile(dir, name string) (ref uint64, start int64, ok bool, err error) {
	ref, perr := strconv.ParseUint(name[:16], 16, 64)
	if perr != nil {
		return 0, 0, false, nil
	}
	lo, _, any, err := readFile(histograms, nil, filepath.Join(dir, name), 0, 0, nil)
	if err != nil {
		return 0, 0, false, fmt.Errorf("histogram file %s: %w", name, err)
	}
	if any {
		start = lo
	}
	to := histFilePath(s.dir, ref, start)
	if _, err := os.Stat(to); err == nil {
		s.log.Warn("pre-rotation histogram file left alone: its new name is taken", "file", name)
		return 0, 0, false, nil
	}
	if err := os.Rename(filepath.Join(dir, name), to); err != nil {
		return 0, 0, false, err
	}
	return ref, start, true, nil
}
