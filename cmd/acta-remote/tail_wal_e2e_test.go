package main

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// segmentConfig: 1 MiB WAL segments (the smallest allowed), heads flushed
// after a second, hourly files, so a test can make the server flush and
// delete a WAL segment within seconds.
const segmentConfig = `
storage:
  wal_segment_size: 1MiB
  block_rows: 1000
  max_head_age: 1s
rotation:
  period: 1h
otlp:
  grpc:
    enabled: false
`

// walSegments lists the WAL segment numbers of a data directory.
func walSegments(t *testing.T, data string) []int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(data, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && len(e.Name()) == 8 {
			out = append(out, n)
		}
	}
	return out
}

// fillerRequest is 10 series of 10,000 samples (about 1 MiB of WAL)
// starting at ts, one millisecond apart.
func fillerRequest(ts int64) []byte {
	req := &prompb.WriteRequest{}
	for i := range 10 {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "filler"}, {Name: "i", Value: strconv.Itoa(i)}}}
		for k := range int64(10000) {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts + k, Value: dfValue(i, ts+k)})
		}
		req.Timeseries = append(req.Timeseries, s)
	}
	b, _ := req.Marshal()
	return b
}

// TestTailWALSegmentDeleted stops tail (SIGSTOP) while the server takes
// samples that cross an hour (a new file per series), flushes them and
// deletes the WAL segment holding them, then takes newer samples that
// only the live segment holds. Resumed, tail must print every one once,
// in order: the deleted segment's from the files, the newer ones from the
// WAL.
func TestTailWALSegmentDeleted(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, segmentConfig)
	sets := []labels.Labels{
		labels.FromStrings("__name__", "seg_metric", "i", "0"),
		labels.FromStrings("__name__", "seg_metric", "i", "1"),
	}
	hour := time.Now().Add(-2*time.Hour).Truncate(time.Hour).UnixMilli() + 3600_000
	want := dataset{}
	round := func(from, to int) {
		t.Helper()
		r := dataset{}
		for i, ls := range sets {
			var s []sample
			for m := from; m <= to; m++ {
				s = append(s, seriesSamples(hour+int64(m)*60000, 1, int64(100*i+m))...)
			}
			r[ls.String()] = s
			want[ls.String()] = append(want[ls.String()], s...)
		}
		send(t, p.url, r, sets, 1000)
	}
	round(-20, -11)
	tp := startTail(t, bin, "--data-dir", data, "--since", "100000h", "--poll", "100ms", "--json", "seg_metric")
	sameData(t, "history", tp.waitSamples(t, 20), want)

	if err := tp.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			tp.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	round(-10, 5) // crosses the hour
	segs := walSegments(t, data)
	held := segs[len(segs)-1] // the segment holding them
	ts := hour - 24*3600_000
	for deadline := time.Now().Add(60 * time.Second); ; {
		if segs = walSegments(t, data); len(segs) > 0 && segs[0] > held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WAL segment %d still there after 60 s: %v", held, segs)
		}
		post(t, p.url, testkit.ContentTypeRW1, fillerRequest(ts), "")
		ts += 10000
		time.Sleep(300 * time.Millisecond)
	}
	round(6, 10) // in the live segment only (its heads flush after a second)
	if files, _ := filepath.Glob(filepath.Join(data, "series", "*", "*.acta")); len(files) < 4+10 {
		t.Fatalf("%d series files, want two per seg_metric series and the filler's", len(files))
	}
	t.Logf("WAL segment %d (holding samples tail had not read) deleted; segments now %v", held, segs)
	if err := tp.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	sameData(t, "after the deleted segment", tp.waitSamples(t, countSamples(want)), want)
	tp.stop(t)
	p.stop(t, syscall.SIGTERM)
}
