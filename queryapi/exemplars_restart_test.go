package queryapi

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// TestExemplarsAfterCrashBetweenFlushAndTruncation holds the exemplars of
// a series exactly, each once, through /api/v1/query_exemplars, when the
// store stopped after its flush had written them into the exemplar file
// but before the WAL let go of them (kill -9 between the two): the replay
// brings them back from the WAL as well, and neither that answer nor the
// answers after the next flush and restart may list one twice.
func TestExemplarsAfterCrashBetweenFlushAndTruncation(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixMilli()
	series := labels.FromStrings("__name__", "requests_total", "job", "a")
	exs := []actastore.Exemplar{
		{Labels: labels.FromStrings("span_id", "00f067aa0ba902b7", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), Value: 2, T: now - 2000},
		{Labels: labels.FromStrings("span_id", "b7ad6b7169203331", "trace_id", "0af7651916cd43dd8448eb211c80319c"), Value: 3.5, T: now - 1000},
	}
	st, err := actastore.Open(filepath.Join(dir, "data"), actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b actastore.Batch
	b.Add(series, []actastore.Sample{{T: now - 2000, V: 2}, {T: now - 1000, V: 5.5}}, nil, exs)
	if res, err := st.Commit(ctx, &b); err != nil || res.Exemplars.Rejected != 0 {
		t.Fatalf("commit: %v %+v", err, res)
	}
	// The WAL as acknowledged (synced before Commit returned).
	copyTree(t, filepath.Join(dir, "data", "wal"), filepath.Join(dir, "wal-acked"))
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The directory as a kill -9 after the flush's file syncs and before
	// the WAL truncation leaves it: the files flushed, the old WAL, no
	// clean-shutdown marker.
	for _, name := range []string{"wal", "clean", "flushstate"} {
		if err := os.RemoveAll(filepath.Join(dir, "data", name)); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join(dir, "wal-acked"), filepath.Join(dir, "data", "wal"))

	for _, when := range []string{"after the crash", "after the flush of the replayed WAL and a restart", "after another restart"} {
		checkExemplarsOnce(t, when, filepath.Join(dir, "data"), nil, exs, now)
	}
}

// TestExemplarsResentAfterRestart: a sender resends the exemplars it holds
// to a restarted store (an OTLP exporter's cumulative reservoir does with
// every export); each is still listed once, also after they are flushed
// and the store restarts.
func TestExemplarsResentAfterRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	now := time.Now().UnixMilli()
	series := labels.FromStrings("__name__", "requests_total", "job", "a")
	exs := []actastore.Exemplar{
		{Labels: labels.FromStrings("span_id", "00f067aa0ba902b7", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), Value: 2, T: now - 2000},
	}
	send := func(st *actastore.Store, v float64, ts int64) {
		t.Helper()
		var b actastore.Batch
		b.Add(series, []actastore.Sample{{T: ts, V: v}}, nil, exs)
		if res, err := st.Commit(ctx, &b); err != nil || res.Exemplars.Rejected != 0 {
			t.Fatalf("commit: %v %+v", err, res)
		}
	}
	checkExemplarsOnce(t, "sent", dir, func(st *actastore.Store) { send(st, 2, now-2000) }, exs, now)
	checkExemplarsOnce(t, "resent after a restart", dir, func(st *actastore.Store) { send(st, 2, now-1000) }, exs, now)
	checkExemplarsOnce(t, "after the flush and a restart", dir, nil, exs, now)
}

// checkExemplarsOnce opens the store in dir, calls before (if not nil),
// asks /api/v1/query_exemplars for requests_total and closes the store (a
// flush). The answer must be want of {__name__="requests_total", job="a"},
// each once, in order.
func checkExemplarsOnce(t *testing.T, when, dir string, before func(*actastore.Store), want []actastore.Exemplar, now int64) {
	t.Helper()
	st, err := actastore.Open(dir, actastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(st)
	}
	_, c := serve(t, st, testOptions())
	res, err := c.QueryExemplars(ctx, `requests_total`, at(now-60_000), at(now))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res {
		for _, e := range s.Exemplars {
			got = append(got, s.SeriesLabels.String()+" "+model.LabelSet(e.Labels).String()+" "+e.Value.String()+" "+e.Timestamp.String())
		}
	}
	var wantLines []string
	for _, e := range want {
		ls := model.LabelSet{}
		e.Labels.Range(func(l labels.Label) { ls[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		wantLines = append(wantLines, `{__name__="requests_total", job="a"} `+ls.String()+" "+model.SampleValue(e.Value).String()+" "+model.Time(e.T).String())
	}
	if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("%s: exemplars\n  %s\nwant\n  %s", when, strings.Join(got, "\n  "), strings.Join(wantLines, "\n  "))
	}
	// Close flushes: what a replay or a resend brought back must not be written
	// into the exemplar file a second time.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
