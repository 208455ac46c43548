package bucket_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// writeSeriesFile writes an Acta file of n blocks of rows (timestamp,
// value) and returns its bytes, its blocks and every value written.
func writeSeriesFile(t *testing.T, n, rows int) ([]byte, []acta.BlockInfo, [][]float64) {
	t.Helper()
	s, err := acta.NewSchema(1, []acta.Column{
		{ID: 1, Name: "timestamp", Type: acta.Timestamp(acta.Millisecond)},
		{ID: 2, Name: "value", Type: acta.Of(acta.TypeFloat64)},
	}, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.acta")
	w, err := acta.Create(path, s, acta.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var vals [][]float64
	next := int64(1750000000000)
	for b := 0; b < n; b++ {
		ts, vs := make([]int64, rows), make([]float64, rows)
		for i := range ts {
			ts[i] = next
			next += 15000
			vs[i] = float64(b*rows+i) * 1.25
			if i%17 == 3 {
				vs[i] = math.Float64frombits(0x7ff0000000000002) // stale marker
			}
		}
		if err := w.Append(&acta.Batch{Schema: s, Rows: rows, Columns: []acta.Array{
			&acta.FixedArray[int64]{Values: ts}, &acta.FixedArray[float64]{Values: vs}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		vals = append(vals, vs)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, _ := os.ReadFile(path)
	return data, append([]acta.BlockInfo(nil), r.Blocks()...), vals
}

func counter(t *testing.T, reg *prometheus.Registry, name string, lbl ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matchLabels(m, lbl) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matchLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == want[i] && lp.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// A bucket file read in place: the first open discovers its blocks with
// small ranged reads (far fewer bytes than the file), caches the block
// index, and a later open reads nothing before a block is read; a block
// read fetches exactly its frame; every value comes back bit for bit.
func TestOpenFileRangedReads(t *testing.T) {
	srv := s3test.Shared(t, "acta-obj")
	reg := prometheus.NewRegistry()
	cfg := srv.Config("acta-obj")
	cfg.Registerer = reg
	c, err := bucket.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, blocks, vals := writeSeriesFile(t, 40, 2000)
	ctx := context.Background()
	key := "p/w/series/00/0000000000000001-1750000000000-00000000.acta"
	if err := c.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	cache, err := bucket.OpenIndexCache(t.TempDir(), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.OpenFile(key, int64(len(data)), bucket.CRC32C(data), cache, acta.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	disc := counter(t, reg, "acta_bucket_read_bytes_total", "purpose", "discovery")
	if disc == 0 || disc > float64(len(data))/4 {
		t.Fatalf("discovery read %.0f bytes of a %d-byte file of %d blocks", disc, len(data), len(blocks))
	}
	if len(r.Blocks()) != len(blocks) {
		t.Fatalf("%d blocks, want %d", len(r.Blocks()), len(blocks))
	}
	if !strings.Contains(r.Path(), "s3://acta-obj/"+key) {
		t.Fatalf("reader named %q", r.Path())
	}
	r2, err := c.OpenFile(key, int64(len(data)), bucket.CRC32C(data), cache, acta.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if d := counter(t, reg, "acta_bucket_read_bytes_total", "purpose", "discovery"); d != disc {
		t.Fatalf("a cached open read %.0f discovery bytes", d-disc)
	}
	for _, i := range []int{0, 17, 39} {
		before := counter(t, reg, "acta_bucket_read_bytes_total", "purpose", "block")
		b, err := r2.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := counter(t, reg, "acta_bucket_read_bytes_total", "purpose", "block") - before; got != float64(blocks[i].Bytes) {
			t.Fatalf("block %d: fetched %.0f bytes, its frame is %d", i, got, blocks[i].Bytes)
		}
		got := b.Columns[1].(*acta.FixedArray[float64]).Values
		for k := range got {
			if math.Float64bits(got[k]) != math.Float64bits(vals[i][k]) {
				t.Fatalf("block %d row %d: %x, want %x", i, k, math.Float64bits(got[k]), math.Float64bits(vals[i][k]))
			}
		}
	}
}

// A damaged object is detected by the Acta checksums and reported naming
// its key, never served; the other blocks of the same object still read.
// A truncated object fails at open (discovery) or at the block it cuts.
func TestOpenFileDamagedObjects(t *testing.T) {
	srv := s3test.Shared(t, "acta-bad")
	c := srv.Client(t, "acta-bad")
	ctx := context.Background()
	data, blocks, _ := writeSeriesFile(t, 3, 500)
	bad := append([]byte(nil), data...)
	bad[blocks[1].Offset+blocks[1].Bytes/2] ^= 0x40
	if err := c.PutBytes(ctx, "bad.acta", bad); err != nil {
		t.Fatal(err)
	}
	for _, cached := range []bool{false, true} {
		var cache *bucket.IndexCache
		if cached {
			cache, _ = bucket.OpenIndexCache(t.TempDir(), 1<<20, nil)
			cache.Put("bad.acta", int64(len(bad)), bucket.CRC32C(data), data[:blocks[0].Offset], blocks)
		}
		r, err := c.OpenFile("bad.acta", int64(len(bad)), bucket.CRC32C(data), cache, acta.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadBlock(0); err != nil {
			t.Fatal(err)
		}
		_, err = r.ReadBlock(1)
		if !errors.Is(err, acta.ErrCorrupt) || !strings.Contains(err.Error(), "s3://acta-bad/bad.acta") {
			t.Fatalf("cached %v: damaged block: %v, want corruption naming the object", cached, err)
		}
		if _, err := r.ReadBlock(2); err != nil {
			t.Fatal(err)
		}
	}
	cut := data[:blocks[2].Offset+10]
	c.PutBytes(ctx, "cut.acta", cut)
	if _, err := c.OpenFile("cut.acta", int64(len(cut)), 0, nil, acta.Limits{}); !errors.Is(err, acta.ErrCorrupt) || !strings.Contains(err.Error(), "cut.acta") {
		t.Fatalf("truncated object: %v", err)
	}
	// The index says the full size, the object is shorter: the read of
	// the cut block fails naming the object.
	cache, _ := bucket.OpenIndexCache(t.TempDir(), 1<<20, nil)
	cache.Put("cut.acta", int64(len(data)), 7, data[:blocks[0].Offset], blocks)
	r, err := c.OpenFile("cut.acta", int64(len(data)), 7, cache, acta.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadBlock(2); !errors.Is(err, bucket.ErrShortRead) || !strings.Contains(err.Error(), "cut.acta") {
		t.Fatalf("cut block: %v", err)
	}
}

// Index objects in the bucket: a full one and deltas load into the state
// they describe; a later load applies only the new deltas; a newer full
// one replaces the state; a missing delta is an error and keeps the last
// good state.
func TestLoadState(t *testing.T) {
	srv := s3test.Shared(t, "acta-idx")
	c := srv.Client(t, "acta-idx")
	ctx := context.Background()
	l := bucket.Layout{Prefix: "pre"}
	lx := labels.FromStrings("__name__", "x")
	f := func(ref uint64, start int64, crc uint32) bucket.File {
		return bucket.File{FileID: bucket.FileID{Ref: ref, Start: start}, CRC: crc, Size: 100, MinT: start, MaxT: start + 10}
	}
	put := func(seq uint64, full bool, recs ...[]byte) {
		t.Helper()
		if err := c.PutBytes(ctx, l.IndexKey("w1", seq, full), bucket.EncodeIndex(seq, full, recs)); err != nil {
			t.Fatal(err)
		}
	}
	put(1, true, bucket.AppendSeries(nil, 1, lx), bucket.AppendFile(nil, f(1, 0, 1)))
	put(2, false, bucket.AppendFile(nil, f(1, 100, 2)))
	st, err := c.LoadState(ctx, l, "w1", nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seq != 2 || len(st.Files) != 2 || !labels.Equal(st.Series[1], lx) {
		t.Fatalf("state %+v", st)
	}
	put(3, false, bucket.AppendRemove(nil, f(1, 0, 1).FileID, 1))
	st, err = c.LoadState(ctx, l, "w1", st, 1<<20)
	if err != nil || st.Seq != 3 || len(st.Files) != 1 {
		t.Fatalf("after a delta: %+v %v", st, err)
	}
	put(4, true, bucket.AppendSeries(nil, 1, lx), bucket.AppendFile(nil, f(1, 500, 5)))
	st, err = c.LoadState(ctx, l, "w1", st, 1<<20)
	if err != nil || st.Seq != 4 || len(st.Files) != 1 || st.Files[bucket.FileID{Ref: 1, Start: 500}].CRC != 5 {
		t.Fatalf("after a full index: %+v %v", st, err)
	}
	put(6, false, bucket.AppendFile(nil, f(1, 900, 9)))
	st2, err := c.LoadState(ctx, l, "w1", st, 1<<20)
	if err == nil || st2.Seq != 4 {
		t.Fatalf("a gap: %v, state at %d", err, st2.Seq)
	}
	insts, err := c.ListInstances(ctx, l)
	if err != nil || len(insts) != 1 || insts[0] != "w1" {
		t.Fatalf("instances %v %v", insts, err)
	}
}

// Bucket retention: the horizon is published, only objects of files
// older than it by the delete delay go, under every instance prefix, and
// each once.
func TestRetention(t *testing.T) {
	srv := s3test.Shared(t, "acta-ret")
	c := srv.Client(t, "acta-ret")
	ctx := context.Background()
	l := bucket.Layout{Prefix: "r"}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	day := int64(24 * time.Hour / time.Millisecond)
	for _, inst := range []string{"a", "b"} {
		var recs [][]byte
		recs = append(recs, bucket.AppendSeries(nil, 1, labels.FromStrings("__name__", "m")))
		for d := int64(1); d <= 10; d++ {
			f := bucket.File{FileID: bucket.FileID{Ref: 1, Start: now.UnixMilli() - d*day}, CRC: uint32(d), Size: 3}
			f.MinT, f.MaxT = f.Start, f.Start+day-1
			recs = append(recs, bucket.AppendFile(nil, f))
			c.PutBytes(ctx, l.FileKey(inst, f.Kind, f.Ref, f.Start, f.CRC), []byte("abc"))
		}
		c.PutBytes(ctx, l.IndexKey(inst, 1, true), bucket.EncodeIndex(1, true, recs))
	}
	rt := c.NewRetainer(l, bucket.RetentionOptions{Owner: "a", MaxAge: 5 * 24 * time.Hour, DeleteDelay: 24 * time.Hour, MaxIndexRaw: 1 << 20})
	// The first run publishes the horizon; it deletes nothing: a reader
	// may not have seen any horizon yet.
	earlier := now.Add(-24 * time.Hour)
	res, err := rt.Run(ctx, earlier)
	if err != nil || res.Deleted != 0 || res.Expired != 8 {
		t.Fatalf("first run: %+v %v", res, err)
	}
	// A day later the horizon of the first run (now-6d) is DeleteDelay
	// old: the files that end before it go. The file of day d holds
	// [now-d days, now-(d-1) days): days 6..10 end before today's horizon
	// (now-5d), days 7..10 before the first run's too: 4 per instance.
	res, err = rt.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Expired != 10 || res.Deleted != 8 || res.Bytes != 24 {
		t.Fatalf("result %+v", res)
	}
	h, err := c.ReadHorizon(ctx, l)
	if err != nil || h.MinTime != now.Add(-5*24*time.Hour).UnixMilli() || h.Owner != "a" {
		t.Fatalf("horizon %+v %v", h, err)
	}
	for _, inst := range []string{"a", "b"} {
		n := 0
		c.List(ctx, l.InstanceRoot(inst)+"series/", true, func(bucket.ObjectInfo) error { n++; return nil })
		if n != 6 {
			t.Fatalf("instance %s keeps %d objects, want 6", inst, n)
		}
	}
	if res, err := rt.Run(ctx, now); err != nil || res.Deleted != 0 {
		t.Fatalf("a pass with nothing newly deletable deleted %d (%v)", res.Deleted, err)
	}
	// A new retainer (a restart) knows the last horizon from the bucket:
	// day 6 of both instances is older than it. (It deletes days 7..10
	// again: no writer dropped them from these indexes.)
	rt2 := c.NewRetainer(l, bucket.RetentionOptions{Owner: "a", MaxAge: 4 * 24 * time.Hour, DeleteDelay: 24 * time.Hour, MaxIndexRaw: 1 << 20})
	if res, err := rt2.Run(ctx, now.Add(24*time.Hour)); err != nil || res.Deleted != 10 {
		t.Fatalf("after a restart: deleted %d (%v), want 10", res.Deleted, err)
	}
	for _, inst := range []string{"a", "b"} {
		n := 0
		c.List(ctx, l.InstanceRoot(inst)+"series/", true, func(bucket.ObjectInfo) error { n++; return nil })
		if n != 5 {
			t.Fatalf("instance %s keeps %d objects, want 5", inst, n)
		}
	}
}
