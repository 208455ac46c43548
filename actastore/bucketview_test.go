package actastore

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// A query view over two writers' prefixes: series only one writer holds,
// and a series both hold (an HA pair: the same samples, plus samples only
// one has), merged into one, bit for bit; label look-ups over both; a
// refresh sees a newer upload; the retention horizon hides expired files.
func TestBucketViewMergesWriters(t *testing.T) {
	srv := s3test.Shared(t, "view")
	clk := &fakeClock{}
	shared := seriesLabels(1)
	var stores []*Store
	exp := want{}
	for w, inst := range []string{"writer-a", "writer-b"} {
		s := openT(t, t.TempDir(), tierTestOptions(t, clk, srv, "view", inst, nil))
		defer s.Close()
		stores = append(stores, s)
		own := seriesLabels(10 + w)
		// The shared series: both write 00:00-02:00 with the same values;
		// writer-b also 02:00-03:00, writer-a skips 01:00-02:00's odd minutes.
		val := func(i int, ts int64) float64 { return float64(ts/1000) * 1.5 }
		got := ingest(t, s, clk, []labels.Labels{own}, day0, day0+3*hour, 120, func(int, int64) float64 { return float64(w + 7) })
		exp[own.String()] = got[own.String()]
		to := day0 + 2*hour
		if w == 1 {
			to = day0 + 3*hour
		}
		ingest(t, s, clk, []labels.Labels{shared}, day0, to, 120, val)
	}
	for ts := day0; ts < day0+3*hour; ts += step15 {
		exp.add(shared, Sample{T: ts, V: float64(ts/1000) * 1.5})
	}
	clk.Set(day0 + 8*hour) // the newest files are idle past their period and its grace: uploaded too
	for _, s := range stores {
		s.Maintain()
		if res, err := s.TierCycle(); err != nil || res.Uploaded == 0 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	v, err := OpenBucketView(BucketViewOptions{Client: srv.Client(t, "view"), Layout: bucket.Layout{Prefix: "t"}, CacheDir: t.TempDir(),
		RefreshInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	insts, series, _, at, err := v.Stats()
	if err != nil || insts != 2 || series != 3 || at.IsZero() {
		t.Fatalf("view: %d instances, %d series, refreshed %v, %v", insts, series, at, err)
	}
	got := want{}
	ss := v.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for ss.Next() {
		it := ss.At().Iterator()
		for it.Next() {
			ts, val := it.At()
			got.add(ss.At().Labels(), Sample{T: ts, V: val})
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	checkWant(t, got, exp)
	names, _ := v.LabelValues(context.Background(), "instance")
	if len(names) != 3 {
		t.Fatalf("instance values %v", names)
	}
	// The horizon hides what it expires, at the next refresh.
	h := bucket.Horizon{MinTime: day0 + 2*hour, Owner: "test"}
	b, _ := json.Marshal(h)
	srv.Client(t, "view").PutBytes(context.Background(), bucket.Layout{Prefix: "t"}.RetentionKey(), b)
	if err := v.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = want{}
	ss = v.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "instance", shared.Get("instance")))
	for ss.Next() {
		it := ss.At().Iterator()
		for it.Next() {
			ts, val := it.At()
			got.add(ss.At().Labels(), Sample{T: ts, V: val})
		}
	}
	checkWantRange(t, got, want{shared.String(): exp[shared.String()]}, day0+2*hour)
}

// A view of a bucket that cannot be read yet opens empty and fills at the
// first refresh that works.
func TestBucketViewBucketDown(t *testing.T) {
	srv := s3test.Start(t, "view-down")
	c := srv.Client(t, "view-down")
	srv.Stop()
	v, err := OpenBucketView(BucketViewOptions{Client: c, CacheDir: t.TempDir(), RefreshInterval: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, n, _, at, err := v.Stats(); n != 0 || !at.IsZero() || err == nil {
		t.Fatalf("a down bucket: %d series, refreshed %v, err %v", n, at, err)
	}
	srv.Start()
	st := bucket.NewState()
	lx := labels.FromStrings("__name__", "x")
	st.Series[5] = lx
	c.PutBytes(context.Background(), bucket.Layout{}.IndexKey("w", 1, true), bucket.EncodeIndex(1, true, st.Records()))
	if err := v.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, _, at, err := v.Stats(); at.IsZero() || err != nil || time.Since(at) > time.Minute {
		t.Fatalf("after the bucket came back: refreshed %v, %v", at, err)
	}
}
