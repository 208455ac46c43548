package e2e

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestObjectStoreTopology runs the documented topology
// (docs/object-storage.md, "Several instances, one bucket") with the configs in testdata: a real Prometheus scrapes itself
// and a target every second and remote-writes to two acta-remote writers
// (one remote_write entry each: Remote-Write 1.0 to writer a, 2.0 to
// writer b, told apart by an rw label); the writers rotate every minute
// and upload each sealed file to SeaweedFS, deleting the local copy; a
// query instance serves both prefixes and asks the writers for what they
// hold locally; a second Prometheus reads only the query instance through
// remote_read. After the writers have files that exist only in the
// bucket, the same PromQL asked of both Prometheus servers gives the same
// series, timestamps and float bits. The writers answered the query
// instance from local data only (no bucket reads of theirs).
func TestObjectStoreTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("real-Prometheus object-storage test; not run with -short")
	}
	tmp := t.TempDir()
	bin := buildActaRemote(t, tmp, os.Getenv("ACTA_E2E_RACE") == "1")
	promBin := prometheusBinary(t)
	w := startWeed(t, objBucket)
	addrs := distinctAddrs(t, 5) // writer a, writer b, query, prometheus #1, #2
	vars := map[string]string{
		"Endpoint": w.endpoint, "Bucket": objBucket, "AccessKeyFile": w.accessKeyFile(), "SecretKeyFile": w.secretKeyFile(),
		"WriterA": addrs[0], "WriterB": addrs[1], "PrometheusAddr": addrs[3], "ActaRemoteAddr": addrs[2],
	}
	var nodes []*actaNode
	for i, n := range []struct{ name, tmpl, instance string }{
		{"writer-a", "acta-writer-objstore.yml", "writer-a"},
		{"writer-b", "acta-writer-objstore.yml", "writer-b"},
		{"query", "acta-query-objstore.yml", ""},
	} {
		v := map[string]string{"Listen": addrs[i], "DataDir": filepath.Join(tmp, n.name), "Instance": n.instance}
		for k, x := range vars {
			v[k] = x
		}
		node := &actaNode{name: n.name, bin: bin, addr: addrs[i], dir: v["DataDir"], owner: t,
			cfg: renderConfig(t, n.tmpl, filepath.Join(tmp, n.name+".yml"), v)}
		node.start(t)
		nodes = append(nodes, node)
	}
	writerA, writerB, query := nodes[0], nodes[1], nodes[2]
	targetAddr, stopTarget := startTarget(t)
	vars["TargetAddr"] = targetAddr
	writerCfg := renderConfig(t, "prometheus-writer-objstore.yml", filepath.Join(tmp, "prometheus-writer.yml"), vars)
	readerCfg := renderConfig(t, "prometheus-reader.yml", filepath.Join(tmp, "prometheus-reader.yml"), vars)
	startPrometheus := func(name, cfg, addr string) *process {
		p := startProcess(t, t, name, filepath.Join(tmp, name+".log"), promBin, "--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(tmp, name+"-tsdb"), "--web.listen-address="+addr, "--storage.remote.flush-deadline=30s")
		waitReady(t, p, "http://"+addr+"/-/ready", 2*time.Minute)
		return p
	}
	p2 := startPrometheus("prometheus2", readerCfg, addrs[4])
	start := time.Now().Truncate(time.Second)
	p1 := startPrometheus("prometheus1", writerCfg, addrs[3])
	prom1 := promAPI{name: "prometheus#1 (own TSDB)", base: "http://" + addrs[3]}
	prom2 := promAPI{name: "prometheus#2 (remote read from the query instance)", base: "http://" + addrs[4]}
	procs := []*process{p1, p2, writerA.p, writerB.p, query.p, w.p}

	// The writers' files of the first minutes are sealed, compacted,
	// uploaded and gone locally.
	hold(t, start.Add(40*time.Second), procs...)
	stopTarget() // its series get stale markers
	hold(t, time.Now().Add(10*time.Second), procs...)
	deadline := time.Now().Add(3 * time.Minute)
	for _, n := range []*actaNode{writerA, writerB} {
		for n.metric(t, "acta_tier_bucket_only_files") < 50 || n.metric(t, "acta_tier_local_deleted_files_total") < 50 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v files in the bucket only", n.name, n.metric(t, "acta_tier_bucket_only_files"))
			}
			hold(t, time.Now().Add(time.Second), procs...)
		}
		t.Logf("%s: %v files uploaded, %v in the bucket only, %v local", n.name, n.metric(t, "acta_tier_uploads_total", `result="ok"`),
			n.metric(t, "acta_tier_bucket_only_files"), localActaFiles(t, n.dir))
	}
	end := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	waitSent(t, prom1.base, end, 90*time.Second)
	want, err := ask(context.Background(), prom1, start, end, selector())
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range checks {
		if len(want.results[i]) == 0 {
			t.Fatalf("prometheus#1 has no result for %q", c.name)
		}
	}
	t.Logf("range [%s, %s]: prometheus#1 has %d series, %d raw samples", start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly),
		len(want.results[0]), countSamples(want.results[0]))
	compareEventually(t, time.Minute, start, end, func() []string { return compareOnce(prom2, want) })
	checkSpecialValues(t, want.results[0])
	checkNoFailedSends(t, prom1.base)
	if f := query.metric(t, "acta_tier_query_fetched_bytes_sum"); f == 0 {
		t.Fatal("the query instance fetched nothing from the bucket")
	}
	for _, n := range []*actaNode{writerA, writerB} {
		if f := n.metric(t, "acta_tier_query_fetched_bytes_sum"); f != 0 {
			t.Fatalf("%s fetched %v bytes from the bucket answering the query instance (local only)", n.name, f)
		}
	}
	t.Logf("query instance: %v bytes of blocks fetched from the bucket over %v selects", query.metric(t, "acta_tier_query_fetched_bytes_sum"),
		query.metric(t, "acta_tier_query_fetched_bytes_count"))
	// Stop Prometheus first (it flushes to the writers), then the rest.
	for _, p := range []*process{p1, p2} {
		if err := p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v", p.name, err)
		}
	}
	for _, n := range nodes {
		if err := n.p.stop(syscall.SIGTERM, time.Minute); err != nil {
			t.Errorf("%s on SIGTERM: %v, want exit 0", n.name, err)
		}
	}
}
