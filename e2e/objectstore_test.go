package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/minio/minio-go/v7"
	"github.com/prometheus/prometheus/prompb"
)

// The object-storage tier against a real SeaweedFS on loopback, with the
// real acta-remote binary: writers upload sealed files and drop their
// local copies; a query instance serves every writer's prefix; the bucket
// goes down and comes back, a writer is killed mid-upload, an object is
// damaged, bucket retention deletes old files. Every answer is compared
// bit for bit with what was acknowledged.

const objBucket = "acta-e2e"

// actaNode is one acta-remote process (writer or query instance) with its
// config file, restartable.
type actaNode struct {
	name, bin, addr, dir, cfg string
	p                         *process
	owner                     *testing.T
}

// nodeConfig is the YAML of a node: a writer with instance set, a query
// instance without. extra is appended verbatim under storage.object_store.
func nodeConfig(w *weed, addr, dir, instance string, extra string, rotation string) string {
	mode := "write"
	inst := "    instance_id: " + instance + "\n"
	if instance == "" {
		mode, inst = "query", ""
	}
	return fmt.Sprintf(`listen: %s
data_dir: %s
mode: %s
log: {level: debug}
storage:
  max_head_age: 1s
  object_store:
    enabled: true
    endpoint: %s
    bucket: %s
    prefix: e2e
    region: us-east-1
    insecure: true
    access_key_id_file: %s
    secret_access_key_file: %s
%s    upload_interval: 1s
    delete_delay: 2s
    backoff: {min: 200ms, max: 2s}
%s
rotation:
  interval: 1s
%s
`, addr, dir, mode, w.endpoint, objBucket, w.accessKeyFile(), w.secretKeyFile(), inst, extra, rotation)
}

func newNode(t *testing.T, bin, name string, w *weed, instance, extra, rotation string) *actaNode {
	t.Helper()
	tmp := t.TempDir()
	n := &actaNode{name: name, bin: bin, addr: freeAddr(t), dir: filepath.Join(tmp, "data"), cfg: filepath.Join(tmp, "acta.yml"), owner: t}
	n.writeConfig(t, nodeConfig(w, n.addr, n.dir, instance, extra, rotation))
	return n
}

