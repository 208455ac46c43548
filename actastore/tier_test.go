package actastore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/bucket/s3test"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/rotation"
)

// tierTestOptions are a store with hourly files and a tier on srv's
// bucket under prefix "t", cycles run by the test (TierCycle).
func tierTestOptions(t testing.TB, clk *fakeClock, srv *s3test.Server, bkt, inst string, reg *prometheus.Registry) Options {
	cfg := srv.Config(bkt)
	if reg != nil {
		cfg.Registerer = reg
	}
	c, err := bucket.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Now: clk.Now, MaintenanceInterval: -1, Rotation: rotation.Policy{Period: time.Hour}, Logger: quiet,
		Tier: &TierOptions{Client: c, Layout: bucket.Layout{Prefix: "t"}, Instance: inst, UploadInterval: -1, DeleteDelay: time.Second}}
	if reg != nil {
		o.Registerer = reg
	}
	return o
}

// metricValue is a counter, gauge or histogram sum (with its count) from reg.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, lbl ...string) (v float64, count uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(lbl); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == lbl[i] && lp.GetValue() == lbl[i+1])
				}
				if !found {
					continue next
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), 0
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), 0
			case dto.MetricType_HISTOGRAM:
				return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0, 0
}

// tierIngest writes 20 float series (a stale marker now and then) and
// native histograms over 4 hours from day0: 4 hourly files a series.
func tierIngest(t *testing.T, s *Store, clk *fakeClock) (want, []histtest.Series) {
	t.Helper()
	var lsets []labels.Labels
	for i := 0; i < 20; i++ {
		lsets = append(lsets, seriesLabels(i))
	}
	w := ingest(t, s, clk, lsets, day0, day0+4*hour, 60, func(i int, ts int64) float64 {
		if ts%(97*step15) == 0 {
			return math.Float64frombits(0x7ff0000000000002)
		}
		return float64(ts%100003)/8 + float64(i)
	})
	var cases []histtest.Series
	for h := int64(0); h < 4; h++ {
		c := histtest.Cases(day0 + h*hour + 60000)
		for i := range c {
			if len(cases) <= i {
				cases = append(cases, c[i])
			} else {
				cases[i].Samples = append(cases[i].Samples, c[i].Samples...)
			}
		}
		clk.Set(day0 + (h+1)*hour - 1000)
		if _, err := appendExtras(context.Background(), s, histBatch(c)); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushAll(); err != nil {
			t.Fatal(err)
		}
	}
	return w, cases
}

// localFiles counts the series files of both kinds on disk.
func localFiles(t *testing.T, dir string) int {
	n := 0
	for _, d := range []string{seriesDirName, histDirName} {
		filepath.WalkDir(filepath.Join(dir, d), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if _, _, ok := parseSeriesFileName(e.Name()); ok {
					n++
				}
			}
			return nil
		})
	}
	return n
}

