package actastore

import (
	"fmt"
	"slices"
	"sort"

	"github.com/acta-remote/acta-remote/xorchunk"
)

// A plain read (a SAMPLES remote read, PromQL, the query API) of a float
// file whose XOR chunks are kept (xorcache_kept.go) decodes those chunks
// instead of opening the file and decoding its Acta blocks: no open when
// the store has more files than readers, and an XOR chunk decodes faster
// than a compacted block (zstd, then the integer transforms). It never
// builds chunks: a file's are built by streamed reads and by the warm-up
// after a start. Files holding start timestamps are read from the file:
// the chunks leave them out.

// keptPlain returns path's kept chunks when a plain read can take them
// (the file holds no start timestamps), counting the read of the file;
// nil otherwise (then nothing is opened or built, nor counted).
func (c *readerCache) keptPlain(path string) *fileChunks {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wholeKeptLocked(path) == nil {
		return nil
	}
	fc, _ := c.keptLocked(path)
	c.chunkHits.Add(1)
	return fc
}

// keptChunks is fc's chunks that overlap [mint, maxt], and the samples
// they hold (at most what keptRun appends).
func keptChunks(fc *fileChunks, mint, maxt int64) ([]XORChunk, int) {
	cs := fc.chunks
	lo := sort.Search(len(cs), func(i int) bool { return cs[i].MaxT >= mint })
	hi := sort.Search(len(cs), func(i int) bool { return cs[i].MinT > maxt })
	n := 0
	for _, c := range cs[lo:hi] {
		n += c.Samples
	}
	return cs[lo:hi], n
}

// keptRun appends the samples of kept chunks in [mint, maxt] to dst as k's
// samples (k.xorHead: they convert to and from XOR pairs bit-exactly),
// sorted, one per timestamp as the chunks hold them. readTrackOnce gives
// a dst with room for the run of kept files it starts (keptRuns), so that
// their samples append into one array instead of mergeRuns copying them.
func keptRun[S any](k kind[S], fc *fileChunks, mint, maxt int64, dst []S) ([]S, error) {
	cs, n := keptChunks(fc, mint, maxt)
	out := slices.Grow(dst, n)
	var err error
	for _, c := range cs {
		if out, err = appendXOR(k, out, c.Data, mint, maxt); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keptRuns looks up the kept chunks of a plain read's files (nil: not kept,
// or left out of the read), and returns with them, for each file, the room
// a run of kept files starting there needs: its samples in [mint, maxt]
// and those of the kept files right after it, and spare more when the run
// reaches the last file (the head's samples, appended after it when they
// follow it).
func keptRuns[S any](s *Store, k kind[S], ms *memSeries, files []fileSpan, mint, maxt int64, st *readStats, spare int) (fcs []*fileChunks, room []int) {
	fcs, room = make([]*fileChunks, len(files)), make([]int, len(files))
	for i, f := range files {
		if st != nil && st.localOnly {
			if _, only := s.tier.bucketOnly(k.id(), ms.ref, f.start); only {
				continue
			}
		}
		if fcs[i] = s.readers.keptPlain(filePath(s.dir, k, ms.ref, f.start)); fcs[i] != nil {
			_, room[i] = keptChunks(fcs[i], mint, maxt)
		}
	}
	after := spare
	for i := len(files) - 1; i >= 0; i-- {
		if fcs[i] == nil {
			after = 0
			continue
		}
		room[i] += after
		after = room[i]
	}
	return fcs, room
}

// appendXOR appends the samples of an XOR chunk (its bytes, timestamps
// increasing) in [mint, maxt] to dst. xorchunk.Decoder reads what
// chunkenc's iterator reads, bit for bit (its FuzzDecoder), in 0.6-0.7×
// the time (xorchunk's BenchmarkDecode).
func appendXOR[S any](k kind[S], dst []S, chunk []byte, mint, maxt int64) ([]S, error) {
	var d xorchunk.Decoder
	d.Reset(chunk)
	for d.Next() {
		t, v := d.At()
		if t < mint {
			continue
		}
		if t > maxt {
			break
		}
		dst = append(dst, k.fromXOR(t, v))
	}
	if err := d.Err(); err != nil {
		return dst, fmt.Errorf("cannot read XOR chunk: %w", err)
	}
	return dst, nil
}
