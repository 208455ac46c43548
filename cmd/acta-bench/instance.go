package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// instance is a fresh server of one system for a scenario of its own (the
// kill -9 and memory scenarios): its own data dir and log, and a client.
type instance struct {
	p        *proc
	base     string
	dataDir  string
	logPath  string
	client   *http.Client
	keepData bool
}

// startFresh starts sys on an empty data dir named name under o.WorkDir
// and waits until it is ready. close kills it and, unless o.Keep, removes
// the data dir.
func startFresh(o Options, sys *system, name string) (*instance, error) {
	in := &instance{dataDir: filepath.Join(o.WorkDir, name), logPath: filepath.Join(o.WorkDir, name+".log"), keepData: o.Keep,
		client: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Load.Shards, DisableCompression: true}}}
	os.RemoveAll(in.dataDir)
	var err error
	if in.p, in.base, err = sys.start(in.dataDir, in.logPath); err != nil {
		in.close()
		return nil, err
	}
	if _, err := in.p.waitReady(in.base+sys.readyPath, 2*time.Minute); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// close kills the server (the scenarios throw the data away; a graceful
// stop would only spend minutes flushing it) and removes its data dir.
func (in *instance) close() {
	if in.p != nil {
		in.p.kill()
	}
	in.client.CloseIdleConnections()
	if !in.keepData {
		os.RemoveAll(in.dataDir)
	}
}

// ingestAll sends all of ld and fails unless every sample was written.
func (in *instance) ingestAll(ld *Load) (IngestResult, error) {
	ing := Ingest(in.client, in.base+"/api/v1/write", ld, 0)
	if ing.Failed > 0 || ing.Samples != ld.Samples {
		return ing, fmt.Errorf("%d requests failed, %d of %d samples written: %s", ing.Failed, ing.Samples, ld.Samples, ing.FirstError)
	}
	return ing, nil
}

// tolerance is the relative error a read-back allows: VictoriaMetrics
// rounds values to 12 significant digits, the others keep every bit.
func tolerance(o Options, sys *system) float64 {
	if sys.name == sysVM {
		return o.VMTolerance
	}
	return 0
}
