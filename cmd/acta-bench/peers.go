package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// system is one storage backend under test and how to drive it.
type system struct {
	name   string
	protos []string // remote-write versions it receives
	// start runs it on a fresh loopback port with dataDir; base is its URL.
	start     func(dataDir, logPath string) (p *proc, base string, err error)
	readyPath string
	// flush makes everything ingested durable and compacted the way the
	// system's docs say, before the stop; it returns a directory holding
	// the compacted form when that differs from the data dir (Prometheus's
	// snapshot), or "".
	flush func(c *http.Client, base, dataDir string) (string, error)
	// compactSkip excludes rebuildable files from the compacted size.
	compactSkip func(rel string) bool
	reader      func(c *http.Client, base string) reader
	notes       []string
	// settle: acta-remote's maintenance can be waited for (settleActa).
	settle bool
	// crashSys is the instance the kill -9 scenario runs (acta-remote with
	// limits that keep everything in the head); nil: this one.
	crashSys *system
	// crashWait is how long the kill -9 scenario waits after the last
	// request before the kill (vmCrashWait).
	crashWait time.Duration
	// searchable, when set, makes what was just ingested readable
	// (VictoriaMetrics's force_flush) without the whole flush.
	searchable func(c *http.Client, base string) error
}

const (
	sysActa     = "acta-remote"
	sysActaLive = "acta-remote-live"
	sysProm     = "prometheus"
	sysVM       = "victoriametrics"
)

// actaBenchConfig is the server's default config but for maintenance
// passes every 5 s instead of every minute (the waits for compaction are
// shorter; what it writes is the same) and OTLP/gRPC, whose fixed port
// would collide between runs.
const actaBenchConfig = "rotation:\n  interval: 5s\notlp:\n  grpc:\n    enabled: false\n"

// actaSystem is acta-remote with configFile, or with the bench's defaults:
// the server's, except that OTLP/gRPC (a fixed port) is off so runs never
// collide with another server.
func actaSystem(bin, workDir, configFile string, gomaxprocs int) (*system, error) {
	notes := []string{"config: server defaults (wal_sync: always, block_rows 4096, max_head_age 5m wall clock, rotation 1d, tiers 7d and 28d) except rotation.interval 5s (maintenance passes come sooner; the bytes are the same) and OTLP/gRPC off"}
	if configFile == "" {
		configFile = filepath.Join(workDir, "acta-remote.yaml")
		if err := os.WriteFile(configFile, []byte(actaBenchConfig), 0o644); err != nil {
			return nil, err
		}
	} else {
		notes = []string{"config: " + configFile}
	}
	return newActaSystem(sysActa, bin, configFile, gomaxprocs, []string{protoRW1, protoRW2}, notes), nil
}

// actaLiveSystem is acta-remote with the blocks a live Prometheus would
// leave: fed in real time at 15 s, a series' head reaches max_head_age (5 m
// of wall clock) at 20 samples, so each flush writes a 20-row block. A
// replay of hours in seconds never reaches that age and writes one large
// block per series instead, which flatters bytes/sample until sealed files
// are compacted. Only the disk and read figures of this variant mean
// anything: its ingest rate is that of flushing every 20 samples at replay
// speed.
func actaLiveSystem(bin, workDir string, interval time.Duration, gomaxprocs int) (*system, error) {
	rows := max(1, int(5*time.Minute/interval))
	configFile := filepath.Join(workDir, "acta-remote-live.yaml")
	cfg := fmt.Sprintf("storage:\n  block_rows: %d\n%s", rows, actaBenchConfig)
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return newActaSystem(sysActaLive, bin, configFile, gomaxprocs, []string{protoRW1},
		[]string{fmt.Sprintf("block_rows %d: the %d-sample blocks max_head_age 5m leaves under live 15 s scrapes, before any compaction; its ingest figures are not meaningful", rows, rows)}), nil
}

// actaCrashSystem is acta-remote for the kill -9 scenario: the bench's
// config with limits that flush nothing before the kill, so the restart
// finds every sample in the WAL alone, as Prometheus does with its head.
// A head is flushed at block_rows samples, max_head_age after its oldest
// arrived (wall clock), or when the whole head holds more than a
// sixteenth of max_head_bytes or 512 bytes a series (flushLargest);
// max_head_samples would refuse writes.
func actaCrashSystem(bin, workDir string, samples, gomaxprocs int) (*system, error) {
	rows := min(max(4096, 2*samples), 1<<20)
	configFile := filepath.Join(workDir, "acta-remote-kill9.yaml")
	cfg := fmt.Sprintf("storage:\n  block_rows: %d\n  max_head_age: 24h\n  max_head_bytes: 64GiB\n  max_head_samples: 0\n%s", rows, actaBenchConfig)
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	note := fmt.Sprintf("kill -9 scenario: storage.block_rows %d, max_head_age 24h, max_head_bytes 64GiB, max_head_samples 0, so that nothing is flushed before the kill (WAL checkpoints at their default, storage.wal_checkpoint_bytes 16MiB)", rows)
	return newActaSystem(sysActa, bin, configFile, gomaxprocs, []string{protoRW1}, []string{note}), nil
}

