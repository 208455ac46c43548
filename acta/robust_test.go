package acta

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// blockRows returns each block's row count.
func blockRows(r *Reader) []int {
	var n []int
	for _, b := range r.Blocks() {
		n = append(n, b.Rows)
	}
	return n
}

// TestTruncateEveryByte cuts a written file at every byte inside its last
// frame: open exposes exactly the committed blocks, repair removes only the
// partial frame, and the repaired file passes full validation.
func TestTruncateEveryByte(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.acta")
	writeTS(t, full, WriterOptions{}, []int64{1, 2, 3}, []int64{4, 5}, []int64{6, 7, 8, 9})
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(full)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Blocks()[2]
	r.Close()
	for cut := last.Offset; cut < int64(len(data)); cut++ {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.acta", cut))
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatalf("cut %d: open: %v", cut, err)
		}
		eqSlice(t, fmt.Sprintf("cut %d rows", cut), blockRows(r), []int{3, 2})
		if r.IncompleteTail() != (cut > last.Offset) {
			t.Fatalf("cut %d: incomplete tail %v", cut, r.IncompleteTail())
		}
		r.Close()
		if _, err := OpenWriter(path, WriterOptions{}); cut > last.Offset && !errors.Is(err, ErrIncompleteTail) {
			t.Fatalf("cut %d: OpenWriter: %v, want ErrIncompleteTail", cut, err)
		}
		plan, err := InspectRecovery(path)
		if err != nil {
			t.Fatalf("cut %d: inspect: %v", cut, err)
		}
		if plan.LastGoodOffset != last.Offset || plan.RequiresRepair() != (cut > last.Offset) || plan.TailBytes != cut-last.Offset {
			t.Fatalf("cut %d: plan %+v", cut, plan)
		}
		if cut == last.Offset {
			if _, err := RepairIncompleteTail(path); err == nil || !strings.Contains(err.Error(), "no bytes removed") {
				t.Fatalf("repair of a complete file: %v", err)
			}
			continue
		}
		sum, err := RepairIncompleteTail(path)
		if err != nil {
			t.Fatalf("cut %d: repair: %v", cut, err)
		}
		if sum.BytesRemoved != cut-last.Offset || sum.NewSize != last.Offset || sum.Blocks != 2 {
			t.Fatalf("cut %d: summary %+v", cut, sum)
		}
		if err := Validate(path, ValidateFull); err != nil {
			t.Fatalf("cut %d: validate after repair: %v", cut, err)
		}
		os.Remove(path)
	}
	// Cuts inside the schema frame are refused by repair.
	path := filepath.Join(dir, "schema-cut.acta")
	os.WriteFile(path, data[:100], 0o644)
	if plan, err := InspectRecovery(path); err != nil || !plan.SchemaIncomplete || plan.RequiresRepair() {
		t.Fatalf("schema cut: %+v %v", plan, err)
	}
	if _, err := RepairIncompleteTail(path); err == nil || !strings.Contains(err.Error(), "no bytes removed") {
		t.Fatalf("schema cut repair: %v", err)
	}
}

// TestFlipEveryByte flips each byte of a committed file: a full validation
// reports corruption (or an unsupported version, for the version bytes) at
// an offset inside the damaged frame, and open + full scan never panics.
func TestFlipEveryByte(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.acta")
	writeTS(t, path, WriterOptions{}, []int64{1, 2, 3}, []int64{4, 5})
	data, _ := os.ReadFile(path)
	r, _ := Open(path)
	frames := []int64{0, prologueSize, r.Blocks()[0].Offset, r.Blocks()[1].Offset, int64(len(data))}
	r.Close()
	frameOf := func(off int64) (int64, int64) {
		for i := 0; i+1 < len(frames); i++ {
			if off < frames[i+1] {
				return frames[i], frames[i+1]
			}
		}
		return -1, -1
	}
	bad := filepath.Join(dir, "bad.acta")
	for i := range data {
		mut := append([]byte(nil), data...)
		mut[i] ^= 0x5a
		os.WriteFile(bad, mut, 0o644)
		err := Validate(bad, ValidateFull)
		if i >= 8 && i < 12 {
			if !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip %d (version): %v", i, err)
			}
			continue
		}
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("flip at %d: %v, want corruption", i, err)
		}
		lo, hi := frameOf(int64(i))
		if ce.Offset < lo || ce.Offset >= hi {
			t.Fatalf("flip at %d (frame [%d,%d)): reported offset %d: %v", i, lo, hi, ce.Offset, err)
		}
		scanAll(bad)
	}
}

// scanAll opens path and scans everything, ignoring errors: it must not
// panic.
var tightLimits = Limits{MaxDecodedBlockBytes: 16 << 20, MaxStreamBytes: 16 << 20, MaxPayloadBytes: 16 << 20,
	MaxHeaderBytes: 1 << 20, MaxRowsPerBlock: 1 << 20, MaxDecodedScanBytes: 64 << 20}

