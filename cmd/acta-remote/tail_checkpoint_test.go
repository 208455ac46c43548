package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// TestTailAcrossCheckpoint: tail reads the WAL, more samples are
// acknowledged, the server's WAL checkpoint deletes their segment before
// tail's next cycle, more samples follow: every sample prints once, those
// only the checkpoint held included, and a flush and rescan after prints
// nothing twice. (Found by review: they never printed, being behind the
// watermark by the time a file held them.)
func TestTailAcrossCheckpoint(t *testing.T) {
	dir := t.TempDir()
	st, err := actastore.Open(dir, actastore.Options{BlockRows: 1 << 16, MaxHeadAge: time.Hour,
		WALCheckpointBytes: 1, MaintenanceInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := labels.FromStrings("__name__", "c_metric")
	base := time.Now().Add(-time.Hour).UnixMilli()
	want := dataset{}
	commit := func(from, to int) {
		for i := from; i < to; i++ {
			s := actastore.Sample{T: base + int64(i)*1000, V: float64(i)}
			if _, err := st.Append(context.Background(), []actastore.SeriesSamples{{Labels: a, Samples: []actastore.Sample{s}}}); err != nil {
				t.Fatal(err)
			}
			want[a.String()] = append(want[a.String()], sample{s.T, s.V})
		}
	}
	ckpt := func() string {
		m, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.????????"))
		return strings.Join(m, ",")
	}
	// waitCheckpoint waits for the checkpoint loop (100 ms tick) to replace
	// the checkpoint, once something new is logged.
	waitCheckpoint := func() {
		was := ckpt()
		for i := 0; i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
			if c := ckpt(); c != "" && c != was {
				return
			}
		}
		t.Fatal("no checkpoint")
	}
	commit(0, 5)
	waitCheckpoint()
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "c_metric")}
	tl, out := followTail(t, dir, ms)
	// Acknowledged, and tail has not read them yet: enough of them that
	// the WAL after the first checkpoint outgrows checkpointGrowth times it.
	commit(5, 60)
	waitCheckpoint() // the segment holding them is deleted; the checkpoint has them
	commit(60, 65)
	if err := tl.cycle(false); err != nil {
		t.Fatal(err)
	}
	if err := st.FlushAll(); err != nil { // now the files hold everything
		t.Fatal(err)
	}
	tl.rescanDue = true
	if err := tl.cycle(false); err != nil {
		t.Fatal(err)
	}
	gotF, _ := parseJSONAll(t, out.String())
	got := gotF[a.String()]
	seen := map[int64]bool{}
	for _, smp := range got {
		i := (smp.T - base) / 1000
		if seen[smp.T] || i < 0 || i >= 65 || smp.V != float64(i) {
			t.Fatalf("tail printed %v: a repeat or a sample never sent", smp)
		}
		seen[smp.T] = true
	}
	if len(got) != 65 {
		t.Fatalf("tail printed %d samples, want 65: %v", len(got), got)
	}
	tl.close()
}