func (n *actaNode) writeConfig(t *testing.T, body string) {
	t.Helper()
	if err := os.WriteFile(n.cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (n *actaNode) start(t *testing.T) {
	t.Helper()
	n.p = startProcess(t, n.owner, n.name, filepath.Join(filepath.Dir(n.cfg), n.name+".log"), n.bin,
		"serve", "--config", n.cfg, "--otlp-grpc-listen", "off")
	waitReady(t, n.p, n.base()+"/-/ready", time.Minute)
}

func (n *actaNode) base() string { return "http://" + n.addr }

// metric is the sum of a metric's samples on the node's /metrics.
func (n *actaNode) metric(t *testing.T, name string, contains ...string) float64 {
	t.Helper()
	vs, err := scrapeMetric(context.Background(), n.base(), name, contains...)
	if err != nil {
		t.Fatalf("%s: %v", n.name, err)
	}
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

// waitUploaded waits until a writer has nothing left to upload and
// publish, and at least files files exist only in the bucket.
func (n *actaNode) waitUploaded(t *testing.T, files int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pending, only := n.metric(t, "acta_tier_pending_files"), n.metric(t, "acta_tier_bucket_only_files")
		unpub := n.metric(t, "acta_tier_unpublished_records")
		if pending == 0 && unpub == 0 && int(only) >= files {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v files pending, %v unpublished, %v in the bucket only after %s; want 0, 0, %d", n.name, pending, unpub, only, timeout, files)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sent is what the writers acknowledged, by labelsString.
type sent map[string]*prompb.TimeSeries

// backfill makes n series named name with a sample every 15 s over
// [from, to) (ms), stale markers and special values among them.
func backfill(name string, n int, from, to int64) sent {
	out := sent{}
	// (Not -0: prompb's generated Marshal leaves a value equal to 0 out of
	// the message, so -0 arrives as 0 whatever the receiver does.)
	special := []float64{math.Float64frombits(0x7ff0000000000002), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324}
	for i := 0; i < n; i++ {
		ls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance", Value: fmt.Sprintf("host-%03d", i)}, {Name: "job", Value: "e2e"}}
		ts := &prompb.TimeSeries{Labels: ls}
		k := 0
		for t := from; t < to; t += 15000 {
			v := float64(t/1000%100000)/4 + float64(i)
			if k%211 == 7 {
				v = special[(k/211)%len(special)]
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: v})
			k++
		}
		out[labelsString(map[string]string{"__name__": name, "instance": ls[1].Value, "job": "e2e"})] = ts
	}
	return out
}

func (s sent) add(o sent) {
	for k, v := range o {
		s[k] = v
	}
}

// remoteWrite sends the series as Remote-Write 1.0 requests (snappy
// protobuf, 20 series a request) and requires 204 for each.
func remoteWrite(t *testing.T, base string, s sent) {
	t.Helper()
	var all []prompb.TimeSeries
	for _, ts := range s {
		all = append(all, *ts)
	}
	slices.SortFunc(all, func(a, b prompb.TimeSeries) int { return strings.Compare(a.Labels[1].Value, b.Labels[1].Value) })
	for len(all) > 0 {
		n := min(len(all), 20)
		req := &prompb.WriteRequest{Timeseries: all[:n]}
		raw, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		hr, _ := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
		hr.Header.Set("Content-Type", "application/x-protobuf")
		hr.Header.Set("Content-Encoding", "snappy")
		hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("remote write: %s: %s", resp.Status, body)
		}
		all = all[n:]
	}
}

// readAll reads every series named name from base over [from, to].
func readAll(t *testing.T, base, name string, from, to int64) (map[string]*prompb.TimeSeries, error) {
	t.Helper()
	return remoteReadSamples(context.Background(), base, from, to, prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name})
}

// checkRead requires base to return exactly want for metric name: every
// series, every timestamp and float bit pattern, nothing more.
func checkRead(t *testing.T, who, base, name string, want sent, from, to int64) {
	t.Helper()
	got, err := readAll(t, base, name, from, to)
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	if d := diffSent(want, got); d != "" {
		t.Fatalf("%s: %s", who, d)
	}
}

// diffSent describes the first difference between want and got, "" when
// they are equal.
func diffSent(want sent, got map[string]*prompb.TimeSeries) string {
	n := 0
	for k, w := range want {
		g := got[k]
		if g == nil {
			return fmt.Sprintf("%d series, want %d; %s missing", len(got), len(want), k)
		}
		n++
		for i := 0; i < max(len(w.Samples), len(g.Samples)); i++ {
			if i >= len(w.Samples) || i >= len(g.Samples) {
				return fmt.Sprintf("%s: %d samples, want %d (first at %d: got %v want %v)", k, len(g.Samples), len(w.Samples), i,
					g.Samples[min(i, len(g.Samples)-1)], w.Samples[min(i, len(w.Samples)-1)])
			}
			ws, gs := w.Samples[i], g.Samples[i]
			if ws.Timestamp != gs.Timestamp || math.Float64bits(ws.Value) != math.Float64bits(gs.Value) {
				return fmt.Sprintf("%s sample %d: got %x@%d, want %x@%d", k, i, math.Float64bits(gs.Value), gs.Timestamp, math.Float64bits(ws.Value), ws.Timestamp)
			}
		}
	}
	if len(got) != n {
		return fmt.Sprintf("%d series, want %d", len(got), len(want))
	}
	return ""
}

func samplesIn(s sent, from int64) sent {
	out := sent{}
	for k, v := range s {
		c := &prompb.TimeSeries{Labels: v.Labels}
		for _, smp := range v.Samples {
			if smp.Timestamp >= from {
				c.Samples = append(c.Samples, smp)
			}
		}
		if len(c.Samples) > 0 {
			out[k] = c
		}
	}
	return out
}

// localActaFiles counts the series files on a node's disk.
func localActaFiles(t *testing.T, dir string) int {
	return len(findFiles(t, filepath.Join(dir, "series"), ".acta")) + len(findFiles(t, filepath.Join(dir, "histograms"), ".acta"))
}

// TestObjectStoreWriterAndQueryInstance: a writer uploads 6 hours of 40
// backfilled series and keeps no local copy; it and a query instance
// reading its prefix return every sample bit for bit. The bucket stops
// while more is written: every write is acknowledged, /-/ready stays 200,
// local reads work, the lag grows, nothing local goes; it comes back and
// the uploads resume. The writer is killed (SIGKILL) mid-upload: the query
// instance meanwhile serves only whole files, without an error; the
// restarted writer completes the uploads, leaves no multipart upload and
// no orphan object, and every sample comes back exactly once. A damaged
// object fails the query of its series with an error naming the object;
// the other series read fine. Bucket retention deletes expired files from
// the bucket and from both answers.
func TestObjectStoreWriterAndQueryInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("object-storage end-to-end test; not run with -short")
	}
	tmp := t.TempDir()
	bin := buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
	w := startWeed(t, objBucket)
	hour := int64(time.Hour / time.Millisecond)
	h := time.Now().Truncate(time.Hour).UnixMilli() - hour // 7 hours of data end here
	// Tier merges off: the test counts hourly files (merges, which join
	// them before upload, are tested in actastore against SeaweedFS).
	rot := "  period: 1h\n  compaction:\n    tiers: []"
	writer := newNode(t, bin, "writer-w1", w, "w1", "    local_retention: 0s", rot)
	writer.start(t)
	query := newNode(t, bin, "query", w, "", "    query:\n      refresh_interval: 1s", rot)

	all := sent{}
	a := backfill("obj_a", 40, h-7*hour, h)
	remoteWrite(t, writer.base(), a)
	all.add(a)
	writer.waitUploaded(t, 40*7, 2*time.Minute)
	if n := localActaFiles(t, writer.dir); n != 0 {
		t.Fatalf("the writer keeps %d local series files after uploading everything", n)
	}
	checkRead(t, "writer, every file in the bucket only", writer.base(), "obj_a", a, 0, math.MaxInt64)
	if f := writer.metric(t, "acta_tier_query_fetched_bytes_sum"); f == 0 {
		t.Fatal("the writer's read fetched nothing from the bucket")
	}
	checkQueryCommand(t, bin, writer, a)
	query.start(t)
	checkRead(t, "query instance", query.base(), "obj_a", a, 0, math.MaxInt64)
	checkQueryAPI(t, "query instance, query API", query.base(), "obj_a", a, h-7*hour, h)
	objSize := int64(0)
	for _, sz := range w.objects(t, objBucket, "e2e/w1/series/") {
		objSize += sz
	}
	t.Logf("40 series x 7 h: %d objects, %d bytes; the query instance fetched %.0f bytes of blocks for all of it",
		len(w.objects(t, objBucket, "e2e/w1/series/")), objSize, query.metric(t, "acta_tier_query_fetched_bytes_sum"))

	t.Run("bucket down during ingest", func(t *testing.T) {
		w.stop(t)
		b := backfill("obj_b", 10, h-3*hour, h)
		remoteWrite(t, writer.base(), b) // every request acknowledged (204)
		all.add(b)
		resp, err := http.Get(writer.base() + "/-/ready")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/-/ready with the bucket down: %v %v", resp, err)
		}
		resp.Body.Close()
		checkRead(t, "writer, local data with the bucket down", writer.base(), "obj_b", b, 0, math.MaxInt64)
		deadline := time.Now().Add(time.Minute)
		for writer.metric(t, "acta_tier_consecutive_failed_cycles") == 0 || writer.metric(t, "acta_tier_upload_lag_seconds") < 3600 {
			if time.Now().After(deadline) {
				t.Fatalf("no failed cycle or lag reported: failures %v, lag %v", writer.metric(t, "acta_tier_consecutive_failed_cycles"), writer.metric(t, "acta_tier_upload_lag_seconds"))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if n := localActaFiles(t, writer.dir); n != 30 {
			t.Fatalf("%d local files with the bucket down, want obj_b's 30", n)
		}
		if _, err := readAll(t, writer.base(), "obj_a", 0, math.MaxInt64); err == nil || !strings.Contains(err.Error(), "s3://"+objBucket+"/e2e/w1/series/") {
			t.Fatalf("a read of bucket-only files with the bucket down: %v, want an error naming the object", err)
		}
		w.start(t)
		writer.waitUploaded(t, 40*7+10*3, 2*time.Minute)
		if n := localActaFiles(t, writer.dir); n != 0 {
			t.Fatalf("%d local files once the uploads resumed", n)
		}
		checkRead(t, "writer after the bucket came back", writer.base(), "obj_b", b, 0, math.MaxInt64)
		checkRead(t, "writer after the bucket came back", writer.base(), "obj_a", a, 0, math.MaxInt64)
		time.Sleep(2 * time.Second) // a refresh of the query instance
		checkRead(t, "query instance after the bucket came back", query.base(), "obj_b", b, 0, math.MaxInt64)
	})

	t.Run("kill -9 mid-upload", func(t *testing.T) {
		// One file at a time, so the kill lands between uploads or inside one.
		writer.writeConfig(t, nodeConfig(w, writer.addr, writer.dir, "w1", "    local_retention: 0s\n    upload_concurrency: 1", rot))
		if err := writer.p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Fatal(err)
		}
		writer.start(t)
		c := backfill("obj_c", 200, h-2*hour, h)
		remoteWrite(t, writer.base(), c)
		all.add(c)
		// Kill while the cycle uploads: after 150 of its 400 PUTs.
		before := writer.metric(t, "acta_bucket_requests_total", `op="put"`, `result="ok"`)
		deadline := time.Now().Add(time.Minute)
		for writer.metric(t, "acta_bucket_requests_total", `op="put"`, `result="ok"`) < before+150 {
			if time.Now().After(deadline) {
				t.Fatal("uploads did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := writer.p.stop(syscall.SIGKILL, 10*time.Second); err == nil {
			t.Fatal("exit 0 on SIGKILL?")
		}
		// What the bucket shows meanwhile: whole files only.
		time.Sleep(2 * time.Second)
		got, err := readAll(t, query.base(), "obj_c", 0, math.MaxInt64)
		if err != nil {
			t.Fatalf("query instance after the kill: %v", err)
		}
		partial := 0
		for k, g := range got {
			for _, smp := range g.Samples {
				partial++
				if !slices.ContainsFunc(c[k].Samples, func(s prompb.Sample) bool {
					return s.Timestamp == smp.Timestamp && math.Float64bits(s.Value) == math.Float64bits(smp.Value)
				}) {
					t.Fatalf("query instance returned %s %v, never written", k, smp)
				}
			}
		}
		t.Logf("after the kill, the query instance served %d of obj_c's samples (whole uploaded files)", partial)
		writer.start(t)
		writer.waitUploaded(t, 40*7+10*3+200*2, 3*time.Minute)
		checkRead(t, "writer after the restart", writer.base(), "obj_c", c, 0, math.MaxInt64)
		time.Sleep(2 * time.Second)
		checkRead(t, "query instance after the restart", query.base(), "obj_c", c, 0, math.MaxInt64)
		for u := range w.client.ListIncompleteUploads(context.Background(), objBucket, "e2e/", true) {
			t.Fatalf("a multipart upload is left: %+v", u)
		}
		// The restart's orphan sweep runs a delete delay after its first
		// full index: the bucket then holds exactly the indexed files.
		deadline = time.Now().Add(time.Minute)
		for {
			objs := len(w.objects(t, objBucket, "e2e/w1/series/")) + len(w.objects(t, objBucket, "e2e/w1/histograms/"))
			only := int(writer.metric(t, "acta_tier_bucket_only_files"))
			if objs == only {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d objects, %d indexed files", objs, only)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})

	t.Run("damaged object", func(t *testing.T) {
		objs := w.objects(t, objBucket, "e2e/w1/series/")
		var key string
		for k := range objs {
			if key == "" || k < key {
				key = k
			}
		}
		ctx := context.Background()
		o, err := w.client.GetObject(ctx, objBucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(o)
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-64] ^= 0x01 // in the last block's payload
		if _, err := w.client.PutObject(ctx, objBucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []*actaNode{writer, query} {
			failed, ok := 0, 0
			for _, name := range []string{"obj_a", "obj_b", "obj_c"} {
				for k, ts := range all {
					if !strings.Contains(k, `__name__="`+name+`"`) {
						continue
					}
					inst := ts.Labels[1].Value
					got, err := remoteReadSamples(ctx, n.base(), 0, math.MaxInt64,
						prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name},
						prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "instance", Value: inst})
					if err != nil {
						if !strings.Contains(err.Error(), "s3://"+objBucket+"/"+key) {
							t.Fatalf("%s: %s fails without naming the damaged object: %v", n.name, k, err)
						}
						failed++
						continue
					}
					if d := diffSent(sent{k: ts}, got); d != "" {
						t.Fatalf("%s: %s", n.name, d)
					}
					ok++
				}
			}
			if failed != 1 {
				t.Fatalf("%s: %d series failed on one damaged object, %d read fine", n.name, failed, ok)
			}
			t.Logf("%s: the damaged object's series fails naming it; %d other series read bit for bit", n.name, ok)
		}
		// Put the object back for what follows.
		b[len(b)-64] ^= 0x01
		if _, err := w.client.PutObject(ctx, objBucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("bucket retention", func(t *testing.T) {
		// The query instance owns bucket retention (a writer can too:
		// actastore's TestTierBucketRetention). Expire the files that end
		// before h-4h+30m: obj_a's first three hours.
		maxAge := time.Since(time.UnixMilli(h - 4*hour + 30*60000)).Round(time.Second)
		query.writeConfig(t, nodeConfig(w, query.addr, query.dir, "", fmt.Sprintf(
			"    query:\n      refresh_interval: 1s\n    retention: {max_age: %s, owner: true, interval: 1s}", maxAge), rot))
		if err := query.p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Fatal(err)
		}
		before := len(w.objects(t, objBucket, "e2e/w1/series/"))
		query.start(t)
		cut := h - 4*hour
		deadline := time.Now().Add(time.Minute)
		for len(w.objects(t, objBucket, "e2e/w1/series/")) != before-40*3 {
			if time.Now().After(deadline) {
				t.Fatalf("%d objects, want %d after retention", len(w.objects(t, objBucket, "e2e/w1/series/")), before-40*3)
			}
			time.Sleep(250 * time.Millisecond)
		}
		checkRead(t, "writer after bucket retention", writer.base(), "obj_a", samplesIn(a, cut), 0, math.MaxInt64)
		checkRead(t, "query instance after bucket retention", query.base(), "obj_a", samplesIn(a, cut), 0, math.MaxInt64)
		checkRead(t, "query instance after bucket retention", query.base(), "obj_c", all.only("obj_c"), 0, math.MaxInt64)
		// The writer's next index no longer names them.
		deadline = time.Now().Add(30 * time.Second)
		for writer.metric(t, "acta_tier_expired_files_total") != 40*3 {
			if time.Now().After(deadline) {
				t.Fatalf("the writer dropped %v expired files, want 120", writer.metric(t, "acta_tier_expired_files_total"))
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	for _, n := range []*actaNode{writer, query} {
		if err := n.p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v, want exit 0", n.name, err)
		}
	}
}

// only keeps the series of one metric name.
func (s sent) only(name string) sent {
	out := sent{}
	for k, v := range s {
		if strings.Contains(k, `__name__="`+name+`"`) {
			out[k] = v
		}
	}
	return out
}

// checkQueryCommand runs `acta-remote query` on the writer's data
// directory: without --config it says that files exist only in the bucket
// and were left out (what it prints comes from the WAL); with the
// server's config it prints every sample of a series, bits included.
func checkQueryCommand(t *testing.T, bin string, writer *actaNode, a sent) {
	t.Helper()
	sel := `obj_a{instance="host-007"}`
	out, err := exec.Command(bin, "query", "--data-dir", writer.dir, "--json", sel).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "7 files of these series exist only in the object store") {
		t.Fatalf("query without --config: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "query", "--data-dir", writer.dir, "--config", writer.cfg, "--json", sel)
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("query --config: %v", err)
	}
	want := a[`{__name__="obj_a", instance="host-007", job="e2e"}`]
	if want == nil {
		for k, v := range a {
			if strings.Contains(k, "host-007") {
				want = v
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if len(lines) != len(want.Samples) {
		t.Fatalf("query --config printed %d samples, want %d", len(lines), len(want.Samples))
	}
	for i, line := range lines {
		bits := fmt.Sprintf(`"bits":"0x%016x"`, math.Float64bits(want.Samples[i].Value))
		if !strings.Contains(line, fmt.Sprintf(`"t":%d,`, want.Samples[i].Timestamp)) || !strings.Contains(line, bits) {
			t.Fatalf("query --config sample %d: %s, want t %d and %s", i, line, want.Samples[i].Timestamp, bits)
		}
	}
}