func scanAll(path string) {
	r, err := OpenWithLimits(path, tightLimits)
	if err != nil {
		return
	}
	defer r.Close()
	for i := range r.Blocks() {
		r.ReadBlock(i)
	}
	s, err := r.Scan(ScanOptions{})
	if err != nil {
		return
	}
	for k := 0; k < 1000; k++ {
		if _, err := s.Next(); err == io.EOF {
			break
		}
	}
	r.Refresh()
}

func TestRefreshReplacedAndTruncated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.acta")
	writeTS(t, path, WriterOptions{}, []int64{1, 2})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep, err := r.Refresh(); err != nil || rep.BlocksAdded != 0 {
		t.Fatalf("idle refresh %+v %v", rep, err)
	}
	w, err := OpenWriter(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := w.Schema()
	w.Append(tsBatch(s, []int64{3}, []float64{3}))
	w.Flush()
	// A partial frame after it is not exposed.
	w.Append(tsBatch(s, []int64{4}, []float64{4}))
	w.Finish()
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-5], 0o644) // in place: same inode
	rep, err := r.Refresh()
	if err != nil || rep.BlocksAdded != 1 || !rep.IncompleteTail {
		t.Fatalf("refresh %+v %v", rep, err)
	}
	os.WriteFile(path, data, 0o644)
	rep, err = r.Refresh()
	if err != nil || rep.BlocksAdded != 1 || rep.IncompleteTail || len(r.Blocks()) != 3 {
		t.Fatalf("refresh after completion %+v %v", rep, err)
	}
	// Shrunk below the committed end.
	os.WriteFile(path, data[:len(data)-60], 0o644)
	if _, err := r.Refresh(); !errors.Is(err, ErrFileTruncated) {
		t.Fatalf("truncated: %v", err)
	}
	if len(r.Blocks()) != 3 {
		t.Fatal("failed refresh changed the snapshot")
	}
	// Rewritten in place: same length, different last trailer.
	other := filepath.Join(dir, "o.acta")
	writeTS(t, other, WriterOptions{}, []int64{1, 2}, []int64{9}, []int64{10})
	od, _ := os.ReadFile(other)
	os.WriteFile(path, od, 0o644)
	if _, err := r.Refresh(); !errors.Is(err, ErrFileReplaced) {
		t.Fatalf("rewritten: %v", err)
	}
	// Replaced by rename: a new inode.
	os.Rename(other, path)
	if _, err := r.Refresh(); !errors.Is(err, ErrFileReplaced) {
		t.Fatalf("renamed over: %v", err)
	}
}

