package actastore

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/rotation"
)

// writeRotated writes a flush's sorted samples into the series' files as
// the rotation policy routes them: the newest file first (its period's
// samples and older, out-of-order ones), then a new file per later period
// or after a full file. It returns how many leading samples are in files
// (all of them unless err) and the last path written or tried. Called with
// ms.flushMu held, so the series' newest file cannot change meanwhile.
func (s *Store) writeRotated(ms *memSeries, smps []Sample) (written int, path string, err error) {
	pol := s.opts.Rotation
	ms.mu.Lock()
	var cur *rotation.Newest
	if n := len(ms.files); n > 0 {
		cur = &rotation.Newest{Start: ms.files[n-1], MaxT: noTime}
		if ms.hasLastFlushed {
			// The newest file holds the series' newest flushed sample: a
			// new file starts after everything written before it.
			cur.MaxT = ms.lastFlushed.T
		}
	}
	ms.mu.Unlock()
	if cur != nil && pol.MaxFileBytes > 0 {
		p := seriesFilePath(s.dir, ms.ref, cur.Start)
		if fi, err := os.Stat(p); err == nil {
			cur.Bytes = fi.Size()
		}
		if pol.NeedsMaxT(*cur) && cur.MaxT == noTime {
			newest, ok, err := seriesFileNewest(p)
			if err != nil {
				return 0, p, fmt.Errorf("newest sample of full file: %w", err)
			}
			if ok {
				cur.MaxT = newest.T
			}
		}
	}
	ts := make([]int64, len(smps))
	for i, smp := range smps {
		ts[i] = smp.T
	}
	for _, part := range pol.Split(cur, ts) {
		path = seriesFilePath(s.dir, ms.ref, part.Start)
		if err := s.writeBlocks(ms, path, part.Start, part.Create, smps[part.Lo:part.Hi]); err != nil {
			return written, path, err
		}
		if part.Create {
			s.rm.FilesCreated.WithLabelValues(part.Reason).Inc()
			if part.Reason != rotation.ReasonFirst {
				s.log.Debug("series file rotated", "ref", fmt.Sprintf("%016x", ms.ref), "path", path, "reason", part.Reason)
			}
		}
		ms.mu.Lock()
		lo := smps[part.Lo].T
		if ms.fileMin == nil {
			ms.fileMin = make(map[int64]int64)
		}
		if m, ok := ms.fileMin[part.Start]; ok {
			ms.fileMin[part.Start] = min(m, lo)
		} else if part.Create {
			ms.fileMin[part.Start] = lo
		}
		ms.mu.Unlock()
		written = part.Hi
	}
	return written, path, nil
}
