package actastore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Series removed from an index keep their labels while anything holds
// them; once they are collected their ids are freed and reused, so churn
// (a new pod name every deploy) does not grow the table, and the live
// series read the same labels throughout.
func TestSymbolsChurn(t *testing.T) {
	ix := newIndex()
	lsetOf := func(round, i int) labels.Labels {
		return labels.FromStrings("__name__", "up", "job", "kubernetes-pods", "pod", fmt.Sprintf("app-%d-%d", round, i), "shard", fmt.Sprint(i%4))
	}
	const perRound = 1000
	stay := newMemSeries(1, 0)
	ix.add(stay, labels.FromStrings("__name__", "up", "job", "kubernetes-pods", "pod", "stays"))
	var held *memSeries
	var heldLset labels.Labels
	peak := 0
	for round := range 20 {
		var batch []*memSeries
		for i := range perRound {
			ms := newMemSeries(uint64(round*perRound+i+2), 0)
			ix.add(ms, lsetOf(round, i))
			batch = append(batch, ms)
		}
		for i, ms := range batch {
			if got, want := ix.labels(nil, ms), lsetOf(round, i); !labels.Equal(got, want) {
				t.Fatalf("round %d: series %d reads %s, want %s", round, i, got, want)
			}
		}
		if round == 0 {
			held, heldLset = batch[7], lsetOf(0, 7)
		}
		for _, ms := range batch {
			ix.remove(ms)
		}
		batch = nil
		runtime.GC()
		peak = max(peak, len(ix.syms.refs))
		// A removed series still held reads its labels, whatever was
		// freed and reused since.
		if got := ix.labels(nil, held); !labels.Equal(got, heldLset) {
			t.Fatalf("round %d: the held removed series reads %s, want %s", round, got, heldLset)
		}
	}
	if got, want := ix.labels(nil, stay), labels.FromStrings("__name__", "up", "job", "kubernetes-pods", "pod", "stays"); !labels.Equal(got, want) {
		t.Fatalf("the live series reads %s, want %s", got, want)
	}
	// Each round brings 1,000 new pod names; without reuse the table
	// would hold 20,000 of them.
	if peak > 3*perRound+16 {
		t.Fatalf("the table grew to %d ids over 20 rounds of %d new names", peak, perRound)
	}
	// Every id in use has its string, its map entry and a reference.
	s := ix.syms
	inFree := map[uint32]bool{}
	for _, id := range s.free {
		inFree[id] = true
	}
	for sym, id := range s.ids {
		if got := s.syms[id]; inFree[id] || s.refs[id] == 0 || got != sym {
			t.Fatalf("id %d of %q: free %v, refs %d, symbol %q", id, sym, inFree[id], s.refs[id], got)
		}
	}
	if len(s.ids)+len(s.free) != len(s.refs) {
		t.Fatalf("%d ids in use and %d free of %d", len(s.ids), len(s.free), len(s.refs))
	}
	runtime.KeepAlive(held)
}