// TestTailConcurrentWriter: a writer goroutine appends blocks while a tail
// polls; every block is seen exactly once, in order, never torn.
func TestTailConcurrentWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.acta")
	s := tsSchema(t)
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tail, err := r.Tail(ScanOptions{Columns: []string{"timestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	const blocks = 200
	done := make(chan error, 1)
	go func() {
		for i := 0; i < blocks; i++ {
			n := 1 + i%5
			ts := make([]int64, n)
			for k := range ts {
				ts[k] = int64(i*10 + k)
			}
			if err := w.Append(tsBatch(s, ts, make([]float64, n))); err != nil {
				done <- err
				return
			}
			if err := w.Flush(); err != nil {
				done <- err
				return
			}
		}
		_, err := w.Finish()
		done <- err
	}()
	seen := 0
	deadline := time.Now().Add(20 * time.Second)
	for seen < blocks && time.Now().Before(deadline) {
		b, err := tail.Poll()
		if err != nil {
			t.Fatalf("poll after %d blocks: %v", seen, err)
		}
		if b == nil {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		ts := b.Columns[0].(*FixedArray[int64]).Values
		if len(ts) != 1+seen%5 || ts[0] != int64(seen*10) {
			t.Fatalf("block %d: %v", seen, ts)
		}
		seen++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen != blocks {
		t.Fatalf("saw %d blocks, want %d", seen, blocks)
	}
	if b, err := tail.Poll(); b != nil || err != nil {
		t.Fatalf("extra poll: %v %v", b, err)
	}
}

// TestHelperWriterProcess is the child of TestKilledWriter: it appends
// blocks forever, printing each committed sequence.
func TestHelperWriterProcess(t *testing.T) {
	path := os.Getenv("ACTA_HELPER_WRITER")
	if path == "" {
		t.Skip("helper process only")
	}
	s := tsSchema(t)
	w, err := Create(path, s, WriterOptions{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		n := 1 + i%50
		ts := make([]int64, n)
		for k := range ts {
			ts[k] = int64(i*100 + k)
		}
		if err := w.Append(tsBatch(s, ts, make([]float64, n))); err != nil {
			os.Exit(1)
		}
		if err := w.Flush(); err != nil {
			os.Exit(1)
		}
		fmt.Fprintln(out, "committed", i+1)
		out.Flush()
	}
}

// TestKilledWriter SIGKILLs a writer process at random points: every block
// it reported committed is visible, and the file repairs to a valid one.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 5; round++ {
		path := filepath.Join(dir, fmt.Sprintf("k%d.acta", round))
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriterProcess$")
		cmd.Env = append(os.Environ(), "ACTA_HELPER_WRITER="+path)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		want := 10 + rng.Intn(300)
		committed := 0
		var r *Reader
		var tail *Tail
		seen := 0
		// poll drains the tail, checking every block is the next one, whole.
		poll := func() {
			for {
				b, err := tail.Poll()
				if err != nil {
					t.Fatalf("round %d: poll after %d blocks: %v", round, seen, err)
				}
				if b == nil {
					return
				}
				ts := b.Columns[0].(*FixedArray[int64]).Values
				if len(ts) != 1+seen%50 || ts[0] != int64(seen*100) || ts[len(ts)-1] != int64(seen*100+len(ts)-1) {
					t.Fatalf("round %d: block %d torn or out of order: %d rows from %d", round, seen, len(ts), ts[0])
				}
				seen++
			}
		}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || f[0] != "committed" {
				continue
			}
			committed, _ = strconv.Atoi(f[1])
			if r == nil {
				var err error
				if r, err = Open(path); err != nil {
					t.Fatal(err)
				}
				seen = len(r.Blocks()) // the tail starts after these
				if tail, err = r.Tail(ScanOptions{Columns: []string{"timestamp"}}); err != nil {
					t.Fatal(err)
				}
			}
			if committed%7 == 0 {
				poll()
			}
			if committed >= want {
				break
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		poll()
		r.Close()
		if seen < committed {
			t.Fatalf("round %d: tail saw %d blocks, writer reported %d", round, seen, committed)
		}
		if r2, err := Open(path); err != nil || len(r2.Blocks()) != seen {
			t.Fatalf("round %d: reopen: %v", round, err)
		} else {
			r2.Close()
		}
		if plan, err := InspectRecovery(path); err != nil {
			t.Fatal(err)
		} else if plan.RequiresRepair() {
			if _, err := RepairIncompleteTail(path); err != nil {
				t.Fatal(err)
			}
		}
		if err := Validate(path, ValidateFull); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestRepairRefusesCorruption: a damaged complete frame, whether followed by
// a valid frame or final, is never cut by repair, and no byte is removed.
func TestRepairRefusesCorruption(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "b.acta")
	writeTS(t, base, WriterOptions{}, []int64{1, 2}, []int64{3, 4})
	data, _ := os.ReadFile(base)
	r, _ := Open(base)
	blocks := append([]BlockInfo(nil), r.Blocks()...)
	r.Close()
	for i, b := range blocks {
		d := append([]byte(nil), data...)
		d[b.Offset+b.Bytes-trailerSize-3] ^= 0xff                    // inside the payload
		d = append(d, data[blocks[1].Offset:blocks[1].Offset+20]...) // plus a torn tail
		path := filepath.Join(dir, "c.acta")
		os.WriteFile(path, d, 0o644)
		if _, err := InspectRecovery(path); !IsCorruption(err) {
			t.Fatalf("block %d: inspect: %v", i, err)
		}
		_, err := RepairIncompleteTail(path)
		if !IsCorruption(err) || !strings.Contains(err.Error(), "no bytes removed") {
			t.Fatalf("block %d: repair: %v", i, err)
		}
		if fileSize(t, path) != int64(len(d)) {
			t.Fatalf("block %d: repair changed the file", i)
		}
	}
}

// TestScanContinuesPastBadBlock: a corrupt block is one error item; the
// scan goes on to the next block.
func TestScanContinuesPastBadBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.acta")
	writeTS(t, path, WriterOptions{}, []int64{1}, []int64{2}, []int64{3})
	r, _ := Open(path)
	mid := r.Blocks()[1]
	r.Close()
	data, _ := os.ReadFile(path)
	data[mid.Offset+mid.Bytes-trailerSize-1] ^= 1
	os.WriteFile(path, data, 0o644)
	r, err := Open(path) // metadata-only open: the body CRC is checked on read
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sc, _ := r.Scan(ScanOptions{})
	var got []string
	for {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Offset != mid.Offset {
				t.Fatalf("block error %v, want corruption at %d", err, mid.Offset)
			}
			got = append(got, "err")
			continue
		}
		got = append(got, fmt.Sprint(b.Columns[0].(*FixedArray[int64]).Values[0]))
	}
	eqSlice(t, "scan items", got, []string{"1", "err", "3"})
}

// TestConcurrentReads: ReadBlock and Scans on one Reader from many
// goroutines (run under -race).
func TestConcurrentReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.acta")
	writeTS(t, path, WriterOptions{}, []int64{1, 2}, []int64{3, 4}, []int64{5, 6})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			if g%2 == 0 {
				b, err := r.ReadBlock(g % 3)
				if err == nil && b.Columns[0].(*FixedArray[int64]).Values[0] != int64(2*(g%3)+1) {
					err = fmt.Errorf("block %d: wrong value", g%3)
				}
				errs <- err
				return
			}
			sc, _ := r.Scan(ScanOptions{Range: &PrimaryRange{2, 6}})
			n := 0
			for {
				b, err := sc.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					errs <- err
					return
				}
				n += b.Rows
			}
			if n != 4 {
				errs <- fmt.Errorf("scan returned %d rows", n)
				return
			}
			errs <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
