package main

import (
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

const dfSeries = 40

// dfValue is incompressible (random mantissa bits), so a flushed block of a
// few hundred samples needs fresh file-system pages: a full disk cannot hide
// it in the slack of a file's last page.
func dfValue(i int, ts int64) float64 {
	x := uint64(ts)*0x9e3779b97f4a7c15 + uint64(i)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53) * 1e6
}

// dfBody is one request: dfSeries series with n samples each from ts.
func dfBody(ts, n int64) []byte {
	req := &prompb.WriteRequest{}
	for i := range dfSeries {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "df"}, {Name: "i", Value: strconv.Itoa(i)}}}
		for k := range n {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts + k, Value: dfValue(i, ts+k)})
		}
		req.Timeseries = append(req.Timeseries, s)
	}
	return testkit.Encode(req)
}

// diskFullConfig mounts an 8 MiB tmpfs (root) and configures the
// in-process server on it: 1 MiB WAL segments, 1000-row blocks and a
// one-second head age, so flushes keep needing fresh pages.
func diskFullConfig(t *testing.T) (root string, cfg *config.Config) {
	t.Helper()
	if testing.Short() {
		t.Skip("disk-full test skipped in -short mode")
	}
	root = testkit.MountTmpfs(t, 8<<20)
	cfg = config.Default()
	cfg.DataDir = filepath.Join(root, "data")
	cfg.Listen = freeAddr(t)
	cfg.OTLP.GRPC.Enabled = false
	cfg.Storage.WALSegmentSize = 1 << 20
	cfg.Storage.BlockRows = 1000
	cfg.Storage.MaxHeadAge = time.Second
	return root, cfg
}

