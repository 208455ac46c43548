package main

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
	"github.com/acta-remote/acta-remote/rotation"
)

// TestTailCatchesUpAfterTruncation drives the tailer over a real store
// (in this process, so the interleaving is exact): between two cycles the
// store takes samples of both kinds that cross an hour (so their later
// part goes to a new file), flushes them, and deletes the WAL segment
// holding them; then it takes newer samples that only the WAL holds. No
// rescan is due, so only the truncation tells the tailer to list the
// files. Every sample must print once, in order: the deleted segment's
// from the files (the new file included), the newer ones from the WAL.
// A later flush of those prints nothing again.
func TestTailCatchesUpAfterTruncation(t *testing.T) {
	dir := t.TempDir()
	st, err := actastore.Open(dir, actastore.Options{BlockRows: 1000, MaxHeadAge: time.Hour,
		Rotation: rotation.Policy{Period: time.Hour}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := labels.FromStrings("__name__", "c_metric", "job", "a")
	b := labels.FromStrings("__name__", "c_hist", "job", "b")
	hour := time.Now().Add(-3*time.Hour).Truncate(time.Hour).UnixMilli() + 3600_000
	cases := histtest.Cases(0)
	hsrc := cases[len(cases)-5].Samples // fh_gauge: float histograms
	wantF, wantH := dataset{}, hdataset{}
	// commit stores floats and histograms at the minutes given (relative
	// to the hour boundary).
	commit := func(minutes ...int) {
		t.Helper()
		var bt actastore.Batch
		var fs []actastore.Sample
		var hs []actastore.HistogramSample
		for _, m := range minutes {
			ts := hour + int64(m)*60_000
			v := float64(m) + 0.5
			if m%4 == 0 {
				v = math.Float64frombits(0x7ff0000000000002)
			}
			fs = append(fs, actastore.Sample{T: ts, V: v})
			h := hsrc[(m+100)%len(hsrc)]
			hs = append(hs, histfile.Sample{T: ts, FH: h.FH.Copy()})
		}
		bt.Add(a, fs, nil, nil)
		bt.Add(b, nil, hs, nil)
		res, err := st.Commit(context.Background(), &bt)
		if err != nil || res.Rejected() != 0 {
			t.Fatalf("commit: %+v %v", res, err)
		}
		for _, s := range fs {
			wantF[a.String()] = append(wantF[a.String()], sample{s.T, s.V})
		}
		wantH[b.String()] = append(wantH[b.String()], hs...)
	}
	commit(-10, -9, -8)
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	commit(-7, -6) // in the WAL only

	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "c_.*")}
	tl, out := followTail(t, dir, ms)
	check := func(what string) {
		t.Helper()
		gotF, gotH := parseJSONAll(t, out.String())
		sameData(t, what, gotF, wantF)
		sameHists(t, what, gotH, wantH)
	}
	check("history")
	if len(tl.order) != 2 || len(tl.order[0].fl.files)+len(tl.order[0].hs.files)+len(tl.order[1].fl.files)+len(tl.order[1].hs.files) != 2 {
		t.Fatalf("following %d series, want 2 with one open file each", len(tl.order))
	}

	commit(-2, -1, 0, 1) // crosses the hour: a new file of each kind
	tr := tl.ro.Truncations()
	if err := st.FlushAll(); err != nil { // flush, cut, delete the segment
		t.Fatal(err)
	}
	commit(2, 3) // only in the WAL's new segment
	tl.rescanDue = false
	if err := tl.cycle(false); err != nil {
		t.Fatal(err)
	}
	if tl.ro.Truncations() == tr {
		t.Fatal("the WAL truncation went unseen")
	}
	check("after the truncation")
	if tl.printed != 2*6 {
		t.Errorf("printed %d new samples, want 12", tl.printed)
	}

	// The WAL-only samples reach the files, and a rescan reads them there:
	// nothing prints again.
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	tl.rescanDue = true
	if err := tl.cycle(false); err != nil {
		t.Fatal(err)
	}
	check("after the last flush")
	if tl.printed != 12 {
		t.Errorf("printed %d new samples after the flush, want 12", tl.printed)
	}
	tl.close()
}

// followTail opens a read-only view of dir for ms and a tailer printing
// JSON lines into out, and runs its first cycle, as `tail` starts.
func followTail(t *testing.T, dir string, ms []*labels.Matcher) (tl *tailer, out *bytes.Buffer) {
	t.Helper()
	ro, err := actastore.OpenReadOnlyFor(dir, ms...)
	if err != nil {
		t.Fatal(err)
	}
	out = &bytes.Buffer{}
	tl = &tailer{ro: ro, ms: ms, p: printer{w: out, json: true, inline: true}, series: map[uint64]*followed{}}
	tl.discover(math.MinInt64)
	if err := tl.cycle(true); err != nil {
		t.Fatal(err)
	}
	return tl, out
}