func newActaSystem(name, bin, configFile string, gomaxprocs int, protos, notes []string) *system {
	return &system{
		name:   name,
		protos: protos,
		start: func(dataDir, logPath string) (*proc, string, error) {
			addr, err := freeAddr()
			if err != nil {
				return nil, "", err
			}
			p, err := startProc(name, bin, []string{"serve", "--config", configFile, "--listen", addr, "--data-dir", dataDir}, gomaxprocs, logPath)
			return p, "http://" + addr, err
		},
		readyPath: "/-/ready",
		// A graceful stop flushes every head buffer into the series files
		// and syncs; there is no separate compaction step yet.
		flush:  func(*http.Client, string, string) (string, error) { return "", nil },
		reader: func(c *http.Client, base string) reader { return remoteReader(c, base+"/api/v1/read") },
		notes:  notes,
		settle: true,
	}
}

func prometheusSystem(bin, workDir string, gomaxprocs int) (*system, error) {
	cfg := filepath.Join(workDir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o644); err != nil {
		return nil, err
	}
	return &system{
		name:   sysProm,
		protos: []string{protoRW1, protoRW2},
		start: func(dataDir, logPath string) (*proc, string, error) {
			addr, err := freeAddr()
			if err != nil {
				return nil, "", err
			}
			p, err := startProc(sysProm, bin, []string{
				"--config.file=" + cfg,
				"--storage.tsdb.path=" + dataDir,
				"--web.listen-address=" + addr,
				"--web.enable-remote-write-receiver",
				"--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest",
				"--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request",
				"--web.enable-admin-api", // for the TSDB snapshot below
			}, gomaxprocs, logPath)
			return p, "http://" + addr, err
		},
		readyPath: "/-/ready",
		flush:     prometheusSnapshot,
		reader:    func(c *http.Client, base string) reader { return remoteReader(c, base+"/api/v1/read") },
		notes: []string{
			"no out-of-order window: the data ends at the run's start time and every series arrives in order (shards kept within 10 simulated minutes), so the in-order head accepts all of it",
			"compacted size: a TSDB snapshot with the head (POST /api/v1/admin/tsdb/snapshot), i.e. every sample as persistent blocks; the data dir also keeps the WAL and head chunks",
		},
	}, nil
}

// prometheusSnapshot writes the head and every block into
// data/snapshots/<name> (head compacted into a block, other blocks
// hard-linked), Prometheus's documented way to get its data as blocks
// without waiting for the 2 h block cycle.
func prometheusSnapshot(c *http.Client, base, dataDir string) (string, error) {
	resp, err := c.Post(base+"/api/v1/admin/tsdb/snapshot?skip_head=false", "", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Data struct{ Name string } `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &r) != nil || r.Data.Name == "" {
		return "", fmt.Errorf("prometheus snapshot: HTTP %d: %.300s", resp.StatusCode, body)
	}
	return filepath.Join(dataDir, "snapshots", r.Data.Name), nil
}

func vmSystem(bin string, gomaxprocs int) *system {
	return &system{
		name:   sysVM,
		protos: []string{protoRW1}, // VictoriaMetrics has no Remote-Write 2.0 receiver
		start: func(dataDir, logPath string) (*proc, string, error) {
			addr, err := freeAddr()
			if err != nil {
				return nil, "", err
			}
			p, err := startProc(sysVM, bin, []string{
				"-storageDataPath=" + dataDir,
				"-httpListenAddr=" + addr,
				// The default retention (1 month) and -maxBackfillAge (=
				// retention) accept the simulated hours, which end now.
			}, gomaxprocs, logPath)
			return p, "http://" + addr, err
		},
		readyPath:  "/health",
		crashWait:  vmCrashWait,
		searchable: vmForceFlush,
		flush:      vmForceMerge,
		// cache/ holds rebuildable caches VictoriaMetrics writes on stop.
		compactSkip: func(rel string) bool { return rel == "cache" },
		reader:      func(c *http.Client, base string) reader { return vmExportReader(c, base) },
		notes: []string{
			"read back with /api/v1/export (JSON lines); there is no remote read",
			"flushed with /internal/force_flush, then /internal/force_merge of all partitions, awaited until vm_active_force_merges is 0, then a graceful stop; compacted size excludes cache/",
		},
	}
}

// vmGet sends a GET to one of VictoriaMetrics's /internal endpoints.
func vmGet(c *http.Client, base, path string) error {
	resp, err := c.Get(base + path)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("victoriametrics %s: HTTP %d", path, resp.StatusCode)
	}
	return nil
}

// vmForceFlush turns the rows VictoriaMetrics buffers into searchable
// parts (it does so by itself within seconds).
func vmForceFlush(c *http.Client, base string) error { return vmGet(c, base, "/internal/force_flush") }

// vmForceMerge flushes in-memory rows to parts and merges every partition,
// waiting for the merge, which VictoriaMetrics runs in the background.
func vmForceMerge(c *http.Client, base, _ string) (string, error) {
	for _, path := range []string{"/internal/force_flush", "/internal/force_merge?partition_prefix="} {
		if err := vmGet(c, base, path); err != nil {
			return "", err
		}
	}
	deadline := time.Now().Add(15 * time.Minute)
	time.Sleep(time.Second) // the merge goroutine registers itself first
	for time.Now().Before(deadline) {
		resp, err := c.Get(base + "/metrics")
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		active := "?"
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "vm_active_force_merges "); ok {
				active = v
			}
		}
		if active == "0" {
			return "", nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return "", fmt.Errorf("victoriametrics force merge still running after 15 min")
}
