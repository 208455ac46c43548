package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one running server under test.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, valid after done is closed
}

// startProc runs bin with args, its output appended to logPath. Every
// system gets the same CPU budget through GOMAXPROCS: all three are Go
// programs whose parallelism follows it.
func startProc(name, bin string, args []string, gomaxprocs int, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "\n--- %s: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(gomaxprocs))
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls url until it answers 200.
func (p *proc) waitReady(url string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	c := &http.Client{Timeout: 2 * time.Second}
	for time.Since(start) < timeout {
		select {
		case <-p.done:
			return 0, fmt.Errorf("%s exited before it was ready: %v (see its log)", p.name, p.err)
		default:
		}
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s not ready at %s after %s", p.name, url, timeout)
}

// idleCPU is the CPU a process may use over one second, in seconds, and
// still count as idle (waitIdle): a twentieth of a core.
const idleCPU = 0.05

// waitIdle waits until p used under idleCPU of CPU over a whole second,
// at most timeout, and returns how long it worked before that second
// (0 when it was idle at once). Reads are timed on a
// server that has finished what its start-up left running after ready
// (acta-remote warms its reader cache, Prometheus may compact its head):
// the restart is timed on its own. An error is a /proc read's or the
// timeout's.
func (p *proc) waitIdle(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	prev, err := procCPU(p.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	for busy := time.Duration(0); busy < timeout; busy = time.Since(start) {
		time.Sleep(time.Second)
		cur, err := procCPU(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		if cur-prev < idleCPU {
			return busy, nil
		}
		prev = cur
	}
	return 0, fmt.Errorf("%s still busy after %s", p.name, timeout)
}

// peakRSS is the process's high-water resident set (VmHWM), in bytes.
func (p *proc) peakRSS() (int64, error) { return p.statusBytes("VmHWM") }

// rss is the process's resident set now (VmRSS), in bytes.
func (p *proc) rss() (int64, error) { return p.statusBytes("VmRSS") }

// statusBytes reads a kB field of /proc/pid/status, in bytes.
func (p *proc) statusBytes(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
}

// stop sends SIGTERM (every system flushes what it buffers on it) and waits;
// after timeout it kills, and says so, because the figures that follow
// would then not be of a clean stop.
func (p *proc) stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	select {
	case <-p.done:
		return 0, fmt.Errorf("%s had already exited: %v", p.name, p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-p.done:
		if p.err != nil {
			return time.Since(start), fmt.Errorf("%s exited with %v after SIGTERM", p.name, p.err)
		}
		return time.Since(start), nil
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		return time.Since(start), fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.name, timeout)
	}
}

// writtenBytes is what the exited process caused to be written to storage
// (ru_oublock × 512, the kernel's write_bytes of /proc/pid/io, counted
// when pages are dirtied), its stop's flush included; 0 while it runs.
func (p *proc) writtenBytes() int64 {
	select {
	case <-p.done:
	default:
		return 0
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Oublock * 512
	}
	return 0
}

// crash sends SIGKILL and waits: nothing the process buffers is
// written, as in a crash or an OOM kill. It fails if the process had
// already exited.
func (p *proc) crash() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had already exited: %v", p.name, p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// kill ends the process without ceremony (error paths, and instances
// whose data is thrown away).
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// diskUsage sums the files under dir as `du` does (allocated: st_blocks ×
// 512) and as `du --apparent-size` does (st_size), counting hard-linked
// files once (Prometheus snapshots hard-link blocks). skip(rel) prunes a
// subtree or file by its path relative to dir.
func diskUsage(dir string, skip func(rel string) bool) (alloc, apparent int64, err error) {
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel != "." && skip != nil && skip(rel) {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		if seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		alloc += st.Blocks * 512
		if !de.IsDir() {
			apparent += st.Size
		}
		return nil
	})
	return alloc, apparent, err
}
