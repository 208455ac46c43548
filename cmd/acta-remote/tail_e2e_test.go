package main

import (
	"bufio"
	"bytes"
	"math"
	"math/rand"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// tailConfig flushes a block every 10 samples per series, or after a
// second, so tail sees blocks arrive one by one.
const tailConfig = `
storage:
  block_rows: 10
  max_head_age: 1s
otlp:
  grpc:
    enabled: false
`

// tailProc is a running `acta-remote tail --json`.
type tailProc struct {
	cmd  *exec.Cmd
	done chan error

	mu     sync.Mutex
	lines  []string
	stderr bytes.Buffer
}

func startTail(t *testing.T, bin string, args ...string) *tailProc {
	t.Helper()
	tp := &tailProc{cmd: exec.Command(bin, append([]string{"tail"}, args...)...), done: make(chan error, 1)}
	tp.cmd.Stderr = lockedWriter{&tp.mu, &tp.stderr}
	stdout, err := tp.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			tp.mu.Lock()
			tp.lines = append(tp.lines, sc.Text())
			tp.mu.Unlock()
		}
		close(read)
	}()
	go func() { <-read; tp.done <- tp.cmd.Wait() }()
	t.Cleanup(func() {
		if tp.cmd.ProcessState == nil {
			tp.cmd.Process.Kill()
			<-tp.done
		}
	})
	return tp
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// waitSamples waits until tail printed n samples, then a little longer so
// a sample printed twice would show, and returns what it printed per
// series, in output order.
func (tp *tailProc) waitSamples(t *testing.T, n int) dataset {
	t.Helper()
	tp.waitCount(t, n)
	time.Sleep(settle)
	return tp.result(t, n)
}

// settle is longer than a rescan and than the slowest --poll in the tests.
const settle = rescanEvery + 600*time.Millisecond

func (tp *tailProc) waitCount(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tp.mu.Lock()
		got := len(tp.lines)
		tp.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			t.Fatalf("tail printed %d samples in 30 s, want %d\nstderr:\n%s", got, n, tp.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result checks that exactly n samples were printed and returns them.
func (tp *tailProc) result(t *testing.T, n int) dataset {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.lines) != n {
		t.Errorf("tail printed %d samples, want %d", len(tp.lines), n)
	}
	return parseJSONOutput(t, strings.Join(tp.lines, "\n"))
}

// stop sends SIGINT, as Ctrl-C does: tail must exit 0.
func (tp *tailProc) stop(t *testing.T) {
	t.Helper()
	tp.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-tp.done:
		tp.mu.Lock()
		defer tp.mu.Unlock()
		if err != nil {
			t.Fatalf("tail exit on SIGINT: %v\n%s", err, tp.stderr.String())
		}
		if !strings.Contains(tp.stderr.String(), "acta-remote tail: stopped after") {
			t.Errorf("tail did not report its stop:\n%s", tp.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tail did not stop on SIGINT")
	}
}

// series returns the n samples after from of a regular series (one every
// 15 s), with a stale marker now and then so bits are checked.
func seriesSamples(from int64, n int, seed int64) []sample {
	rng := rand.New(rand.NewSource(seed))
	out := make([]sample, n)
	for i := range out {
		out[i] = sample{T: from + int64(i)*15000, V: rng.NormFloat64() * 100}
		if (from/15000+int64(i))%17 == 5 {
			out[i].V = math.Float64frombits(0x7ff0000000000002)
		}
	}
	return out
}

// sendRound writes the given samples of each series with remote write 1.0
// and 2.0 (send alternates by series).
func sendRound(t *testing.T, url string, round dataset, sets []labels.Labels) {
	t.Helper()
	send(t, url, round, sets, 1<<20)
}

// TestTailFollows starts tail on a running server, then writes block after
// block, and a series that did not exist when tail started: every
// acknowledged sample must be printed exactly once (from the WAL, and not
// again when its block is flushed), in order, with its exact bits; the
// history is limited by --since.
func TestTailFollows(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, tailConfig)
	now := time.Now().UnixMilli() / 15000 * 15000
	sets := []labels.Labels{
		labels.FromStrings("__name__", "t_metric", "instance", "a"),
		labels.FromStrings("__name__", "t_metric", "instance", "b"),
	}
	old := labels.FromStrings("__name__", "t_metric", "instance", "old")
	// History: 30 samples in the last hour, and a series whose samples are
	// all three hours old (outside --since).
	want := dataset{}
	history := dataset{}
	for i, ls := range sets {
		history[ls.String()] = seriesSamples(now-40*60000, 30, int64(i))
	}
	sendRound(t, p.url, history, sets)
	sendRound(t, p.url, dataset{old.String(): seriesSamples(now-3*3600000, 10, 9)}, []labels.Labels{old})
	for _, ls := range sets {
		want[ls.String()] = history[ls.String()]
	}
	waitQuery(t, bin, data, `t_metric`, 70)

	tp := startTail(t, bin, "--data-dir", data, "--since", "1h", "--poll", "100ms", "--json", `{__name__=~"t_metric|t_new",instance!="c"}`)
	got := tp.waitSamples(t, 60)
	sameData(t, "history", got, want)

	// Five rounds of one block per series; a new series appears in round 3,
	// and one that the selector excludes.
	newSet := labels.FromStrings("__name__", "t_new", "instance", "a")
	excluded := labels.FromStrings("__name__", "t_new", "instance", "c")
	next := now - 40*60000 + 30*15000
	for r := 0; r < 5; r++ {
		round := dataset{}
		rsets := sets
		for i, ls := range sets {
			round[ls.String()] = seriesSamples(next, 10, int64(10*r+i))
		}
		if r >= 2 {
			rsets = append(append([]labels.Labels{}, sets...), newSet, excluded)
			round[newSet.String()] = seriesSamples(next, 10, int64(100+r))
			round[excluded.String()] = seriesSamples(next, 10, int64(200+r))
		}
		sendRound(t, p.url, round, rsets)
		for _, ls := range append(append([]labels.Labels{}, sets...), newSet) {
			want[ls.String()] = append(want[ls.String()], round[ls.String()]...)
		}
		next += 10 * 15000
		time.Sleep(300 * time.Millisecond)
	}
	got = tp.waitSamples(t, countSamples(want))
	sameData(t, "followed", got, want)
	tp.stop(t)
}

// waitQuery waits until query sees n samples of sel (files and WAL).
func waitQuery(t *testing.T, bin, data, sel string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := runTool(t, bin, "query", "--data-dir", data, "--json", sel)
		got := countSamples(parseJSONOutput(t, out))
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %s sees %d samples after 30 s, want %d", sel, got, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
