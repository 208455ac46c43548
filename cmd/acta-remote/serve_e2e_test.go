package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/internal/testkit"
)

// e2eConfig keeps flushes small (so data crosses the head, the WAL and the
// series files) and turns off OTLP's fixed gRPC port so parallel runs on one
// machine cannot collide.
const e2eConfig = `
storage:
  block_rows: 50
otlp:
  grpc:
    enabled: false
`

type sample struct {
	T int64
	V float64
}

type dataset map[string][]sample // labels.String() → samples

// proc is one running acta-remote binary.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	done   chan error
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "acta-remote")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var listenRE = regexp.MustCompile(`^acta-remote listening on (\S+)$`)

func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.done <- p.cmd.Wait() }()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case err := <-p.done:
		t.Fatalf("server exited before listening: %v\n%s", err, p.stderr)
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("server did not print its address\n%s", p.stderr)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends sig and waits; SIGTERM must end in exit status 0.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if sig == syscall.SIGTERM && err != nil {
			t.Fatalf("graceful stop: %v\n%s", err, p.stderr)
		}
		if sig == syscall.SIGTERM && !strings.Contains(p.stderr.String(), "store closed") {
			t.Errorf("graceful stop did not close the store:\n%s", p.stderr)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("server did not stop on %v\n%s", sig, p.stderr)
	}
}

func genData(rng *rand.Rand, prefix string, nseries, nsamples int, t0 int64) (dataset, []labels.Labels) {
	d := dataset{}
	var sets []labels.Labels
	specials := []uint64{0x7ff0000000000002, 0x7ff8000000000001, 0x7ff0000000000000, 0xfff0000000000000, 1}
	for i := 0; i < nseries; i++ {
		ls := labels.FromStrings("__name__", prefix, "instance", fmt.Sprintf("host-%d:9100", i), "job", "node")
		sets = append(sets, ls)
		v := rng.Float64() * 1000
		ss := make([]sample, nsamples)
		for j := range ss {
			v += rng.NormFloat64()
			ss[j] = sample{T: t0 + int64(j)*15000, V: v}
			if j%29 == 3 {
				ss[j].V = math.Float64frombits(specials[(i+j)%len(specials)])
			}
		}
		d[ls.String()] = ss
	}
	return d, sets
}

// negZeroStandIn takes the place of -0 in a request until it is
// marshalled: prompb's generated marshallers (1.0 and 2.0, as Prometheus's
// own sender uses them) leave out a value that == 0, so a -0 sample would
// arrive as +0. The stand-in's bytes are replaced by -0's in the body, so
// -0 is on the wire as protobuf-go and other senders put it.
var negZeroStandIn = math.Float64frombits(0x8000_5eed_0bad_f00d)

func wireValue(v float64) float64 {
	if math.Float64bits(v) == 0x8000000000000000 {
		return negZeroStandIn
	}
	return v
}

// withNegZero puts -0 where the stand-in is in a marshalled request.
func withNegZero(body []byte) []byte {
	var from, to [8]byte
	binary.LittleEndian.PutUint64(from[:], math.Float64bits(negZeroStandIn))
	binary.LittleEndian.PutUint64(to[:], 0x8000000000000000)
	return bytes.ReplaceAll(body, from[:], to[:])
}

// send writes even series as Remote-Write 1.0 and odd ones as 2.0, in
// requests of at most perReq samples per series.
func send(t *testing.T, url string, d dataset, sets []labels.Labels, perReq int) {
	t.Helper()
	n := len(d[sets[0].String()])
	for lo := 0; lo < n; lo += perReq {
		hi := min(lo+perReq, n)
		v1 := &prompb.WriteRequest{}
		st := writev2.NewSymbolTable()
		v2 := &writev2.Request{}
		for i, ls := range sets {
			ss := d[ls.String()][lo:hi]
			if i%2 == 0 {
				ts := prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil)}
				for _, s := range ss {
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: s.T, Value: wireValue(s.V)})
				}
				v1.Timeseries = append(v1.Timeseries, ts)
			} else {
				ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil)}
				for _, s := range ss {
					ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: s.T, Value: wireValue(s.V)})
				}
				v2.Timeseries = append(v2.Timeseries, ts)
			}
		}
		v2.Symbols = st.Symbols()
		b1, _ := v1.Marshal()
		b2, _ := v2.Marshal()
		b1, b2 = withNegZero(b1), withNegZero(b2)
		post(t, url, testkit.ContentTypeRW1, b1, "")
		post(t, url, testkit.ContentTypeRW2, b2, strconv.Itoa(len(v2.Timeseries)*(hi-lo)))
	}
}

