package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Peer releases. Prometheus 3.x publishes its Go module as v0.3MM.P, so
// v0.316.0 is Prometheus 3.16.0 — the release e2e/ tests against.
const (
	prometheusModule     = "github.com/prometheus/prometheus"
	prometheusModVersion = "v0.316.0"
	prometheusVersion    = "3.16.0"
	vmModule             = "github.com/VictoriaMetrics/VictoriaMetrics"
	vmVersion            = "v1.151.0"
)

// cacheRoot is where third-party binaries are kept between runs: the same
// directory (and the same <program>-<version>/ layout) e2e/ uses, so a
// Prometheus built by either is reused by the other. ACTA_E2E_CACHE moves it
// for both.
func cacheRoot(repo string) string {
	if d := os.Getenv("ACTA_E2E_CACHE"); d != "" {
		return d
	}
	return filepath.Join(repo, "e2e", ".bin")
}

func prometheusBinary(repo string, logf func(string, ...any)) (string, error) {
	return installBinary(cacheRoot(repo), "prometheus-"+prometheusModVersion, "prometheus",
		prometheusModule+"/cmd/prometheus@"+prometheusModVersion,
		"-X github.com/prometheus/common/version.Version="+prometheusVersion, logf)
}

func vmBinary(repo string, logf func(string, ...any)) (string, error) {
	return installBinary(cacheRoot(repo), "victoria-metrics-"+vmVersion, "victoria-metrics",
		vmModule+"/app/victoria-metrics@"+vmVersion,
		"-X "+vmModule+"/lib/buildinfo.Version=victoria-metrics-"+vmVersion, logf)
}

// installBinary runs `go install pkg@version` into root/dir/ unless the
// binary is already there. As in e2e/: the program builds with its own
// go.mod, checked against the checksum database, from a directory outside
// every module; it is built in a temporary directory and renamed into place,
// so an interrupted build never leaves a binary a later run would trust.
func installBinary(root, dir, name, pkgAtVersion, ldflags string, logf func(string, ...any)) (string, error) {
	final := filepath.Join(root, dir)
	bin := filepath.Join(final, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, name+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	logf("building %s from the Go module proxy into %s (once; Prometheus takes about 10 min on 2 cores)", pkgAtVersion, final)
	start := time.Now()
	cmd := exec.Command("go", "install", "-ldflags", ldflags, pkgAtVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build %s: %v\n%s", pkgAtVersion, err, out)
	}
	logf("built %s in %s", name, time.Since(start).Round(time.Second))
	if err := os.Rename(tmp, final); err != nil {
		// Another run may have finished the same build first.
		if _, statErr := os.Stat(bin); statErr != nil {
			return "", fmt.Errorf("cannot move the %s build into place: %v", name, err)
		}
	}
	return bin, nil
}

// actaBinary builds ./cmd/acta-remote into dir, from the repository's
// committed HEAD (exported with git archive, so the figures belong to a
// commit and a half-edited working tree can neither break nor colour them)
// or, with worktree, from the files as they are now. It returns the binary
// and what it was built from.
func actaBinary(repo, dir string, worktree bool) (string, string, error) {
	bin := filepath.Join(dir, "acta-remote")
	src, version := repo, "working tree"
	if !worktree {
		out, err := exec.Command("git", "-C", repo, "rev-parse", "--short=12", "HEAD").Output()
		if err != nil {
			return "", "", fmt.Errorf("cannot find the HEAD commit (use --acta-worktree outside git): %v", err)
		}
		version = "commit " + string(bytes.TrimSpace(out))
		src = filepath.Join(dir, "acta-remote-src")
		os.RemoveAll(src)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return "", "", err
		}
		export := exec.Command("sh", "-c", "git -C \"$1\" archive HEAD | tar -x -C \"$2\"", "sh", repo, src)
		if out, err := export.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("cannot export HEAD: %v\n%s", err, out)
		}
		defer os.RemoveAll(src)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/acta-remote")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("cannot build acta-remote from %s: %v\n%s", version, err, out)
	}
	return bin, version, nil
}

// findRepo walks up from the working directory to the acta-remote module root.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/acta-remote/acta-remote\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the acta-remote repository (no go.mod with its module line above the working directory)")
		}
		dir = parent
	}
}
