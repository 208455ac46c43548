package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// TestServeStopUnderLoad stops the server (SIGTERM, then SIGKILL) while four
// senders write as fast as they can, and checks the invariant that matters:
// every sample acknowledged with a 2xx is read back after the restart, bit
// for bit, and no request got a 5xx.
func TestServeStopUnderLoad(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "acta.yaml")
	if err := os.WriteFile(cfgFile, []byte(e2eConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfgFile, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}

	for round, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		p := start(t, bin, args...)
		acked := dataset{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 4 {
			wg.Go(func() {
				name := fmt.Sprintf("load_r%d", round)
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					// 10 series per sender, one new sample each per request.
					req := &prompb.WriteRequest{}
					var sent []struct {
						k string
						s sample
					}
					for i := range 10 {
						lbls := testkit.Labels("__name__", name, "i", fmt.Sprint(i), "sender", fmt.Sprint(w))
						s := sample{T: int64(n) * 1000, V: float64(n*10+i) + 0.5}
						if n%7 == 3 {
							s.V = math.Float64frombits(0x7ff0000000000002)
						}
						req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: lbls,
							Samples: []prompb.Sample{{Timestamp: s.T, Value: s.V}}})
						sent = append(sent, struct {
							k string
							s sample
						}{labelsKey(lbls), s})
					}
					hr, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/write", bytes.NewReader(testkit.Encode(req)))
					hr.Header.Set("Content-Type", "application/x-protobuf")
					hr.Header.Set("Content-Encoding", "snappy")
					resp, err := http.DefaultClient.Do(hr)
					if err != nil {
						return // the server went away; this request was not acknowledged
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode >= 500 {
						t.Errorf("round %d: status %d during shutdown", round, resp.StatusCode)
						return
					}
					if resp.StatusCode != http.StatusNoContent {
						t.Errorf("round %d: status %d", round, resp.StatusCode)
						return
					}
					mu.Lock()
					for _, x := range sent {
						acked[x.k] = append(acked[x.k], x.s)
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(700 * time.Millisecond)
		p.stop(t, sig)
		close(stop)
		wg.Wait()
		total := 0
		for _, ss := range acked {
			total += len(ss)
		}
		if total < 100 {
			t.Fatalf("round %d: only %d samples acknowledged before %v; the test proves nothing", round, total, sig)
		}
		t.Logf("round %d (%v): %d samples acknowledged", round, sig, total)

		p = start(t, bin, args...)
		checkAcked(t, fmt.Sprintf("after %v", sig), p.url, fmt.Sprintf("load_r%d", round), acked)
		p.stop(t, syscall.SIGTERM)
	}
}

// checkAcked is checkAll, but the server may hold more than was
// acknowledged (a request can be stored and its answer lost): only
// acknowledged samples must all be there.
func checkAcked(t *testing.T, phase, url, name string, acked dataset) {
	t.Helper()
	for _, streamed := range []bool{false, true} {
		got := read(t, url, name, streamed)
		missing := 0
		for k, ws := range acked {
			have := map[int64]uint64{}
			for _, s := range got[k] {
				have[s.T] = math.Float64bits(s.V)
			}
			for _, w := range ws {
				if b, ok := have[w.T]; !ok || b != math.Float64bits(w.V) {
					if missing++; missing <= 3 {
						t.Errorf("%s (streamed=%v): %s lost acknowledged sample (%d, %#x)", phase, streamed, k, w.T, math.Float64bits(w.V))
					}
				}
			}
		}
		if missing > 0 {
			t.Errorf("%s (streamed=%v): %d acknowledged samples missing", phase, streamed, missing)
		}
	}
}

// labelsKey renders prompb labels as labels.Labels.String() does.
func labelsKey(ls []prompb.Label) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}
