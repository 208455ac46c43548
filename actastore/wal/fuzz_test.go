package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReplay hands arbitrary bytes to the WAL reader as the last segment
// of a log (where a torn tail is cut) and as an earlier one (where any
// damage but a zero tail is corruption). Whatever it does, it must not panic; every record
// it delivers must be one the framing really holds (re-framing the records
// gives back the bytes before the stop offset); a cut tail must leave a
// segment that replays cleanly with the same records; and ReadFile must
// agree with Replay.
func FuzzReplay(f *testing.F) {
	var seg []byte
	for i := range 5 {
		seg = AppendRecord(seg, payload(i))
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-3])                                           // torn final record
	f.Add(append(append([]byte{}, seg...), 0, 0, 0))                  // zero padding after the last record
	f.Add(append(bytes.Clone(seg[:len(seg)-3]), make([]byte, 64)...)) // torn final record, then preallocated zeros
	f.Add(append(append(bytes.Clone(seg), make([]byte, 64)...), 1))   // zeros, then a stray byte
	bad := bytes.Clone(seg)
	bad[12] ^= 0xff // checksum mismatch in the first record, more records after it
	f.Add(bad)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, last := range []bool{true, false} {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, SegmentName(0)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if !last {
				// An empty later segment makes segment 0 a middle one.
				if err := os.WriteFile(filepath.Join(dir, SegmentName(1)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var got [][]byte
			st, err := Replay(dir, func(_ int, p []byte) error {
				got = append(got, bytes.Clone(p))
				return nil
			})
			var reframed []byte
			for _, p := range got {
				reframed = AppendRecord(reframed, p)
			}
			if !bytes.HasPrefix(data, reframed) {
				t.Fatalf("last=%v: delivered records are not the segment's first bytes", last)
			}
			if st.Records != len(got) {
				t.Fatalf("last=%v: stats say %d records, delivered %d", last, st.Records, len(got))
			}
			if err != nil {
				if !IsCorruption(err) {
					t.Fatalf("last=%v: error %v is not a CorruptionError", last, err)
				}
				if last && st.TornBytes > 0 {
					t.Fatalf("last=%v: both a cut tail and corruption", last)
				}
				continue
			}
			if !last && len(reframed) != len(data) && !allZero(data[len(reframed):]) {
				t.Fatalf("a middle segment with %d stray bytes (not all zero) replayed without error", len(data)-len(reframed))
			}
			// Cutting the tail (or trimming a zero tail, in any segment)
			// left exactly the good records.
			after, _ := os.ReadFile(filepath.Join(dir, SegmentName(0)))
			if !bytes.Equal(after, reframed) {
				t.Fatalf("after the cut the segment holds %d bytes, want the %d bytes of its records", len(after), len(reframed))
			}
			var again [][]byte
			if err := ReadFile(filepath.Join(dir, SegmentName(0)), func(p []byte) error {
				again = append(again, bytes.Clone(p))
				return nil
			}); err != nil && last {
				t.Fatalf("ReadFile after a clean replay: %v", err)
			}
			if last && len(again) != len(got) {
				t.Fatalf("ReadFile gave %d records, Replay %d", len(again), len(got))
			}
		}
	})
}
