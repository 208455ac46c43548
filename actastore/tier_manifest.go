package actastore

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore/wal"
	"github.com/acta-remote/acta-remote/bucket"
)

// manifest is the durable local list of uploaded files (tier.go): a file
// record once a file's upload is verified, a remove record once it leaves
// the tier (bucket.AppendFile, AppendRemove; docs/format/bucket.md), in
// the WAL's framing (CRC-32C per record, a torn tail cut at Open) in
// tier/manifest/. It is what lets Open attach files whose local copy is
// gone without asking the bucket. Open rewrites it into one segment once
// it holds many more records than files.
type manifest struct {
	dir string
	log *wal.Log
}

// manifestCompactRecords: Open rewrites the manifest when it holds more
// records than this plus twice its files.
const manifestCompactRecords = 4096

// openManifest replays the manifest in dir (creating it), calling add for
// each file record and remove for each remove record, in order.
func openManifest(dir string, add func(bucket.File), remove func(bucket.FileID, uint32)) (*manifest, error) {
	var b labels.ScratchBuilder
	recs := 0
	live := make(map[bucket.FileID]bucket.File)
	_, err := wal.Replay(dir, func(seg int, p []byte) error {
		r, err := bucket.DecodeRecord(&b, p)
		if err != nil {
			return fmt.Errorf("manifest segment %08d: %w", seg, err)
		}
		recs++
		switch r.Type {
		case bucket.RecFile:
			live[r.File.FileID] = r.File
			add(r.File)
		case bucket.RecRemove:
			if f, ok := live[r.File.FileID]; ok && f.CRC == r.File.CRC {
				delete(live, r.File.FileID)
			}
			remove(r.File.FileID, r.File.CRC)
		default:
			return fmt.Errorf("manifest segment %08d: unexpected record type %#x", seg, r.Type)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tier: load manifest %s: %w", dir, err)
	}
	l, err := wal.Open(dir, wal.Options{SegmentSize: 64 << 20})
	if err != nil {
		return nil, fmt.Errorf("tier: open manifest %s: %w", dir, err)
	}
	m := &manifest{dir: dir, log: l}
	if recs > manifestCompactRecords+2*len(live) {
		all := make([][]byte, 0, len(live))
		for _, f := range live {
			all = append(all, bucket.AppendFile(nil, f))
		}
		if err := m.append(all); err != nil {
			l.Close()
			return nil, err
		}
		if err := l.TruncateBefore(l.Current()); err != nil {
			l.Close()
			return nil, fmt.Errorf("tier: compact manifest: %w", err)
		}
	}
	return m, nil
}

// append makes records durable.
func (m *manifest) append(recs [][]byte) error {
	if len(recs) == 0 {
		return nil
	}
	pos, err := m.log.Append(recs...)
	if err != nil {
		return fmt.Errorf("tier: append to manifest: %w", err)
	}
	if err := m.log.Sync(pos); err != nil {
		return fmt.Errorf("tier: sync manifest: %w", err)
	}
	return nil
}

func (m *manifest) close() error { return m.log.Close() }
