package actastore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

func TestBlockBounds(t *testing.T) {
	f := func(n, maxRows int, cuts []int, want []int) {
		t.Helper()
		if got := blockBounds(n, maxRows, cuts); !reflect.DeepEqual(got, want) {
			t.Errorf("blockBounds(%d, %d, %v) = %v, want %v", n, maxRows, cuts, got, want)
		}
	}
	f(1000, 65536, nil, nil)
	f(150000, 65536, nil, []int{65536, 131072})
	f(6000, 65536, []int{3000}, []int{3000})
	f(6000, 65536, []int{3000, 3001, 3200}, []int{3000}) // too close to the one before
	f(6000, 65536, []int{100, 5900}, nil)                // too close to either end
	f(6000, 65536, []int{4000, 2000}, []int{2000, 4000}) // in any order
	f(200000, 65536, []int{70000}, []int{65536, 70000, 135536})
	f(65636, 65536, nil, []int{65124})                                           // no last block under a cut block's rows
	f(1000, 300, nil, []int{300, 600, 900})                                      // blocks smaller than a cut block
	f(1000, 100, []int{500}, []int{100, 200, 300, 400, 500, 600, 700, 800, 900}) // cuts then never fit
}

// jittered 15 s scrapes, with a gap of gapAt missed scrapes at row gapRow.
func scrapeTimes(r *rand.Rand, n, gapRow, gap int) []int64 {
	ts := make([]int64, n)
	k := 0
	for i := range ts {
		if i == gapRow {
			k += gap
		}
		ts[i] = day0 + int64(k)*15000 + r.Int64N(51) - 25
		k++
	}
	return ts
}

func TestOutlierCuts(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 6000
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	counter := make([]int64, n)
	for i := 1; i < n; i++ {
		counter[i] = counter[i-1] + 1000 + r.Int64N(600)
		if i == 3500 {
			counter[i] = 7 // a restart
		}
	}
	if got := outlierCuts(counter, rows, 1); !reflect.DeepEqual(got, []int{3500}) {
		t.Errorf("counter reset: cuts %v, want [3500]", got)
	}
	walk := make([]int64, n)
	for i := 1; i < n; i++ {
		walk[i] = walk[i-1] + r.Int64N(2001) - 1000
	}
	if got := outlierCuts(walk, rows, 1); got != nil {
		t.Errorf("random walk: cuts %v, want none", got)
	}
	ts := scrapeTimes(r, n, 2000, 40) // 10 minutes missed
	if got := blockBounds(n, 65536, outlierCuts(ts, rows, 2)); !reflect.DeepEqual(got, []int{2000}) {
		t.Errorf("scrape gap: bounds %v, want [2000]", got)
	}
	if got := outlierCuts(scrapeTimes(r, n, -1, 0), rows, 2); got != nil {
		t.Errorf("regular scrapes: cuts %v, want none", got)
	}
}

// Cutting at a reset and a gap makes the sealed file smaller, and every
// value comes back.
func TestSealedCutsPay(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	n := 5760
	ts := scrapeTimes(r, n, 4000, 20)
	ss := make([]Sample, n)
	v := 0.0
	for i := range ss {
		v += float64(r.IntN(300))
		if i == 2500 {
			v = 0
		}
		ss[i] = Sample{T: ts[i], V: v}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "cut.acta")
	writeSealedT(t, p, ss)
	r2, err := acta.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	blocks := len(r2.Blocks())
	r2.Close()
	if blocks != 3 {
		t.Errorf("%d blocks, want 3 (cut at the reset and at the gap)", blocks)
	}
	cut, _ := os.Stat(p)
	if got := readBackT(t, p); !equalBits(got, ss) {
		t.Fatal("values differ")
	}
	// The same samples in one block (no cuts) for comparison.
	bs, err := sealedFloatBatches(ss, 65536)
	if err != nil {
		t.Fatal(err)
	}
	whole := &acta.Batch{Schema: bs[0].Schema, Rows: n}
	whole.Columns = []acta.Array{&acta.FixedArray[int64]{Values: ts}, concatInt64(bs)}
	p1 := filepath.Join(dir, "one.acta")
	w, err := acta.Create(p1, whole.Schema, acta.WriterOptions{Codec: acta.CodecZstd, Encoding: acta.EncodingAdaptive, RowBlockTarget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(whole); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	one, _ := os.Stat(p1)
	if cut.Size() >= one.Size() {
		t.Errorf("cut file %d bytes, one block %d", cut.Size(), one.Size())
	}
	t.Logf("a day of a counter with a reset and a gap: %.2f bytes/sample in one block, %.2f cut", float64(one.Size())/float64(n), float64(cut.Size())/float64(n))
}

func concatInt64(bs []*acta.Batch) acta.Array {
	var out []int64
	for _, b := range bs {
		out = append(out, b.Columns[1].(*acta.FixedArray[int64]).Values...)
	}
	return &acta.FixedArray[int64]{Values: out}
}
