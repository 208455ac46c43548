package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is one child program. Its stdout and stderr go to a log file that the
// test prints the tail of when it fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, valid after done is closed
}

// startProcess starts bin with args; failures to start fail t. The process
// is SIGKILLed when owner (t or a parent of it) ends if it is still running,
// so no run leaves anything behind, and a process started in one subtest can
// outlive it.
func startProcess(t, owner *testing.T, name, logPath, bin string, args ...string) *process {
	t.Helper()
	return startProcessIn(t, owner, name, logPath, "", bin, args...)
}

// startProcessIn is startProcess in working directory dir ("" for the
// test's own).
func startProcessIn(t, owner *testing.T, name, logPath, dir, bin string, args ...string) *process {
	t.Helper()
	// Append: a restarted process keeps writing to the same log, after a marker.
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "\n===== %s start %s: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), name, bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("cannot start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	owner.Cleanup(func() {
		if p.running() {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if owner.Failed() && firstTail(logPath) {
			owner.Logf("last lines of %s:\n%s", logPath, tail(logPath, 40))
		}
	})
	return p
}

var (
	tailedMu sync.Mutex
	tailed   = map[string]bool{}
)

// firstTail reports whether the log at path has not been printed yet: a
// restarted process shares its log with the earlier run, print it once.
func firstTail(path string) bool {
	tailedMu.Lock()
	defer tailedMu.Unlock()
	if tailed[path] {
		return false
	}
	tailed[path] = true
	return true
}

func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends sig and waits up to timeout for the exit, then SIGKILLs. It
// returns the exit status (nil for exit 0) or a timeout error.
func (p *process) stop(sig syscall.Signal, timeout time.Duration) error {
	if !p.running() {
		return fmt.Errorf("%s had already exited: %v", p.name, p.err)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of %v; killed", p.name, timeout, sig)
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeAddr returns a loopback address with a port that was free a moment ago.
// Passing a concrete port (not :0) lets a restarted server come back on the
// same address, which is what Prometheus keeps sending to.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitReady polls url until it answers 200, the process exits, or timeout.
func waitReady(t *testing.T, p *process, url string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready (%v); log %s:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 40))
		case <-ctx.Done():
			t.Fatalf("%s not ready at %s within %s (last: %s); log:\n%s", p.name, url, timeout, last, tail(p.logPath, 40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// findFiles returns every file under root whose name ends in suffix.
func findFiles(t *testing.T, root, suffix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), suffix) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}
