package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// crashPayload is record i of the crash and upgrade tests: mixed sizes,
// some of them 40 KiB (a Remote-Write request's records), every fourth
// ending in zero bytes (so a record's own zeros are never taken for a
// zero tail). testdata/wal-before-prealloc holds the same records with
// 4 KiB ones (big = 4<<10).
func crashPayload(i, big int) []byte {
	n := 20 + (i*7919)%900
	if i%9 == 0 {
		n = big
	}
	p := make([]byte, n)
	for k := range p {
		p[k] = byte(i*31 + k*17 + 1)
	}
	if i%4 == 0 {
		clear(p[n/2:])
	}
	return p
}

// crash leaves the log as kill -9 would: the files as the kernel holds
// them, zero tail included, nothing cut or closed by the Log.
func crash(t *testing.T, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitPrepLocked() // a zero fill ends with the process too
	l.closed = true
	l.f.Close()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestCrashPreallocated: N records synced into preallocated segments, then
// a crash (no Close): the last segment ends in zeros, the earlier ones were
// cut to their records when left. Replay gives back exactly the N records,
// bit for bit, reports the zeros apart from torn bytes and trims them; the
// log reopens after the last segment and counts only record bytes.
func TestCrashPreallocated(t *testing.T) {
	for _, n := range []int{0, 1, 300} {
		t.Run("", func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{SegmentSize: 256 << 10, Preallocate: true})
			if err != nil {
				t.Fatal(err)
			}
			var bytesIn int64
			for i := range n {
				p := crashPayload(i, 40<<10)
				pos, err := l.Append(p)
				if err == nil {
					err = l.Sync(pos)
				}
				if err != nil {
					t.Fatal(err)
				}
				bytesIn += headerSize + int64(len(p))
			}
			if l.Size() != bytesIn {
				t.Fatalf("Size %d, %d record bytes appended", l.Size(), bytesIn)
			}
			end := l.End()
			crash(t, l)
			segs, _ := Segments(dir)
			if n == 300 && len(segs) < 4 {
				t.Fatalf("segments %v: want several", segs)
			}
			for _, s := range segs[:len(segs)-1] {
				if got := fileSize(t, filepath.Join(dir, SegmentName(s))); got > 256<<10+40<<10+headerSize {
					t.Fatalf("segment %d left behind is %d bytes: not cut to its records", s, got)
				}
			}
			lastPath := filepath.Join(dir, SegmentName(end.Segment))
			size := fileSize(t, lastPath)
			if size <= end.Offset {
				t.Fatalf("last segment is %d bytes with records to %d: no zero tail was preallocated", size, end.Offset)
			}
			got, st, err := readAll(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n || st.Records != n || st.TornBytes != 0 || st.ZeroBytes != size-end.Offset {
				t.Fatalf("replayed %d records, %d torn, %d zero bytes; want %d, 0, %d", len(got), st.TornBytes, st.ZeroBytes, n, size-end.Offset)
			}
			for i, p := range got {
				if !bytes.Equal(p, crashPayload(i, 40<<10)) {
					t.Fatalf("record %d differs", i)
				}
			}
			if got := fileSize(t, lastPath); got != end.Offset {
				t.Fatalf("last segment is %d bytes after replay, want %d", got, end.Offset)
			}
			l, err = Open(dir, Options{SegmentSize: 256 << 10, Preallocate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.Current() != end.Segment+1 || l.Size() != bytesIn {
				t.Fatalf("reopened at segment %d with Size %d, want %d and %d", l.Current(), l.Size(), end.Segment+1, bytesIn)
			}
		})
	}
}

// TestCloseCutsZeroTail: a closed log's segments hold records only, and a
// Cut leaves the segment cut to its records.
func TestCloseCutsZeroTail(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	pos, err := l.Append(crashPayload(1, 0))
	if err == nil {
		err = l.Sync(pos)
	}
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.waitPrepLocked()
	zeroEnd := l.zeroEnd
	l.mu.Unlock()
	path := filepath.Join(dir, SegmentName(0))
	if got := fileSize(t, path); got != zeroEnd || got < prepMin {
		t.Fatalf("open segment is %d bytes, want %d zero-filled (at least %d)", got, zeroEnd, prepMin)
	}
	if _, err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != pos.Offset {
		t.Fatalf("segment left by Cut is %d bytes, want its %d", got, pos.Offset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, filepath.Join(dir, SegmentName(1))); got != 0 {
		t.Fatalf("closed empty segment is %d bytes", got)
	}
}

// TestZeroTailBeforeLastSegment: a segment that is not the last may end in
// zeros (a crash before it was cut, then a writer that opened without
// replaying): that is the end of its records, trimmed; any non-zero byte
// after the zeros is corruption there. In the last segment a page of zeros
// followed by data is what a power loss leaves of appends never synced
// (TestLostPagesAreTorn): a torn tail.
func TestZeroTailBeforeLastSegment(t *testing.T) {
	var seg0, seg1 []byte
	var recs0, recs1 [][]byte
	for i := range 5 {
		recs0 = append(recs0, crashPayload(i, 100))
		recs1 = append(recs1, crashPayload(5+i, 100))
		seg0 = AppendRecord(seg0, recs0[i])
		seg1 = AppendRecord(seg1, recs1[i])
	}
	zeros := make([]byte, 8192)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	type corrupt struct {
		seg int
		off int
	}
	for name, c := range map[string]struct {
		segs    [][]byte
		records [][]byte
		sizes   []int // of the segments after replay
		zero    int64
		corrupt *corrupt
		torn    int64
	}{
		"zero tail":          {[][]byte{cat(seg0, zeros), seg1}, append(recs0, recs1...), []int{len(seg0), len(seg1)}, 8192, nil, 0},
		"zeros only":         {[][]byte{zeros, seg1}, recs1, []int{0, len(seg1)}, 8192, nil, 0},
		"zero tails in both": {[][]byte{cat(seg0, zeros), cat(seg1, zeros)}, append(recs0, recs1...), []int{len(seg0), len(seg1)}, 2 * 8192, nil, 0},
		"garbage after zeros": {[][]byte{cat(seg0, zeros, []byte{7}), seg1}, recs0, nil, 0,
			&corrupt{0, len(seg0)}, 0},
		"garbage after zeros, last": {[][]byte{seg0, cat(seg1, zeros, []byte{7})}, append(recs0, recs1...), []int{len(seg0), len(seg1)}, 0,
			nil, 8193},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for i, b := range c.segs {
				if err := os.WriteFile(filepath.Join(dir, SegmentName(i)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, st, err := readAll(t, dir)
			var ce *CorruptionError
			if c.corrupt != nil {
				if !errors.As(err, &ce) || ce.Segment != c.corrupt.seg || ce.Offset != int64(c.corrupt.off) {
					t.Fatalf("got %v, want corruption in segment %d at %d", err, c.corrupt.seg, c.corrupt.off)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.records) || st.ZeroBytes != c.zero || st.TornBytes != c.torn {
				t.Fatalf("%d records, %d zero bytes, %d torn; want %d, %d, %d", len(got), st.ZeroBytes, st.TornBytes, len(c.records), c.zero, c.torn)
			}
			for i, p := range got {
				if !bytes.Equal(p, c.records[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
			for i, want := range c.sizes {
				if got := fileSize(t, filepath.Join(dir, SegmentName(i))); got != int64(want) {
					t.Fatalf("segment %d is %d bytes after replay, want %d", i, got, want)
				}
			}
		})
	}
}

// TestReplayBeforePrealloc: a WAL written by the release before
// preallocation (testdata/wal-before-prealloc, written by adca732: four
// 16 KiB segments, 60 records, no zero tails) replays unchanged, its files
// untouched; a log opened on it appends after it.
func TestReplayBeforePrealloc(t *testing.T) {
	src := filepath.Join("testdata", "wal-before-prealloc")
	dir := t.TempDir()
	segs, err := Segments(src)
	if err != nil || len(segs) != 4 {
		t.Fatalf("testdata segments %v: %v", segs, err)
	}
	orig := map[int][]byte{}
	for _, s := range segs {
		b, err := os.ReadFile(filepath.Join(src, SegmentName(s)))
		if err != nil {
			t.Fatal(err)
		}
		orig[s] = b
		if err := os.WriteFile(filepath.Join(dir, SegmentName(s)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(extra int, zero int64) {
		t.Helper()
		got, st, err := readAll(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 60+extra || st.TornBytes != 0 || st.ZeroBytes != zero {
			t.Fatalf("%d records, %d torn, %d zero bytes; want %d, 0, %d", len(got), st.TornBytes, st.ZeroBytes, 60+extra, zero)
		}
		for i, p := range got {
			if !bytes.Equal(p, crashPayload(i, 4<<10)) {
				t.Fatalf("record %d differs", i)
			}
		}
		for _, s := range segs {
			if b, _ := os.ReadFile(filepath.Join(dir, SegmentName(s))); !bytes.Equal(b, orig[s]) {
				t.Fatalf("segment %d changed", s)
			}
		}
	}
	check(0, 0)
	l, err := Open(dir, Options{SegmentSize: 16 << 10, Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, b := range orig {
		total += int64(len(b))
	}
	if l.Current() != 4 || l.Size() != total {
		t.Fatalf("opened at segment %d, Size %d; want 4, %d", l.Current(), l.Size(), total)
	}
	for i := 60; i < 100; i++ {
		pos, err := l.Append(crashPayload(i, 4<<10))
		if err == nil {
			err = l.Sync(pos)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The new segments are preallocated: the last one ends in zeros.
	end := l.End()
	crash(t, l)
	if end.Segment <= 4 {
		t.Fatalf("40 more records stayed in segment %d: want a rotation", end.Segment)
	}
	check(40, fileSize(t, filepath.Join(dir, SegmentName(end.Segment)))-end.Offset)
}

// TestLostPagesAreTorn: after a power loss, appends that were never synced
// may come back with some pages zeros (the zero-filled space they were
// written over) and later pages written, since the kernel writes pages
// back in no order. Replay cuts the last segment at the first record with
// such a page; the synced records before it all come back. A flipped bit
// with data after it stays corruption.
func TestLostPagesAreTorn(t *testing.T) {
	var synced [][]byte
	var seg []byte
	for i := 1; i < 12; i++ {
		p := crashPayload(i, 100)
		synced = append(synced, p)
		seg = AppendRecord(seg, p)
	}
	// Three appends never synced: a 20 KiB one, then two small ones.
	big := make([]byte, 20<<10)
	for k := range big {
		big[k] = byte(k*13 + 5)
	}
	torn := len(seg)
	unsynced := AppendRecord(AppendRecord(AppendRecord(nil, big), crashPayload(40, 100)), crashPayload(41, 100))
	all := append(append([]byte(nil), seg...), unsynced...)
	all = append(all, make([]byte, 3*pageSize)...) // the zero-filled space ahead

	zeroPage := func(b []byte, page int64) []byte {
		b = bytes.Clone(b)
		clear(b[page*pageSize : (page+1)*pageSize])
		return b
	}
	firstPage := int64(torn)/pageSize + 1 // the first page wholly inside the big record
	headerPage := func() []byte {
		// The big record's header on a page that was lost, the rest written:
		// move the records so that it starts on a page boundary.
		pad := int(roundUp(int64(torn))) - torn
		p := make([]byte, pad-headerSize)
		for k := range p {
			p[k] = 9
		}
		s := AppendRecord(bytes.Clone(seg), p)
		s = append(s, unsynced...)
		s = append(s, make([]byte, pageSize)...)
		return zeroPage(s, int64(len(seg)+pad)/pageSize)
	}()
	flipped := bytes.Clone(all)
	flipped[torn+headerSize+100] ^= 1

	for name, c := range map[string]struct {
		data    []byte
		records int
		cutAt   int
		corrupt bool
	}{
		"page inside a record lost":         {zeroPage(all, firstPage), len(synced), torn, false},
		"page with a record's header lost":  {headerPage, len(synced) + 1, torn + int(roundUp(int64(torn))) - torn, false},
		"the last page of the appends lost": {zeroPage(all, int64(len(seg)+len(unsynced)-1)/pageSize), -1, -1, false},
		"a flipped bit, data after it":      {flipped, len(synced), torn, true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, SegmentName(0))
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, st, err := readAll(t, dir)
			if c.corrupt {
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.Offset != int64(c.cutAt) {
					t.Fatalf("got %v, want corruption at %d", err, c.cutAt)
				}
				if got := fileSize(t, path); got != int64(len(c.data)) {
					t.Fatalf("a corrupt segment was changed: %d bytes, was %d", got, len(c.data))
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) < len(synced) {
				t.Fatalf("%d records back, want the %d synced ones at least", len(got), len(synced))
			}
			for i, p := range synced {
				if !bytes.Equal(got[i], p) {
					t.Fatalf("record %d differs", i)
				}
			}
			if c.records >= 0 && len(got) != c.records {
				t.Fatalf("%d records back, want %d", len(got), c.records)
			}
			if c.corrupt || c.cutAt < 0 {
				return
			}
			if size := fileSize(t, path); size != int64(c.cutAt) || st.TornBytes != int64(len(c.data)-c.cutAt) {
				t.Fatalf("segment %d bytes, %d torn; want cut at %d, %d torn", size, st.TornBytes, c.cutAt, len(c.data)-c.cutAt)
			}
		})
	}
}