// TestServeDiskFull runs the server on a small tmpfs and fills it while
// writes continue: writes fail with 5xx (nothing acknowledged that is not
// in the WAL), the server stays up and keeps answering reads, block
// flushes fail and are retried, and once the filler is removed ingestion
// resumes by itself. Afterwards every acknowledged sample is read back
// (live, then after a restart), and every series file passes full Acta
// validation.
func TestServeDiskFull(t *testing.T) {
	root, cfg := diskFullConfig(t)
	srv := serveInProcess(t, cfg)
	url := "http://" + cfg.Listen
	client := &http.Client{Timeout: 30 * time.Second}

	dw := &dfWriter{client: client, url: url, codes: map[string]map[int]int{}}
	writeN, write := dw.write, func(phase string) int { return dw.write(phase, 5) }
	codes := dw.codes
	metric := func(name string) float64 {
		resp, err := client.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == name {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v
			}
		}
		return -1
	}

	for range 30 {
		if c := write("before"); c != http.StatusNoContent {
			t.Fatalf("write before the disk fills: %d", c)
		}
	}
	time.Sleep(1500 * time.Millisecond) // let the head flush into series files
	// 600 samples a series in the head, too few for a size flush: their
	// age flush comes due while the disk is full, so the block-flush path
	// fails too.
	if c := writeN("before", 600); c != http.StatusNoContent {
		t.Fatalf("write before the disk fills: %d", c)
	}

	filler := filepath.Join(root, "filler")
	testkit.FillDisk(t, filler)
	flushErrs0 := metric("acta_store_flush_errors_total")
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		c := write("full")
		if c != http.StatusNoContent && c < 500 {
			t.Errorf("write on a full disk: %d, want 5xx (or 204)", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The server is up and reads work while the disk is full.
	if resp, err := client.Get(url + "/-/ready"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("server not ready on a full disk: %v %v", resp, err)
	}
	if n, err := bpReadSeries(url, "df", "3"); err != nil || n == 0 {
		t.Errorf("read on a full disk: %d samples, %v", n, err)
	}
	flushErrs := metric("acta_store_flush_errors_total") - flushErrs0
	// Failed block appends leave torn frames behind; the store must cut
	// them (acta.RepairIncompleteTail) before it appends to those files.
	torn := tornFiles(cfg.DataDir)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	for write("freed") != http.StatusNoContent {
		if time.Since(resumed) > 30*time.Second {
			t.Fatalf("writes did not resume within 30 s of freeing space: %v", codes["freed"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 30 {
		if c := write("after"); c != http.StatusNoContent {
			t.Fatalf("write after space returned: %d", c)
		}
	}
	t.Logf("codes by phase: %v; flush errors while full: %.0f (%d series files left with a torn tail); writes resumed %s after freeing space",
		codes, flushErrs, torn, time.Since(resumed).Round(time.Millisecond))
	if codes["full"][http.StatusInternalServerError] == 0 {
		t.Errorf("no 500 while the disk was full: %v", codes["full"])
	}
	if torn == 0 {
		t.Errorf("no series file had a torn tail while full: the repair-before-append path went untested")
	}
	if flushErrs <= 0 {
		t.Errorf("no block flush failed while the disk was full (metric %.0f): the flush path went untested", flushErrs)
	}

	acked := slices.Sorted(slices.Values(dw.acked))
	dfCheck(t, "live", url, acked)
	srv.stop(t)
	validateAll(t, cfg.DataDir)
	srv = serveInProcess(t, cfg)
	dfCheck(t, "after restart", url, acked)
	srv.stop(t)
}

// dfWriter sends dfBody requests and remembers what was acknowledged.
type dfWriter struct {
	client *http.Client
	url    string
	acked  []int64 // timestamps of acknowledged samples (every series has each)
	codes  map[string]map[int]int
	next   int64
}

func (w *dfWriter) write(phase string, n int64) int {
	w.next++
	ts := w.next * 1000
	code, _ := bpPost(w.client, w.url, dfBody(ts, n))
	if w.codes[phase] == nil {
		w.codes[phase] = map[int]int{}
	}
	w.codes[phase][code]++
	if code == http.StatusNoContent {
		for k := range n {
			w.acked = append(w.acked, ts+k)
		}
	}
	return code
}

// tornFiles counts series files with an incomplete final frame.
func tornFiles(dataDir string) int {
	torn := 0
	filepath.WalkDir(filepath.Join(dataDir, "series"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if plan, err := acta.InspectRecovery(p); err == nil && plan.RequiresRepair() {
				torn++
			}
		}
		return nil
	})
	return torn
}

// validateAll runs full Acta validation on every series file.
func validateAll(t *testing.T, dataDir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(filepath.Join(dataDir, "series"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if err := acta.Validate(p, acta.ValidateFull); err != nil {
			t.Errorf("series file fails validation after the disk-full episode: %v", err)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walking series files: %d files, %v", files, err)
	}
}

// TestServeDiskFullKill is the harsher ending: the binary is killed
// (SIGKILL) while the disk is still full, with failed flushes' torn tails
// in the series files and refused records cut from the WAL. Space is then
// freed and the server restarted: start-up repairs the files and replays
// the WAL, every acknowledged sample is there, and after a clean stop
// every file validates.
func TestServeDiskFullKill(t *testing.T) {
	if testing.Short() {
		t.Skip("disk-full test skipped in -short mode")
	}
	root := testkit.MountTmpfs(t, 8<<20)
	bin := buildBinary(t)
	cfgFile := filepath.Join(t.TempDir(), "acta.yaml")
	if err := os.WriteFile(cfgFile, []byte(`
storage:
  wal_segment_size: 1MiB
  block_rows: 1000
  max_head_age: 1s
otlp:
  grpc:
    enabled: false
`), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	args := []string{"--config", cfgFile, "--listen", "127.0.0.1:0", "--data-dir", data}
	p := start(t, bin, args...)
	dw := &dfWriter{client: &http.Client{Timeout: 30 * time.Second}, url: p.url, codes: map[string]map[int]int{}}
	for range 30 {
		if c := dw.write("before", 5); c != http.StatusNoContent {
			t.Fatalf("write before the disk fills: %d", c)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	if c := dw.write("before", 600); c != http.StatusNoContent {
		t.Fatalf("write before the disk fills: %d", c)
	}
	filler := filepath.Join(root, "filler")
	testkit.FillDisk(t, filler)
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); {
		if c := dw.write("full", 5); c != http.StatusNoContent && c < 500 {
			t.Errorf("write on a full disk: %d, want 5xx (or 204)", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	torn := tornFiles(data)
	p.stop(t, syscall.SIGKILL)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Logf("codes: %v; %d series files torn when killed", dw.codes, torn)
	if dw.codes["full"][http.StatusInternalServerError] == 0 || torn == 0 {
		t.Errorf("the fault was not exercised: codes %v, %d torn files", dw.codes["full"], torn)
	}

	p = start(t, bin, args...)
	dw.url = p.url
	dfCheck(t, "after kill -9 on a full disk", p.url, slices.Sorted(slices.Values(dw.acked)))
	for range 10 {
		if c := dw.write("restarted", 5); c != http.StatusNoContent {
			t.Fatalf("write after the restart: %d", c)
		}
	}
	p.stop(t, syscall.SIGTERM)
	validateAll(t, data)
	p = start(t, bin, args...)
	dfCheck(t, "after a clean restart", p.url, slices.Sorted(slices.Values(dw.acked)))
	p.stop(t, syscall.SIGTERM)
}

// dfCheck requires every acknowledged sample, bit for bit, in every series.
func dfCheck(t *testing.T, phase, url string, want []int64) {
	t.Helper()
	got := map[string]map[int64]uint64{}
	err := bpRead(url, []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "df"}},
		func(id string, ts []int64, vs []float64) {
			if got[id] == nil {
				got[id] = map[int64]uint64{}
			}
			for k := range ts {
				got[id][ts[k]] = mathBits(vs[k])
			}
		})
	if err != nil {
		t.Fatalf("%s: %v", phase, err)
	}
	lost := 0
	for i := range dfSeries {
		g := got[strconv.Itoa(i)]
		for _, ts := range want {
			if b, ok := g[ts]; !ok || b != mathBits(dfValue(i, ts)) {
				lost++
			}
		}
	}
	t.Logf("%s: %d acknowledged samples in %d series checked, %d lost", phase, len(want)*dfSeries, len(got), lost)
	if lost > 0 {
		t.Errorf("%s: %d acknowledged samples lost or changed", phase, lost)
	}
}

func mathBits(f float64) uint64 { return math.Float64bits(f) }