// Sealed, compacted files are uploaded, verified and published; their
// local copies go; every float sample and histogram reads back bit for bit
// from the bucket (fetching only the blocks of the range asked), also
// after a restart that learns the bucket-only files from the manifest
// alone; the bucket's index alone names every file and series.
func TestTierUploadAndReadFromBucket(t *testing.T) {
	srv := s3test.Shared(t, "tier-basic")
	clk := &fakeClock{}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	s := openT(t, dir, tierTestOptions(t, clk, srv, "tier-basic", "w1", reg))
	w, cases := tierIngest(t, s, clk)
	clk.Set(day0 + 4*hour + 30*60000)
	if _, err := s.Maintain(); err != nil { // compaction marks sealed files done
		t.Fatal(err)
	}
	before := localFiles(t, dir)
	res, err := s.TierCycle()
	if err != nil {
		t.Fatal(err)
	}
	// 20 float series and the histogram series, 3 sealed files each (the
	// 4th, 03:00-04:00, is the newest and stays).
	nHist := len(cases)
	if res.Uploaded != 3*(20+nHist) || !res.Published || res.LocalDeleted != res.Uploaded {
		t.Fatalf("cycle %+v; want %d uploaded, published, all deleted locally", res, 3*(20+nHist))
	}
	if after := localFiles(t, dir); after != before-res.Uploaded || after != 20+nHist {
		t.Fatalf("%d local files after the cycle, %d before; want the %d newest", after, before, 20+nHist)
	}
	ms := seriesOf(s, seriesLabels(3))
	ms.mu.Lock()
	if n := len(ms.floats.files()); n != 4 {
		t.Fatalf("the track lists %d files, want 4 (3 in the bucket only)", n)
	}
	ms.mu.Unlock()
	floatsOnly := labels.MustNewMatcher(labels.MatchRegexp, "job", "j[0-9]")
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64, floatsOnly), w)
	checkHistogramSamples(t, "from the bucket", s, cases)
	fetched, n := metricValue(t, reg, "acta_tier_query_fetched_bytes")
	if fetched == 0 || n == 0 {
		t.Fatalf("fetched %.0f bytes over %d selects", fetched, n)
	}
	// The newest hour is local: a Select of it fetches nothing.
	selectAll(t, s, day0+3*hour, day0+4*hour)
	if again, _ := metricValue(t, reg, "acta_tier_query_fetched_bytes"); again != fetched {
		t.Fatalf("a Select of local data fetched %.0f bytes", again-fetched)
	}
	// One series, one hour in the bucket: only that file's block.
	one := selectAll(t, s, day0+hour, day0+2*hour-1, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-3"))
	if len(one) != 1 || len(one[seriesLabels(3).String()]) != 240 {
		t.Fatalf("one series, one hour: %d series", len(one))
	}
	if got, _ := metricValue(t, reg, "acta_tier_query_fetched_bytes"); got-fetched <= 0 || got-fetched > 8<<10 {
		t.Fatalf("one series-hour fetched %.0f bytes", got-fetched)
	}
	// What the bucket alone says.
	st, err := s.tier.c.LoadState(context.Background(), bucket.Layout{Prefix: "t"}, "w1", nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != res.Uploaded || !labels.Equal(st.Series[ms.ref], seriesLabels(3)) {
		t.Fatalf("bucket index: %d files, series %v", len(st.Files), st.Series[ms.ref])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reg2 := prometheus.NewRegistry()
	s2 := openT(t, dir, tierTestOptions(t, clk, srv, "tier-basic", "w1", reg2))
	defer s2.Close()
	if b, _ := metricValue(t, reg2, "acta_bucket_read_bytes_total", "purpose", "discovery"); b != 0 {
		t.Fatalf("Open read %.0f bytes from the bucket", b)
	}
	checkWant(t, selectAll(t, s2, math.MinInt64, math.MaxInt64, floatsOnly), w)
	checkHistogramSamples(t, "after a restart", s2, cases)
	if b, _ := metricValue(t, reg2, "acta_bucket_block_index_cache_misses_total"); b != 0 {
		t.Fatalf("%.0f block indexes were not cached", b)
	}
	// The restart publishes a full index again; nothing is uploaded twice.
	res, err = s2.TierCycle()
	if err != nil || res.Uploaded != 0 || !res.Published {
		t.Fatalf("cycle after a restart: %+v, %v", res, err)
	}
}

// The bucket down: ingest, flushes, rotation and reads of local data go
// on; the cycle fails and backs off, the lag grows, nothing local is
// deleted; a read of a bucket-only file fails naming its object. When the
// bucket is back, the uploads resume and every sample reads back.
func TestTierBucketDown(t *testing.T) {
	srv := s3test.Start(t, "tier-down")
	clk := &fakeClock{}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	s := openT(t, dir, tierTestOptions(t, clk, srv, "tier-down", "w1", reg))
	defer s.Close()
	var lsets []labels.Labels
	for i := 0; i < 5; i++ {
		lsets = append(lsets, seriesLabels(i))
	}
	val := func(i int, ts int64) float64 { return float64(ts/1000) + float64(i)/4 }
	w := ingest(t, s, clk, lsets, day0, day0+2*hour, 60, val)
	clk.Set(day0 + 2*hour + 60000)
	s.Maintain()
	if res, err := s.TierCycle(); err != nil || res.Uploaded != 5 {
		t.Fatalf("first cycle: %+v %v", res, err)
	}
	srv.Stop()
	w2 := ingest(t, s, clk, lsets, day0+2*hour, day0+4*hour, 60, val)
	for k, v := range w2 {
		w[k] = append(w[k], v...)
	}
	clk.Set(day0 + 4*hour + 60000)
	s.Maintain()
	local := localFiles(t, dir)
	res, err := s.TierCycle()
	if err == nil || res.Uploaded != 0 || res.LocalDeleted != 0 {
		t.Fatalf("cycle with the bucket down: %+v, %v", res, err)
	}
	if localFiles(t, dir) != local {
		t.Fatal("a local file was deleted while the bucket was down")
	}
	if f, _ := metricValue(t, reg, "acta_tier_consecutive_failed_cycles"); f != 1 {
		t.Fatalf("failed cycles %v", f)
	}
	if lag, _ := metricValue(t, reg, "acta_tier_upload_lag_seconds"); lag < 3600 {
		t.Fatalf("lag %.0f s with two sealed hours waiting", lag)
	}
	if s.tier.wait() > 2*time.Second {
		t.Fatalf("first backoff %v", s.tier.wait())
	}
	// Local data reads; the bucket-only first hour fails naming its object.
	checkWantRange(t, selectAll(t, s, day0+hour, math.MaxInt64), w, day0+hour)
	ss := s.Select(context.Background(), day0, day0+hour-1, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-1"))
	for ss.Next() {
	}
	if err := ss.Err(); err == nil || !strings.Contains(err.Error(), "s3://tier-down/t/w1/series/") {
		t.Fatalf("read of a bucket-only file with the bucket down: %v", err)
	}
	srv.Start()
	// The next cycles resume: every file waiting is uploaded once.
	uploaded, deleted := 0, 0
	for i := 0; ; i++ {
		res, err = s.TierCycle()
		uploaded, deleted = uploaded+res.Uploaded, deleted+res.LocalDeleted
		if err == nil {
			break
		}
		if i == 10 {
			t.Fatalf("cycles with the bucket back keep failing: %v", err)
		}
		time.Sleep(s.tier.wait())
	}
	if uploaded != 10 || deleted != 10 {
		t.Fatalf("with the bucket back: %d uploaded, %d deleted locally; want 10 and 10", uploaded, deleted)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if f, _ := metricValue(t, reg, "acta_tier_consecutive_failed_cycles"); f != 0 {
		t.Fatalf("failed cycles %v after a good one", f)
	}
}

// checkWantRange is checkWant of the samples at or after from.
func checkWantRange(t *testing.T, got, exp want, from int64) {
	t.Helper()
	cut := want{}
	for k, v := range exp {
		for _, s := range v {
			if s.T >= from {
				cut[k] = append(cut[k], s)
			}
		}
	}
	checkWant(t, got, cut)
}

// A file rewritten after its upload (DeleteSeries of part of it) is
// restored from the bucket, rewritten, uploaded again under its new CRC;
// the index names the new object, and the old one is deleted after the
// delete delay. A file wholly inside the deleted range goes without a
// download, its object too. A late sample for an uploaded, idle newest
// file brings it back locally and is uploaded again.
func TestTierRewrittenFiles(t *testing.T) {
	srv := s3test.Shared(t, "tier-rewrite")
	clk := &fakeClock{}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	s := openT(t, dir, tierTestOptions(t, clk, srv, "tier-rewrite", "w1", reg))
	defer s.Close()
	lsets := []labels.Labels{seriesLabels(1), seriesLabels(2)}
	w := ingest(t, s, clk, lsets, day0, day0+3*hour, 60, func(i int, ts int64) float64 { return float64(ts) + float64(i) })
	clk.Set(day0 + 3*hour + 60000)
	s.Maintain()
	if res, err := s.TierCycle(); err != nil || res.Uploaded != 4 {
		t.Fatalf("%+v %v", res, err)
	}
	objects := func() map[string]bool {
		m := map[string]bool{}
		s.tier.c.List(context.Background(), "t/w1/series/", true, func(o bucket.ObjectInfo) error { m[o.Key] = true; return nil })
		return m
	}
	before := objects()
	m1 := labels.MustNewMatcher(labels.MatchEqual, "instance", "host-1")
	// host-1: drop 00:30-01:30 (half of two bucket-only files); host-2:
	// all of 00:00-01:00 (a whole bucket-only file).
	if _, err := s.DeleteSeries(context.Background(), day0+30*60000, day0+90*60000-1, m1); err != nil {
		t.Fatal(err)
	}
	m2 := labels.MustNewMatcher(labels.MatchEqual, "instance", "host-2")
	if _, err := s.DeleteSeries(context.Background(), day0, day0+hour-1, m2); err != nil {
		t.Fatal(err)
	}
	if r, _ := metricValue(t, reg, "acta_tier_restored_files_total"); r != 2 {
		t.Fatalf("restored %v files, want host-1's two", r)
	}
	exp := want{}
	for k, v := range w {
		for _, smp := range v {
			if (k == seriesLabels(1).String() && smp.T >= day0+30*60000 && smp.T < day0+90*60000) ||
				(k == seriesLabels(2).String() && smp.T < day0+hour) {
				continue
			}
			exp[k] = append(exp[k], smp)
		}
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), exp)
	s.Maintain() // the rewritten files are compacted again: final
	res, err := s.TierCycle()
	if err != nil || res.Uploaded != 2 || res.Removed != 1 {
		t.Fatalf("cycle after the deletions: %+v %v", res, err)
	}
	time.Sleep(1100 * time.Millisecond) // the delete delay
	if _, err := s.TierCycle(); err != nil {
		t.Fatal(err)
	}
	after := objects()
	gone, kept := 0, 0
	for k := range before {
		if after[k] {
			kept++
		} else {
			gone++
		}
	}
	if gone != 3 || kept != 1 || len(after) != 3 {
		t.Fatalf("objects: %d of %d old ones deleted, %d kept, %d now; want 3, 1, 3", gone, len(before), kept, len(after))
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), exp)
	st, _ := s.tier.c.LoadState(context.Background(), bucket.Layout{Prefix: "t"}, "w1", nil, 1<<20)
	for id, f := range st.Files {
		if !after[bucket.Layout{Prefix: "t"}.FileKey("w1", id.Kind, id.Ref, id.Start, f.CRC)] {
			t.Fatalf("the index names a deleted object: %+v", f)
		}
	}
	if len(st.Files) != 3 {
		t.Fatalf("the index names %d files, want 3", len(st.Files))
	}
}

// A damaged object: the query reading it fails naming the object's key,
// other series read fine.
func TestTierCorruptObject(t *testing.T) {
	srv := s3test.Shared(t, "tier-corrupt")
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierTestOptions(t, clk, srv, "tier-corrupt", "w1", nil))
	defer s.Close()
	lsets := []labels.Labels{seriesLabels(1), seriesLabels(2)}
	w := ingest(t, s, clk, lsets, day0, day0+2*hour, 240, func(i int, ts int64) float64 { return float64(ts) * float64(i+1) })
	clk.Set(day0 + 2*hour + 60000)
	s.Maintain()
	if res, err := s.TierCycle(); err != nil || res.Uploaded != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	ms := seriesOf(s, seriesLabels(1))
	s.tier.mu.Lock()
	f := s.tier.files[bucket.FileID{Kind: bucket.KindFloat, Ref: ms.ref, Start: day0}].File
	s.tier.mu.Unlock()
	key := s.tier.key(f)
	ctx := context.Background()
	b, err := s.tier.c.Get(ctx, key, f.Size, "test")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-100] ^= 0x08 // inside the last block's payload
	if err := s.tier.c.PutBytes(ctx, key, b); err != nil {
		t.Fatal(err)
	}
	s.readers.closeAll()
	ss := s.Select(ctx, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-1"))
	for ss.Next() {
	}
	err = ss.Err()
	if err == nil || !strings.Contains(err.Error(), "s3://tier-corrupt/"+key) {
		t.Fatalf("query of a damaged object: %v, want an error naming s3://tier-corrupt/%s", err, key)
	}
	if !errors.Is(err, acta.ErrCorrupt) {
		t.Fatalf("not reported as corruption: %v", err)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "instance", "host-2")),
		want{seriesLabels(2).String(): w[seriesLabels(2).String()]})
}

