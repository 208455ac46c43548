package actastore

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/prometheus/prometheus/model/labels"
)

// replayWAL restores the head from the WAL: series records define series
// (those not yet in the catalog become pending), sample records go into the
// head with the segment they came from, so WAL truncation keeps those
// segments until the samples are flushed. Exact duplicates and conflicting
// repeats are dropped as in Append; the window check is skipped, since these
// samples were accepted once. A torn WAL tail is cut by wal.Replay;
// corruption before the tail fails Open.
func (s *Store) replayWAL() error {
	dir := filepath.Join(s.dir, walDirName)
	var b labels.ScratchBuilder
	var scratch []Sample
	nowNs := s.now().UnixNano()
	replayed := 0
	st, err := wal.Replay(dir, func(seg int, p []byte) error {
		switch p[0] {
		case recSeries:
			return decodeSeriesRecord(&b, p, func(r seriesRec) error {
				ms := s.byRef[r.Ref]
				if at, deleted := s.deletedRefs[r.Ref]; ms == nil && deleted && r.Created < at {
					return nil // the definition of a series retention removed since
				}
				if ms == nil {
					ms = s.addSeriesLocked(r.Ref, r.Labels, r.Created)
					s.pending = append(s.pending, ms)
				} else if !labels.Equal(ms.lset, r.Labels) {
					return fmt.Errorf("series %016x is %s in the catalog but %s in WAL segment %08d", r.Ref, ms.lset, r.Labels, seg)
				}
				ms.walLogged = true
				return nil
			})
		case recSamples:
			var err error
			scratch, err = decodeSamplesRecord(p, scratch, func(ref uint64, smps []Sample) error {
				ms := s.byRef[ref]
				if _, deleted := s.deletedRefs[ref]; ms == nil && deleted {
					return nil // retention removed the series: expired samples
				}
				if ms == nil {
					return fmt.Errorf("samples for unknown series %016x in WAL segment %08d", ref, seg)
				}
				wasEmpty := len(ms.head) == 0
				for _, smp := range smps {
					if ms.insertLocked(smp, seg, nowNs) {
						replayed++
					}
				}
				if wasEmpty && len(ms.head) > 0 {
					s.headSeries.Add(1)
				}
				return nil
			})
			return err
		default:
			return fmt.Errorf("unknown WAL record type %d in segment %08d", p[0], seg)
		}
	})
	if err != nil {
		return fmt.Errorf("replay WAL: %w", err)
	}
	s.headSamples.Add(int64(replayed))
	if st.TornBytes > 0 {
		s.log.Warn("cut torn WAL tail", "bytes", st.TornBytes)
	}
	s.replayedSamples = replayed
	return nil
}

// dedupeReplayed drops replayed head samples that a series file already
// holds: they were flushed and synced, but the WAL segment holding them had
// not been deleted yet when the process stopped. Only files of series with
// replayed samples are read, and only the blocks overlapping the head.
// A file sample wins over a head sample with the same timestamp. It also
// learns each such series' newest flushed sample.
func (s *Store) dedupeReplayed() error {
	for _, ms := range s.ix.live() {
		if len(ms.head) == 0 || len(ms.files) == 0 {
			continue
		}
		mint, maxt := ms.head[0].T, ms.head[len(ms.head)-1].T
		inFile := make(map[int64]struct{})
		for _, start := range ms.files {
			path := seriesFilePath(s.dir, ms.ref, start)
			err := readSeriesFile(path, mint, maxt, func(b block) error {
				for _, t := range b.ts {
					if t >= mint && t <= maxt {
						inFile[t] = struct{}{}
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("read series %016x file %s: %w", ms.ref, path, err)
			}
		}
		// The newest flushed sample makes duplicate and out-of-order checks
		// work after the crash as they did before it.
		path := seriesFilePath(s.dir, ms.ref, ms.files[len(ms.files)-1])
		newest, ok, err := seriesFileNewest(path)
		if err != nil {
			return fmt.Errorf("read series %016x file %s: %w", ms.ref, path, err)
		}
		if ok {
			ms.lastFlushed, ms.hasLastFlushed = newest, true
			ms.maxT = max(ms.maxT, newest.T)
		}
		if len(inFile) == 0 {
			continue
		}
		before := len(ms.head)
		ms.head = slices.DeleteFunc(ms.head, func(smp Sample) bool {
			_, ok := inFile[smp.T]
			return ok
		})
		s.headSamples.Add(-int64(before - len(ms.head)))
		if len(ms.head) == 0 {
			ms.head = nil
			s.headSeries.Add(-1)
		}
	}
	return nil
}
