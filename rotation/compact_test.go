package rotation

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

// seriesSchema is the store's series file schema (actastore/seriesfile_acta.go).
func seriesSchema(t testing.TB) *acta.Schema {
	s, err := acta.NewSchema(1, []acta.Column{
		{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
		{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// flushOptions are the store's head-flush writer options.
var flushOptions = acta.WriterOptions{Codec: acta.CodecZstd, ZstdLevel: 3, Encoding: acta.EncodingAdaptive}

type sample struct {
	t int64
	v float64
}

// writeBlocks writes each run as its own block, as head flushes do.
func writeBlocks(t testing.TB, path string, opts acta.WriterOptions, runs ...[]sample) {
	t.Helper()
	s := seriesSchema(t)
	w, err := acta.Create(path, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		ts := make([]int64, len(run))
		vs := make([]float64, len(run))
		for i, smp := range run {
			ts[i], vs[i] = smp.t, smp.v
		}
		if err := w.Append(&acta.Batch{Schema: s, Rows: len(run), Columns: []acta.Array{
			&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

// readAll returns every row in file order.
func readAll(t testing.TB, path string) []sample {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []sample
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		ts := b.Columns[0].(*acta.FixedArray[int64]).Values
		vs := b.Columns[1].(*acta.FixedArray[float64]).Values
		for k := range ts {
			out = append(out, sample{ts[k], vs[k]})
		}
	}
	return out
}

func chunk(smps []sample, n int) [][]sample {
	var out [][]sample
	for len(smps) > 0 {
		k := min(n, len(smps))
		out = append(out, smps[:k])
		smps = smps[k:]
	}
	return out
}

// realistic15s is one day of a 15 s scrape: timestamps 15000 ms apart with
// the few ms of jitter real scrapes have, and a counter (requests served:
// integral increments, a reset) or a gauge (a memory-like random walk of
// floats with decimals).
func realistic15s(kind string, seed uint64, n int) []sample {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]sample, n)
	t := int64(1_750_000_000_000)
	v := 0.0
	if kind == "gauge" {
		v = 512 * 1024 * 1024
	}
	for i := range out {
		t += 15000
		if r.IntN(10) == 0 {
			t += int64(r.IntN(7)) - 3
		}
		switch kind {
		case "counter":
			v += float64(r.IntN(200))
			if i == n/2 {
				v = 0 // a restart resets the counter
			}
		case "gauge":
			v += r.NormFloat64() * 4096
			out[i] = sample{t, v / 3}
			continue
		}
		out[i] = sample{t, v}
	}
	return out
}

func allocated(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return Allocated(fi)
}

func sameBits(a, b []sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].t != b[i].t || math.Float64bits(a[i].v) != math.Float64bits(b[i].v) {
			return false
		}
	}
	return true
}

// Compaction of a day of 15 s samples flushed as 120-row blocks (and as the
// 20-row blocks live ingestion leaves with max_head_age 5m) changes no
// sample and shrinks what the disk allocates per sample.
func TestCompactRealistic(t *testing.T) {
	const n = 5760 // a day at 15 s
	for _, kind := range []string{"counter", "gauge"} {
		for _, rows := range []int{120, 20} {
			smps := realistic15s(kind, 7, n)
			path := filepath.Join(t.TempDir(), "0000000000000001-1750000000000.acta")
			writeBlocks(t, path, flushOptions, chunk(smps, rows)...)
			before := allocated(t, path)
			res, err := CompactFile(path, path+".tmp", CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			after := allocated(t, path)
			if err := acta.Validate(path, acta.ValidateFull); err != nil {
				t.Fatalf("%s/%d: compacted file invalid: %v", kind, rows, err)
			}
			if got := readAll(t, path); !sameBits(got, smps) {
				t.Fatalf("%s/%d: samples changed by compaction", kind, rows)
			}
			if res.RowsIn != n || res.RowsOut != n || res.BlocksIn != n/rows || res.BlocksOut != 1 {
				t.Errorf("%s/%d: result %+v", kind, rows, res)
			}
			if res.AllocatedIn != before || res.AllocatedOut != after || after >= before {
				t.Errorf("%s/%d: allocated %d -> %d, result %+v", kind, rows, before, after, res)
			}
			if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
				t.Errorf("temporary file left: %v", err)
			}
			t.Logf("%s, %d-row blocks, one day at 15 s: %.2f -> %.2f allocated bytes/sample (%d -> %d bytes, apparent %d -> %d)",
				kind, rows, float64(before)/n, float64(after)/n, before, after, res.BytesIn, res.BytesOut)
		}
	}
}

// Out-of-order blocks are merged by timestamp, a repeated timestamp keeps
// the value stored first (block order, then row order), and every float
// bit pattern survives: NaN payloads, the stale marker, -0, infinities.
func TestCompactMergesAndKeepsFirst(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002)
	nan2 := math.Float64frombits(0x7ff8000000000bad)
	negZero := math.Copysign(0, -1)
	path := filepath.Join(t.TempDir(), "f.acta")
	writeBlocks(t, path, flushOptions,
		[]sample{{10, 1}, {20, stale}, {30, negZero}},
		[]sample{{5, math.Inf(1)}, {20, 99}, {40, nan2}}, // 20 again: the first stored (stale) wins
		[]sample{{40, 7}, {35, math.Inf(-1)}, {35, 8}},   // unsorted block, 35 twice: first row wins
	)
	res, err := CompactFile(path, path+".tmp", CompactOptions{BlockRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []sample{{5, math.Inf(1)}, {10, 1}, {20, stale}, {30, negZero}, {35, math.Inf(-1)}, {40, nan2}}
	if got := readAll(t, path); !sameBits(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if res.RowsIn != 9 || res.RowsOut != 6 || res.BlocksOut != 2 {
		t.Errorf("result %+v", res)
	}
	if err := acta.Validate(path, acta.ValidateFull); err != nil {
		t.Fatal(err)
	}
	// A second run finds the file compact and writes nothing.
	res, err = CompactFile(path, path+".tmp", CompactOptions{BlockRows: 3})
	if err != nil || !res.Skipped {
		t.Fatalf("second compaction: %+v, %v", res, err)
	}
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, b := range r.Blocks() {
		if !b.Sorted {
			t.Errorf("block %d not TS_SORTED", b.Seq)
		}
	}
}

// A reader that opened the file before the rename keeps reading the old
// version in full; one opening after sees the new one.
func TestCompactReaderSnapshot(t *testing.T) {
	smps := realistic15s("counter", 3, 600)
	path := filepath.Join(t.TempDir(), "f.acta")
	writeBlocks(t, path, flushOptions, chunk(smps, 20)...)
	old, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := CompactFile(path, path+".tmp", CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(old.Blocks()) != 30 {
		t.Fatalf("old reader sees %d blocks", len(old.Blocks()))
	}
	var got []sample
	for i := range old.Blocks() {
		b, err := old.ReadBlock(i)
		if err != nil {
			t.Fatalf("old reader after rename: %v", err)
		}
		ts := b.Columns[0].(*acta.FixedArray[int64]).Values
		vs := b.Columns[1].(*acta.FixedArray[float64]).Values
		for k := range ts {
			got = append(got, sample{ts[k], vs[k]})
		}
	}
	if !sameBits(got, smps) || !sameBits(readAll(t, path), smps) {
		t.Fatal("a reader saw different samples")
	}
}

// BenchmarkCompact reports allocated bytes per sample before and after, and
// the write amplification of compaction (bytes written / bytes the
// compacted file keeps) for a day of a 15 s counter in 120-row blocks.
func BenchmarkCompact(b *testing.B) {
	smps := realistic15s("counter", 7, 5760)
	dir := b.TempDir()
	var before, after, written int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, "f.acta")
		os.Remove(path)
		writeBlocks(b, path, flushOptions, chunk(smps, 120)...)
		b.StartTimer()
		res, err := CompactFile(path, path+".tmp", CompactOptions{})
		if err != nil {
			b.Fatal(err)
		}
		before, after, written = res.AllocatedIn, res.AllocatedOut, res.BytesOut
	}
	b.ReportMetric(float64(before)/5760, "B/sample-before")
	b.ReportMetric(float64(after)/5760, "B/sample-after")
	b.ReportMetric(float64(written)/5760, "B/sample-rewritten")
}

// Files as the store leaves them when out-of-order samples of an older
// period go to the newest file: every block sorted, blocks overlapping.
func TestCompactOverlappingBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		var runs [][]sample
		var all []sample
		n := 1260
		for n < 1320 {
			k := 1 + r.IntN(4)
			var run []sample
			for j := 0; j < k && n < 1320; j++ {
				if n%7 == 0 {
					run = append(run, sample{int64(n-120)*60000 + 7, float64(n)})
				}
				run = append(run, sample{int64(n) * 60000, float64(n)})
				n++
			}
			slices.SortFunc(run, func(a, b sample) int { return int(a.t - b.t) })
			runs = append(runs, run)
			all = append(all, run...)
		}
		path := filepath.Join(t.TempDir(), "f.acta")
		writeBlocks(t, path, flushOptions, runs...)
		if _, err := CompactFile(path, path+".tmp", CompactOptions{BlockRows: 4096}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(all, func(a, b sample) int { return int(a.t - b.t) })
		if got := readAll(t, path); !sameBits(got, all) {
			t.Fatalf("iter %d: got %d samples, want %d", iter, len(got), len(all))
		}
	}
}