// Bucket retention owned by this writer: the horizon is published, the
// writer drops the expired files from its series (a series left without
// files leaves the store), and their objects are deleted; a reader of
// the index after the writer's next cycle no longer sees them.
func TestTierBucketRetention(t *testing.T) {
	srv := s3test.Shared(t, "tier-ret")
	clk := &fakeClock{}
	dir := t.TempDir()
	o := tierTestOptions(t, clk, srv, "tier-ret", "w1", nil)
	o.Tier.RetentionOwner, o.Tier.RetentionMaxAge, o.Tier.RetentionInterval = true, 2*time.Hour, time.Nanosecond
	s := openT(t, dir, o)
	defer s.Close()
	old := []labels.Labels{seriesLabels(1)}
	ingest(t, s, clk, old, day0, day0+hour, 240, func(i int, ts int64) float64 { return 1 })
	live := []labels.Labels{seriesLabels(2)}
	w := ingest(t, s, clk, live, day0, day0+5*hour, 240, func(i int, ts int64) float64 { return float64(ts) })
	clk.Set(day0 + 5*hour + 3*hour) // host-1's only file is idle past its period: uploaded too
	s.Maintain()
	// host-1's only file and host-2's four sealed ones (its newest,
	// 04:00-05:00, is idle but within the grace of its period's end).
	if res, err := s.TierCycle(); err != nil || res.Uploaded != 5 {
		t.Fatalf("%+v %v", res, err)
	}
	// The next cycles: the horizon (now-2h = 06:00) expires every
	// uploaded file; host-2's newest is not uploaded and stays.
	if _, err := s.TierCycle(); err != nil {
		t.Fatal(err)
	}
	res, err := s.TierCycle()
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	if seriesOf(s, seriesLabels(1)) != nil {
		t.Fatal("host-1 is still in the store with all its files expired")
	}
	got := selectAll(t, s, math.MinInt64, math.MaxInt64)
	checkWantRange(t, got, want{seriesLabels(2).String(): w[seriesLabels(2).String()]}, day0+4*hour)
	h, err := s.tier.c.ReadHorizon(context.Background(), bucket.Layout{Prefix: "t"})
	if err != nil || h.MinTime != day0+6*hour || h.Owner != "w1" {
		t.Fatalf("horizon %+v %v", h, err)
	}
	st, _ := s.tier.c.LoadState(context.Background(), bucket.Layout{Prefix: "t"}, "w1", nil, 1<<20)
	if len(st.Files) != 0 {
		t.Fatalf("the index still names %d expired files", len(st.Files))
	}
	// Their objects go a delete delay after that index.
	time.Sleep(1100 * time.Millisecond)
	if _, err := s.TierCycle(); err != nil {
		t.Fatal(err)
	}
	n := 0
	s.tier.c.List(context.Background(), "t/w1/series/", true, func(bucket.ObjectInfo) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d objects of expired files are left", n)
	}
}