func post(t *testing.T, url, ct string, body []byte, wantWritten string) {
	t.Helper()
	a := testkit.Post(t, url+"/api/v1/write", map[string]string{"Content-Type": ct, "Content-Encoding": "snappy",
		"X-Prometheus-Remote-Write-Version": "2.0.0"}, snappy.Encode(nil, body))
	if a.Code != http.StatusNoContent {
		t.Fatalf("write: %d %s", a.Code, a.Body)
	}
	if got := a.Header.Get("X-Prometheus-Remote-Write-Samples-Written"); got != wantWritten {
		t.Fatalf("samples-written header %q, want %q", got, wantWritten)
	}
}

// readHeaders are the headers Prometheus sends with a remote read.
var readHeaders = map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Read-Version": "0.1.0"}

// remoteRead sends a remote read of q accepting types (none: SAMPLES, as
// Prometheus reads) and requires a 200; it returns the answer's body.
func remoteRead(t *testing.T, url string, q *prompb.Query, types ...prompb.ReadRequest_ResponseType) []byte {
	t.Helper()
	a := testkit.Post(t, url+"/api/v1/read", readHeaders, testkit.ReadRequest(types, q))
	if a.Code != http.StatusOK {
		t.Fatalf("read: %d %s", a.Code, a.Body)
	}
	return a.Body
}

// readSeries is the series of the SAMPLES answer to a remote read of q.
func readSeries(t *testing.T, url string, q *prompb.Query, types ...prompb.ReadRequest_ResponseType) []*prompb.TimeSeries {
	t.Helper()
	r, err := testkit.ReadResponse(remoteRead(t, url, q, types...))
	if err != nil {
		t.Fatal(err)
	}
	return r.Results[0].Timeseries
}

// allOf queries all time of the series whose name matches nameRE.
func allOf(nameRE string) *prompb.Query {
	return &prompb.Query{StartTimestampMs: math.MinInt64, EndTimestampMs: math.MaxInt64,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: nameRE}}}
}

// xorSamples hands f every sample of an XOR chunk, in order.
func xorSamples(data []byte, f func(t int64, v float64)) error {
	chk, err := chunkenc.FromData(chunkenc.EncXOR, data)
	if err != nil {
		return err
	}
	it := chk.Iterator(nil)
	for it.Next() != chunkenc.ValNone {
		f(it.At())
	}
	return it.Err()
}

