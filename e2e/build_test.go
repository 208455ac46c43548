package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Prometheus release the tests run against. Prometheus 3.x publishes its Go
// module as v0.3MM.P, so v0.316.0 is Prometheus 3.16.0.
const (
	prometheusModule     = "github.com/prometheus/prometheus"
	prometheusModVersion = "v0.316.0"
	prometheusVersion    = "3.16.0"
)

// cacheDir is where built third-party programs are kept between runs
// (gitignored), one subdirectory per program and version.
func cacheDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("ACTA_E2E_CACHE"); d != "" {
		return d
	}
	wd, err := os.Getwd() // go test runs in the package directory: e2e/
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, ".bin")
}

var (
	prometheusOnce sync.Once
	prometheusPath string
	prometheusErr  error
)

// prometheusBinary returns the path of a Prometheus 3.16 binary, building it
// from the Go module proxy on first use.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ACTA_E2E_PROMETHEUS"); p != "" {
		return p
	}
	prometheusOnce.Do(func() { prometheusPath, prometheusErr = buildPrometheus(cacheDir(t)) })
	if prometheusErr != nil {
		t.Fatal(prometheusErr)
	}
	return prometheusPath
}

var (
	promtoolOnce sync.Once
	promtoolPath string
	promtoolErr  error
)

// promtoolBinary returns the path of Prometheus 3.16's promtool, built
// (once) like Prometheus itself, into the same cache directory.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ACTA_E2E_PROMTOOL"); p != "" {
		return p
	}
	promtoolOnce.Do(func() { promtoolPath, promtoolErr = buildPrometheusTool(cacheDir(t), "promtool") })
	if promtoolErr != nil {
		t.Fatal(promtoolErr)
	}
	return promtoolPath
}

// buildPrometheus installs cmd/prometheus at prometheusModVersion into
// root/prometheus-<version>/ unless it is already there.
//
// `go install pkg@version` builds with Prometheus's own go.mod (it has no
// replace directives), checked against the checksum database, and touches no
// go.mod of ours. The binary is built in a fresh directory and renamed into
// place, so an interrupted build never leaves a file a later run would trust.
func buildPrometheus(root string) (string, error) { return buildPrometheusTool(root, "prometheus") }

// buildPrometheusTool installs cmd/<tool> of the Prometheus module at
// prometheusModVersion into root/prometheus-<version>/ unless it is there.
func buildPrometheusTool(root, tool string) (string, error) {
	dir := filepath.Join(root, "prometheus-"+prometheusModVersion)
	bin := filepath.Join(dir, tool)
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
		tmp, err := os.MkdirTemp(root, "prometheus-build-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "e2e: building %s %s from the Go module proxy into %s (Prometheus: about 10 min on 2 cores, once)\n", tool, prometheusVersion, dir)
		start := time.Now()
		install := func() *exec.Cmd {
			cmd := exec.Command("go", "install",
				"-ldflags", "-X github.com/prometheus/common/version.Version="+prometheusVersion,
				prometheusModule+"/cmd/"+tool+"@"+prometheusModVersion)
			cmd.Dir = tmp // outside every module: pkg@version must not see ours
			cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off")
			return cmd
		}
		if stdout, stderr, err := runGoFetching(install); err != nil {
			return "", fmt.Errorf("cannot build %s %s: %v\n%s%s", tool, prometheusModVersion, err, stdout, stderr)
		}
		fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", tool, time.Since(start).Round(time.Second))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.Rename(filepath.Join(tmp, tool), bin); err != nil {
			// Another run may have finished the same build first; use its binary.
			if _, statErr := os.Stat(bin); statErr != nil {
				return "", fmt.Errorf("cannot move the %s build into place: %v", tool, err)
			}
		}
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), "version "+prometheusVersion) {
		return "", fmt.Errorf("%s is not Prometheus %s (delete %s to rebuild it):\n%s", bin, prometheusVersion, dir, out)
	}
	return bin, nil
}

// buildActaRemote builds ./cmd/acta-remote of the parent module into dir,
// with the race detector if race is set.
func buildActaRemote(t *testing.T, dir string, race bool) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "module github.com/acta-remote/acta-remote\n") {
		t.Fatalf("the parent of e2e/ is not the acta-remote module (%v)", err)
	}
	bin := filepath.Join(dir, "acta-remote")
	args := []string{"build", "-o", bin}
	if race {
		bin += "-race"
		args = []string{"build", "-o", bin, "-race"}
	}
	cmd := exec.Command("go", append(args, "./cmd/acta-remote")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build acta-remote: %v\n%s", err, out)
	}
	return bin
}