// A new data directory with the instance ID of a prefix that holds index
// objects refuses to publish (it would hide that prefix's files), with a
// metric and an error naming the key to change; ingest is unaffected.
func TestTierRefusesForeignPrefix(t *testing.T) {
	srv := s3test.Shared(t, "tier-foreign")
	clk := &fakeClock{}
	s := openT(t, t.TempDir(), tierTestOptions(t, clk, srv, "tier-foreign", "w1", nil))
	ingest(t, s, clk, []labels.Labels{seriesLabels(1)}, day0, day0+2*hour, 240, func(int, int64) float64 { return 2 })
	clk.Set(day0 + 2*hour + 60000)
	s.Maintain()
	if _, err := s.TierCycle(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	reg := prometheus.NewRegistry()
	s2 := openT(t, t.TempDir(), tierTestOptions(t, clk, srv, "tier-foreign", "w1", reg))
	defer s2.Close()
	ingest(t, s2, clk, []labels.Labels{seriesLabels(2)}, day0, day0+2*hour, 240, func(int, int64) float64 { return 3 })
	s2.Maintain()
	_, err := s2.TierCycle()
	if err == nil || !strings.Contains(err.Error(), "storage.object_store.instance_id") {
		t.Fatalf("a second data directory under the same instance ID: %v", err)
	}
	if b, _ := metricValue(t, reg, "acta_tier_publishing_blocked"); b != 1 {
		t.Fatal("not reported by acta_tier_publishing_blocked")
	}
	st, _ := s2.tier.c.LoadState(context.Background(), bucket.Layout{Prefix: "t"}, "w1", nil, 1<<20)
	if len(st.Files) != 1 {
		t.Fatalf("the first writer's index names %d files, want its 1", len(st.Files))
	}
}

// The read-only view (acta-remote query) of a directory whose files went
// to the bucket: without the bucket it counts what it leaves out; with it
// every sample reads back bit for bit.
func TestTierReadOnlyView(t *testing.T) {
	srv := s3test.Shared(t, "tier-ro")
	clk := &fakeClock{}
	dir := t.TempDir()
	o := tierTestOptions(t, clk, srv, "tier-ro", "w1", nil)
	s := openT(t, dir, o)
	defer s.Close()
	l := seriesLabels(4)
	w := ingest(t, s, clk, []labels.Labels{l}, day0, day0+3*hour, 240, func(i int, ts int64) float64 { return float64(ts) / 3 })
	clk.Set(day0 + 3*hour + 60000)
	s.Maintain()
	if res, err := s.TierCycle(); err != nil || res.LocalDeleted != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	ro, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := seriesOf(s, l).ref
	if n := ro.BucketOnlyFiles(ref); n != 2 {
		t.Fatalf("%d bucket-only files, want 2", n)
	}
	local, err := ro.Samples(ref, math.MinInt64, math.MaxInt64)
	if err != nil || len(local) != 240 {
		t.Fatalf("without the bucket: %d samples (%v), want the newest file's 240", len(local), err)
	}
	if err := ro.UseBucket(o.Tier.Client, o.Tier.Layout, "w1"); err != nil {
		t.Fatal(err)
	}
	all, err := ro.Samples(ref, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if !equalBits(all, w[l.String()]) {
		t.Fatalf("with the bucket: %d samples, want %d", len(all), len(w[l.String()]))
	}
}

// Tier merges take local files only: runs holding a file whose local copy
// went after its upload are left as they are (not fetched back, merged and
// uploaded again), runs of local files merge, and every sample reads back
// bit for bit from both.
func TestTierMergesLocalFilesOnly(t *testing.T) {
	srv := s3test.Shared(t, "tier-merge")
	clk := &fakeClock{}
	dir := t.TempDir()
	s := openT(t, dir, tierTestOptions(t, clk, srv, "tier-merge", "w1", nil))
	w, cases := tierIngest(t, s, clk)
	clk.Set(day0 + 4*hour + 30*60000)
	if _, err := s.Maintain(); err != nil {
		t.Fatal(err)
	}
	if res, err := s.TierCycle(); err != nil || res.Uploaded == 0 || res.LocalDeleted != res.Uploaded {
		t.Fatalf("cycle %+v, %v; want the sealed files uploaded and deleted locally", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	o := tierTestOptions(t, clk, srv, "tier-merge", "w1", nil)
	o.Compaction.Tiers = rotation.Tiers{2 * time.Hour, 4 * time.Hour}
	s = openT(t, dir, o)
	defer s.Close()
	var lsets []labels.Labels
	for i := 0; i < 20; i++ {
		lsets = append(lsets, seriesLabels(i))
	}
	w2 := ingest(t, s, clk, lsets, day0+4*hour, day0+8*hour, 60, func(i int, ts int64) float64 { return float64(ts/1000 + int64(i)) })
	for k, v := range w2 {
		w[k] = append(w[k], v...)
	}
	clk.Set(day0 + 8*hour + 30*60000)
	res, err := s.Maintain()
	if err != nil || res.Errors != 0 {
		t.Fatalf("maintenance %+v, %v", res, err)
	}
	// Per float series: 04:00 and 05:00 merge; 00:00-02:00 exist only in
	// the bucket, so neither [00, 02), [02, 04) nor [00, 04) merges; 06:00
	// waits for 07:00, the newest.
	if res.Merged != 20 || res.MergedFiles != 40 {
		t.Fatalf("%d merges of %d files; want 20 of 40", res.Merged, res.MergedFiles)
	}
	ms := seriesOf(s, seriesLabels(3))
	ms.mu.Lock()
	got := slices.Clone(ms.floats.files())
	ms.mu.Unlock()
	if exp := []int64{day0, day0 + hour, day0 + 2*hour, day0 + 3*hour, day0 + 4*hour, day0 + 6*hour, day0 + 7*hour}; !slices.Equal(got, exp) {
		t.Fatalf("files %v, want %v", got, exp)
	}
	floatsOnly := labels.MustNewMatcher(labels.MatchRegexp, "job", "j[0-9]")
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64, floatsOnly), w)
	checkHistogramSamples(t, "after merges", s, cases)
}