// Labels that share a name or a value (job="job") are symbols of their
// own; a label two series have is one symbol held twice; labels read one
// at a time.
func TestSymbolsSharedString(t *testing.T) {
	ix := newIndex()
	lset := labels.FromStrings("__name__", "job", "job", "job", "x", "__name__")
	ms := newMemSeries(1, 0)
	ix.add(ms, lset)
	other := newMemSeries(2, 0)
	ix.add(other, labels.FromStrings("__name__", "job", "y", "1"))
	if got := ix.labels(nil, ms); !labels.Equal(got, lset) {
		t.Fatalf("read %s, want %s", got, lset)
	}
	name := string(AppendLabelPair(nil, []byte("__name__"), []byte("job")))
	if len(ix.syms.refs) != 4 || ix.syms.refs[ix.syms.ids[name]] != 2 || len(ms.syms) != 3 {
		t.Fatalf("refs %v of ids %v, ids %q: want 4 symbols, __name__=job held twice, 3 ids", ix.syms.refs, ix.syms.ids, ms.syms)
	}
	for _, c := range [][2]string{{"__name__", "job"}, {"job", "job"}, {"x", "__name__"}, {"y", ""}} {
		if got := ix.syms.get(ms.syms, c[0]); got != c[1] {
			t.Fatalf("get %q = %q, want %q", c[0], got, c[1])
		}
	}
	if !ix.syms.equal(ms.syms, lset) || ix.syms.equal(ms.syms, labels.FromStrings("__name__", "job", "job", "job")) {
		t.Fatal("equal: wrong answer")
	}
	ix.remove(ms)
	ms = nil
	runtime.GC()
	ix.syms.sweep()
	if len(ix.syms.ids) != 2 || len(ix.syms.free) != 2 || ix.syms.refs[ix.syms.ids[name]] != 1 {
		t.Fatalf("after the sweep: ids %v, free %v, refs %v", ix.syms.ids, ix.syms.free, ix.syms.refs)
	}
	if got, want := ix.labels(nil, other), labels.FromStrings("__name__", "job", "y", "1"); !labels.Equal(got, want) {
		t.Fatalf("the other series reads %s, want %s", got, want)
	}
}

// A store's reads build label sets from the symbols allChunk series at a
// time: every series of a query wider than that comes back once, sorted,
// with its own labels; SeriesInRange and Series agree.
func TestSymbolsSelectSorted(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	const n = 3*allChunk + 7
	want := map[string]bool{}
	var batch []SeriesSamples
	for i := range n {
		// Created out of label order, so id order is not the answer.
		lset := labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%05d", (i*7919)%n), "job", "node")
		want[lset.String()] = true
		batch = append(batch, SeriesSamples{Labels: lset, Samples: []Sample{{T: 1000, V: float64(i)}}})
	}
	mustAppend(t, s, batch)
	ctx := context.Background()
	m := labels.MustNewMatcher(labels.MatchEqual, "job", "node")
	ss := s.Select(ctx, 0, 2000, m)
	var got []labels.Labels
	for ss.Next() {
		got = append(got, ss.At().Labels())
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	series, err := s.Series(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	inRange, err := s.SeriesInRange(ctx, 0, 2000, m)
	if err != nil {
		t.Fatal(err)
	}
	for name, ls := range map[string][]labels.Labels{"Select": got, "Series": series, "SeriesInRange": inRange} {
		if len(ls) != n {
			t.Fatalf("%s: %d series, want %d", name, len(ls), n)
		}
		for i, l := range ls {
			if !want[l.String()] || (i > 0 && labels.Compare(ls[i-1], l) >= 0) {
				t.Fatalf("%s: series %d is %s after %s: unknown or out of order", name, i, l, ls[max(i-1, 0)])
			}
		}
	}
}

// Rejected samples are all counted, and the first maxResultErrors are
// described with their series' labels.
func TestRejectionsDescribedOnce(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxFuture: 10 * time.Minute})
	defer s.Close()
	lset := labels.FromStrings("__name__", "m", "a", "1")
	now := time.Now().UnixMilli()
	mustAppend(t, s, []SeriesSamples{{Labels: lset, Samples: []Sample{{T: now, V: 1}}}})
	var old []Sample
	for i := range 20 {
		old = append(old, Sample{T: now + 400*24*3600*1000 + int64(i), V: 2}) // far ahead of the clock
	}
	res, err := s.Commit(context.Background(), &Batch{Series: []SeriesData{{Labels: lset, Samples: old}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples.Rejected != 20 || res.Reasons[ReasonOutOfBounds] != 20 || len(res.Errors) != maxResultErrors {
		t.Fatalf("rejected %d, reasons %v, %d errors: want 20, 20 out of bounds, %d errors", res.Samples.Rejected, res.Reasons, len(res.Errors), maxResultErrors)
	}
	for _, e := range res.Errors {
		if !errors.Is(e, ErrOutOfBounds) || !strings.Contains(e.Error(), lset.String()) {
			t.Fatalf("error %q: want ErrOutOfBounds naming %s", e, lset)
		}
	}
}
