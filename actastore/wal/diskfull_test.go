package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// A full disk fails appends (with ENOSPC, nothing acknowledged) once they
// pass the zero-filled space prepared ahead of them (which they may still
// use), the zero fill of more space fails too and is given up, no torn
// record or hole is left behind, and the log resumes (without
// preallocation) when space returns: a replay yields every acknowledged
// record in order and nothing else.
func TestDiskFull(t *testing.T) {
	root := testkit.MountTmpfs(t, 2<<20) // room for a zero fill (prepMin) and more
	dir := filepath.Join(root, "wal")
	// Segments of 1 MiB never fill before the disk does: the failures
	// hit Append's write, not a rotation.
	for _, segSize := range []int64{1 << 20, 8 << 10} {
		t.Run(fmt.Sprint("segment_size=", segSize), func(t *testing.T) {
			os.RemoveAll(dir)
			l, err := Open(dir, Options{SegmentSize: segSize, Preallocate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close() // on failure too: an open file keeps the tmpfs busy
			var acked [][]byte
			rec := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 700+i%300) }
			i := 0
			appendOne := func() error {
				i++
				p := rec(i)
				pos, err := l.Append(p, p) // two records per call, as a batch writes them
				if err == nil {
					err = l.Sync(pos)
				}
				if err == nil {
					acked = append(acked, p, p)
				}
				return err
			}
			for range 20 {
				if err := appendOne(); err != nil {
					t.Fatal(err)
				}
			}
			filler := filepath.Join(root, "filler")
			l.mu.Lock()
			l.waitPrepLocked()
			l.mu.Unlock()
			testkit.FillDisk(t, filler)
			l.mu.Lock()
			room := roundPage(max(l.zeroEnd, l.off)) - l.off // allocated ahead of the writer
			l.mu.Unlock()
			// Appends into the prepared space need no new blocks.
			before := len(acked)
			var used int64
			for range 1000 {
				if err = appendOne(); err != nil {
					break
				}
			}
			for _, p := range acked[before:] {
				used += headerSize + int64(len(p))
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append on a full disk: %v, want ENOSPC", err)
			}
			if used > room {
				t.Fatalf("%d bytes appended on a full disk, only %d prepared", used, room)
			}
			l.mu.Lock()
			prepErr, noPrep := l.prepErr, l.noPrep
			l.mu.Unlock()
			if !noPrep || !errors.Is(prepErr, syscall.ENOSPC) {
				t.Fatalf("zero fill on a full disk: noPrep %v, %v; want it given up with ENOSPC", noPrep, prepErr)
			}
			failures := 0
			for range 50 {
				if err := appendOne(); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("append on a full disk: %v, want ENOSPC", err)
					}
					failures++
				}
			}
			if failures < 45 {
				t.Errorf("only %d of 50 appends failed on a full disk", failures)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if debugDF {
				var sf syscall.Statfs_t
				syscall.Statfs(root, &sf)
				fi, _ := os.Stat(filepath.Join(dir, SegmentName(l.seg)))
				t.Logf("free %d blocks of %d; seg %d size %d off %d zeroEnd %d", sf.Bfree, sf.Blocks, l.seg, fi.Size(), l.off, l.zeroEnd)
			}
			for range 40 {
				if err := appendOne(); err != nil {
					t.Fatalf("append after space returned: %v", err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, st, err := readAll(t, dir)
			if err != nil {
				t.Fatalf("replay after a full disk: %v", err)
			}
			if st.TornBytes != 0 || st.ZeroBytes != 0 {
				t.Errorf("%d torn bytes, %d zero bytes at the tail (Close cuts the zeros)", st.TornBytes, st.ZeroBytes)
			}
			if len(got) != len(acked) {
				t.Fatalf("replayed %d records, %d acknowledged", len(got), len(acked))
			}
			for k := range got {
				if !bytes.Equal(got[k], acked[k]) {
					t.Fatalf("record %d differs", k)
				}
			}
			t.Logf("%d bytes appended into %d prepared on a full disk; %d appends failed with ENOSPC; %d acknowledged records replayed", used, room, failures, len(acked))
		})
	}
}

// A failed fsync is not retried over: every later append is refused, since
// the kernel may have dropped the unsynced pages and a later fsync would
// succeed over the gap.
func TestSyncFailureIsSticky(t *testing.T) {
	l, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pos, err := l.Append([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	l.f.Close() // the next fsync fails, as on an I/O error
	if err := l.Sync(pos); err == nil {
		t.Fatal("sync of a closed segment succeeded")
	}
	if _, err := l.Append([]byte("b")); err == nil || !strings.Contains(err.Error(), "appends refused since") {
		t.Fatalf("append after a failed fsync: %v, want the sticky error", err)
	}
}

func roundPage(n int64) int64 { return (n + 4095) &^ 4095 }

const debugDF = false
