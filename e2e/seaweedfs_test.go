package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// SeaweedFS, the S3-compatible object store the object-storage tests run
// against. It has no tagged Go module releases: this is the pseudo-version
// of one commit. Its go.mod has replace directives, so `go install
// pkg@version` refuses it; it is built from its module directory instead
// (`go mod download`, then `go build ./weed` there, read-only).
const (
	seaweedModule  = "github.com/seaweedfs/seaweedfs"
	seaweedVersion = "v0.0.0-20261109003541-7506e5f91cd6"
	// The identity the server is configured with (-s3.config): requests
	// are signed, as real users run it.
	s3AccessKey = "AKIDACTAREMOTETEST"
	s3SecretKey = "acta-remote-test-secret-key"
)

var (
	seaweedOnce sync.Once
	seaweedPath string
	seaweedErr  error
)

// seaweedBinary returns weed, building it into the cache on first use
// (shared with the unit tests: bucket/s3test looks in the same place).
func seaweedBinary(t *testing.T) string {
	t.Helper()
	seaweedOnce.Do(func() { seaweedPath, seaweedErr = buildSeaweedFS(cacheDir(t)) })
	if seaweedErr != nil {
		t.Fatal(seaweedErr)
	}
	return seaweedPath
}

func buildSeaweedFS(root string) (string, error) {
	dir := filepath.Join(root, "seaweedfs-"+seaweedVersion)
	bin := filepath.Join(dir, "weed")
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
		tmp, err := os.MkdirTemp(root, "seaweedfs-build-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "e2e: building SeaweedFS %s from the Go module proxy into %s (about 5 min on 2 cores, once)\n", seaweedVersion, dir)
		start := time.Now()
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		dl := func() *exec.Cmd {
			cmd := exec.Command("go", "mod", "download", "-json", seaweedModule+"@"+seaweedVersion)
			cmd.Dir, cmd.Env = tmp, env // outside every module
			return cmd
		}
		out, stderr, err := runGoFetching(dl)
		if err != nil {
			return "", fmt.Errorf("cannot download SeaweedFS %s: %v\n%s%s", seaweedVersion, err, out, stderr)
		}
		var mod struct{ Dir string }
		if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
			return "", fmt.Errorf("go mod download of SeaweedFS: no module directory in %s", out)
		}
		build := func() *exec.Cmd {
			cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "weed"), "./weed")
			cmd.Dir = mod.Dir // its own go.mod and go.sum, verified; nothing is written there
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
			return cmd
		}
		if stdout, stderr, err := runGoFetching(build); err != nil {
			return "", fmt.Errorf("cannot build SeaweedFS %s: %v\n%s%s", seaweedVersion, err, stdout, stderr)
		}
		fmt.Fprintf(os.Stderr, "e2e: built SeaweedFS in %s\n", time.Since(start).Round(time.Second))
		if err := os.Rename(tmp, dir); err != nil {
			if _, statErr := os.Stat(bin); statErr != nil {
				return "", fmt.Errorf("cannot move the SeaweedFS build into place: %v", err)
			}
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "version") {
		return "", fmt.Errorf("%s version: %v\n%s (delete %s to rebuild it)", bin, err, out, dir)
	}
	return bin, nil
}

// TestBuildSeaweedFS builds weed into the cache (`make seaweedfs` runs it
// before the unit tests, whose object-storage tests need it).
func TestBuildSeaweedFS(t *testing.T) {
	bin := seaweedBinary(t)
	t.Logf("SeaweedFS %s at %s", seaweedVersion, bin)
}

// weed is one SeaweedFS server (master, volume, filer and S3 gateway in
// one process) on loopback ports, restartable on the same data.
type weed struct {
	endpoint string
	dir      string
	args     []string
	bin      string
	p        *process
	owner    *testing.T
	client   *minio.Client
}

// startWeed starts SeaweedFS with bucket created and its credentials
// written to files (accessKeyFile, secretKeyFile) for acta-remote.
func startWeed(t *testing.T, bucket string) *weed {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"identities":[{"name":"acta","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, s3AccessKey, s3SecretKey)
	for name, body := range map[string]string{"s3.json": cfg, "access-key-id": s3AccessKey + "\n", "secret-access-key": s3SecretKey + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addrs := distinctAddrs(t, 8)
	port := func(i int) string { return addrs[i][strings.LastIndexByte(addrs[i], ':')+1:] }
	w := &weed{endpoint: addrs[0], dir: dir, bin: seaweedBinary(t), owner: t}
	w.args = []string{"server", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3", "-s3.port=" + port(0), "-s3.port.grpc=" + port(1), "-master.port=" + port(2), "-master.port.grpc=" + port(3),
		"-volume.port=" + port(4), "-volume.port.grpc=" + port(5), "-filer.port=" + port(6), "-filer.port.grpc=" + port(7),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsPort=0", "-s3.config=" + filepath.Join(dir, "s3.json"),
		// A bucket takes 7 volumes on its first write; 8 (the default)
		// would allow one bucket.
		"-master.volumeSizeLimitMB=64", "-volume.max=200", "-volume.preStopSeconds=0"}
	var err error
	w.client, err = minio.New(w.endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	w.start(t)
	w.waitWritable(t, bucket, true)
	return w
}

func (w *weed) accessKeyFile() string { return filepath.Join(w.dir, "access-key-id") }
func (w *weed) secretKeyFile() string { return filepath.Join(w.dir, "secret-access-key") }

// start starts (or restarts) the server and waits for its S3 API.
func (w *weed) start(t *testing.T) {
	t.Helper()
	w.p = startProcess(t, w.owner, "seaweedfs", filepath.Join(w.dir, "weed.log"), w.bin, w.args...)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + w.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if !w.p.running() || time.Now().After(deadline) {
			t.Fatalf("SeaweedFS did not start: %v\n%s", err, tail(w.p.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitWritable waits until bucket takes writes (creating it first).
func (w *weed) waitWritable(t *testing.T, bucket string, create bool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var err error
		if create {
			if err = w.client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
				if ok, e := w.client.BucketExists(ctx, bucket); e == nil && ok {
					err = nil
				}
			}
		}
		if err == nil {
			_, err = w.client.PutObject(ctx, bucket, "e2e-probe", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{})
		}
		if err == nil {
			err = w.client.RemoveObject(ctx, bucket, "e2e-probe", minio.RemoveObjectOptions{})
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket %s takes no writes: %v\n%s", bucket, err, tail(w.p.logPath, 40))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stop stops the server: the bucket is down until start.
func (w *weed) stop(t *testing.T) {
	t.Helper()
	if err := w.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Logf("SeaweedFS stop: %v", err)
	}
}

// objects lists the keys under prefix with their sizes.
func (w *weed) objects(t *testing.T, bucket, prefix string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for o := range w.client.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		out[o.Key] = o.Size
	}
	return out
}