// read selects __name__=~nameRE over all time with the given response type.
func read(t *testing.T, url, nameRE string, streamed bool) dataset {
	t.Helper()
	out := dataset{}
	var sb labels.ScratchBuilder
	if !streamed {
		for _, ts := range readSeries(t, url, allOf(nameRE), prompb.ReadRequest_SAMPLES) {
			k := ts.ToLabels(&sb, nil).String()
			for _, s := range ts.Samples {
				out[k] = append(out[k], sample{s.Timestamp, s.Value})
			}
		}
		return out
	}
	body := remoteRead(t, url, allOf(nameRE), prompb.ReadRequest_STREAMED_XOR_CHUNKS)
	err := testkit.Frames(bytes.NewReader(body), 1<<24, func(c *prompb.ChunkedReadResponse) error {
		for _, cs := range c.ChunkedSeries {
			k := cs.ToLabels(&sb, nil).String()
			for _, ch := range cs.Chunks {
				if err := xorSamples(ch.Data, func(ts int64, v float64) { out[k] = append(out[k], sample{ts, v}) }); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkAll reads with both response types and compares every sample's
// timestamp and float bits.
func checkAll(t *testing.T, phase, url, nameRE string, want dataset) {
	t.Helper()
	for _, streamed := range []bool{false, true} {
		got := read(t, url, nameRE, streamed)
		what := fmt.Sprintf("%s (streamed=%v)", phase, streamed)
		if len(got) != len(want) {
			t.Errorf("%s: %d series, want %d", what, len(got), len(want))
		}
		bad := 0
		for k, ws := range want {
			gs := got[k]
			if len(gs) != len(ws) {
				t.Errorf("%s: %s: %d samples, want %d", what, k, len(gs), len(ws))
				continue
			}
			for i := range ws {
				if gs[i].T != ws[i].T || math.Float64bits(gs[i].V) != math.Float64bits(ws[i].V) {
					if bad++; bad <= 3 {
						t.Errorf("%s: %s sample %d = (%d, %#x), want (%d, %#x)", what, k, i,
							gs[i].T, math.Float64bits(gs[i].V), ws[i].T, math.Float64bits(ws[i].V))
					}
				}
			}
		}
	}
}

func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	t.Fatalf("metric %s not exposed", name)
	return 0
}

func TestServeEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "acta.yaml")
	if err := os.WriteFile(cfgFile, []byte(e2eConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	args := []string{"--config", cfgFile, "--listen", "127.0.0.1:0", "--data-dir", dataDir}
	rng := rand.New(rand.NewSource(42))
	const t0 = 1_750_000_000_000

	// 1. Remote-Write 1.0 and 2.0, read back both ways.
	p := start(t, bin, args...)
	for _, probe := range []string{"/-/healthy", "/-/ready"} {
		resp, err := http.Get(p.url + probe)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", probe, err, resp)
		}
		resp.Body.Close()
	}
	first, sets := genData(rng, "e2e_first", 20, 400, t0)
	send(t, p.url, first, sets, 100)
	checkAll(t, "after write", p.url, "e2e_first", first)
	if got := metricValue(t, p.url, "acta_remote_write_samples_written_total"); got != 20*400 {
		t.Errorf("acta_remote_write_samples_written_total = %v, want %d", got, 20*400)
	}
	if got := metricValue(t, p.url, `acta_http_requests_total{code="204",handler="write"}`); got != 8 {
		t.Errorf("write 204 count = %v, want 8", got)
	}

	// 2. Graceful restart: everything is still there.
	p.stop(t, syscall.SIGTERM)
	p = start(t, bin, args...)
	checkAll(t, "after SIGTERM restart", p.url, "e2e_first", first)

	// 3. More data, then SIGKILL right after the last acknowledgement:
	// every acknowledged sample must come back after the restart.
	second, sets2 := genData(rng, "e2e_second", 15, 130, t0+1e7)
	send(t, p.url, second, sets2, 65)
	p.stop(t, syscall.SIGKILL)
	p = start(t, bin, args...)
	checkAll(t, "after SIGKILL restart (first)", p.url, "e2e_first", first)
	checkAll(t, "after SIGKILL restart (second)", p.url, "e2e_second", second)
	p.stop(t, syscall.SIGTERM)

	// The data directory holds one series file per series, and each passes
	// the binary's own full validation.
	var files []string
	filepath.WalkDir(filepath.Join(dataDir, "series"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".acta") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 35 {
		t.Errorf("%d series files under %s, want at least 35", len(files), dataDir)
	}
	for _, f := range files {
		if out, err := exec.Command(bin, "validate", f, "--level", "full").CombinedOutput(); err != nil {
			t.Errorf("validate --level full %s: %v\n%s", f, err, out)
		}
	}
}

func TestServeConfigErrors(t *testing.T) {
	if _, err := loadServeConfig("", overrides{listen: "nonsense"}); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("bad --listen: %v", err)
	}
	c, err := loadServeConfig("", overrides{listen: "127.0.0.1:0", dataDir: "/tmp/x"})
	if err != nil || c.Listen != "127.0.0.1:0" || c.DataDir != "/tmp/x" || c.Storage.BlockRows != 4096 {
		t.Errorf("flags over the default: %+v %v", c, err)
	}
	if _, err := loadServeConfig("/no/such/file.yaml", overrides{}); err == nil || !strings.Contains(err.Error(), "/no/such/file.yaml") {
		t.Errorf("missing file: %v", err)
	}
	if c, err := loadServeConfig("", overrides{grpcListen: "127.0.0.1:0"}); err != nil || !c.OTLP.GRPC.Enabled || c.OTLP.GRPC.ListenAddress != "127.0.0.1:0" {
		t.Errorf("--otlp-grpc-listen 127.0.0.1:0: %+v %v", c.OTLP.GRPC, err)
	}
	if c, err := loadServeConfig("", overrides{grpcListen: "off"}); err != nil || c.OTLP.GRPC.Enabled {
		t.Errorf("--otlp-grpc-listen off: %+v %v", c.OTLP.GRPC, err)
	}
	if _, err := loadServeConfig("", overrides{grpcListen: "nonsense"}); err == nil || !strings.Contains(err.Error(), "listen_address") {
		t.Errorf("bad --otlp-grpc-listen: %v", err)
	}
}
