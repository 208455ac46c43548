// Package s3test starts a real S3-compatible server on loopback for tests:
// SeaweedFS's weed, built from the Go module proxy into the e2e cache
// (e2e/seaweedfs_test.go builds it; `make seaweedfs`). Tests that need it
// call Start, which skips the test when the binary is not built. Requests
// are signed: the server is configured with one identity, as real users
// run it.
package s3test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acta-remote/acta-remote/bucket"
)

// Version is the SeaweedFS module version the tests run against (it has
// no tagged Go module releases; this is the pseudo-version of the commit).
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// Credentials of the server's one identity.
const (
	AccessKey = "AKIDACTAREMOTETEST"
	SecretKey = "acta-remote-test-secret-key"
)

// Binary returns the weed binary, or "" when it is not built: $ACTA_WEED,
// else $ACTA_E2E_CACHE/seaweedfs-<Version>/weed, else the repository's
// e2e/.bin/seaweedfs-<Version>/weed.
func Binary() string {
	if p := os.Getenv("ACTA_WEED"); p != "" {
		return p
	}
	var dirs []string
	if d := os.Getenv("ACTA_E2E_CACHE"); d != "" {
		dirs = append(dirs, d)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Join(filepath.Dir(file), "..", "..", "e2e", ".bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "seaweedfs-"+Version, "weed")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Server is one running SeaweedFS (master, volume, filer and S3 gateway
// in one process).
type Server struct {
	Endpoint string // 127.0.0.1:port of the S3 API
	tb       testing.TB
	bin, dir string
	args     []string
	cmd      *exec.Cmd
	done     chan struct{}
	log      *os.File
	buckets  []string
}

var (
	sharedMu sync.Mutex
	shared   *Server
)

// Shared returns the package's one server (started on first use; starting
// takes seconds), with a bucket named bucketName: for tests that do not
// stop or restart it. The package's TestMain calls StopShared. It skips
// the test when weed is not built.
func Shared(tb testing.TB, bucketName string) *Server {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		if Binary() == "" {
			tb.Skip("SeaweedFS (weed) is not built: `make seaweedfs` builds it into the e2e cache")
		}
		dir, err := os.MkdirTemp("", "s3test-")
		if err != nil {
			tb.Fatal(err)
		}
		shared = start(tb, dir)
	}
	shared.createBucket(tb, bucketName)
	return shared
}

// StopShared stops the shared server, if one was started (TestMain).
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Kill()
		os.RemoveAll(shared.dir)
		shared = nil
	}
}

// Start starts a server of its own in a temporary directory, with a
// bucket named bucketName, and stops it when the test ends: for tests
// that stop, kill or restart it. It skips the test when weed is not
// built.
func Start(tb testing.TB, bucketName string) *Server {
	tb.Helper()
	if Binary() == "" {
		tb.Skip("SeaweedFS (weed) is not built: `make seaweedfs` builds it into the e2e cache")
	}
	s := start(tb, tb.TempDir())
	tb.Cleanup(s.Kill)
	s.createBucket(tb, bucketName)
	return s
}

func start(tb testing.TB, dir string) *Server {
	tb.Helper()
	bin := Binary()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		tb.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"identities":[{"name":"acta","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, AccessKey, SecretKey)
	if err := os.WriteFile(filepath.Join(dir, "s3.json"), []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := freePorts(tb, 8)
	s := &Server{Endpoint: fmt.Sprintf("127.0.0.1:%d", p[0]), tb: tb, bin: bin, dir: dir}
	s.args = []string{"server", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3", fmt.Sprint("-s3.port=", p[0]), fmt.Sprint("-s3.port.grpc=", p[1]),
		fmt.Sprint("-master.port=", p[2]), fmt.Sprint("-master.port.grpc=", p[3]),
		fmt.Sprint("-volume.port=", p[4]), fmt.Sprint("-volume.port.grpc=", p[5]),
		fmt.Sprint("-filer.port=", p[6]), fmt.Sprint("-filer.port.grpc=", p[7]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsPort=0",
		"-s3.config=" + filepath.Join(dir, "s3.json"), "-master.volumeSizeLimitMB=64",
		// A bucket is a collection that takes 7 volumes on its first write;
		// the default of 8 volumes would allow one bucket.
		"-volume.max=200", "-volume.preStopSeconds=0"}
	s.start(tb)
	return s
}

// createBucket creates a bucket and waits until it takes writes (the
// filer must be up, and SeaweedFS grows the bucket's volumes on its first
// write).
func (s *Server) createBucket(tb testing.TB, bucketName string) {
	tb.Helper()
	c := s.Client(tb, bucketName)
	deadline := time.Now().Add(60 * time.Second)
	ctx := context.Background()
	for {
		err := c.CreateBucket(ctx)
		if err == nil {
			err = c.PutBytes(ctx, "s3test-probe", []byte("probe"))
		}
		if err == nil {
			err = c.Delete(ctx, "s3test-probe")
		}
		if err == nil {
			if !slices.Contains(s.buckets, bucketName) {
				s.buckets = append(s.buckets, bucketName)
			}
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("s3test: cannot create bucket %s: %v\n%s", bucketName, err, s.logTail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Config is a client config of bucketName on this server, signed with the
// test identity.
func (s *Server) Config(bucketName string) bucket.Config {
	return bucket.Config{Endpoint: s.Endpoint, Bucket: bucketName, Region: "us-east-1", Insecure: true,
		AccessKeyID: AccessKey, SecretAccessKey: SecretKey, RequestTimeout: 10 * time.Second, MaxRetries: 1}
}

// Client is a client of bucketName on this server.
func (s *Server) Client(tb testing.TB, bucketName string) *bucket.Client {
	tb.Helper()
	c, err := bucket.New(s.Config(bucketName))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Start starts the server again (after Stop or Kill) on the same ports
// and data, and waits until its buckets take writes again (SeaweedFS
// needs seconds after a restart before its volumes do).
func (s *Server) Start() {
	s.tb.Helper()
	s.start(s.tb)
	for _, b := range s.buckets {
		s.createBucket(s.tb, b)
	}
}

func (s *Server) start(tb testing.TB) {
	tb.Helper()
	s.tb = tb
	lf, err := os.OpenFile(filepath.Join(s.dir, "weed.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.tb.Fatal(err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		s.tb.Fatalf("s3test: start weed: %v", err)
	}
	s.cmd, s.log, s.done = cmd, lf, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-s.done:
			s.tb.Fatalf("s3test: weed exited at start:\n%s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("s3test: S3 API on %s did not answer in 60s:\n%s", s.Endpoint, s.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s): the bucket is
// down until Start.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
	s.log.Close()
}

// Kill stops the server at once (SIGKILL).
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
	s.log.Close()
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "weed.log"))
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n ports free on loopback now.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ls []net.Listener
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}
