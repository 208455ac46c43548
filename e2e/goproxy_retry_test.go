package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The CI failure that made runGoFetching retry, as cmd/go printed it.
const ciProxy503 = `go: github.com/prometheus/prometheus/cmd/promtool@v0.316.0: github.com/prometheus/prometheus/cmd/promtool@v0.316.0: reading https://proxy.golang.org/github.com/prometheus/prometheus/cmd/promtool/@v/v0.316.0.info: 503 Service Unavailable
	server response: upstream connect error or disconnect/reset before headers. reset reason: connection timeout`

func TestTransientProxyError(t *testing.T) {
	for _, c := range []struct {
		out       string
		transient bool
	}{
		{ciProxy503, true},
		{`go: example.com/m@v1.0.0: Get "https://proxy.golang.org/example.com/m/@v/v1.0.0.info": dial tcp 142.250.1.1:443: i/o timeout`, true},
		{`go: example.com/m@v1.0.0: Get "https://proxy.golang.org/example.com/m/@v/list": net/http: TLS handshake timeout`, true},
		{`go: downloading example.com/m v1.0.0: reading https://proxy.golang.org/example.com/m/@v/v1.0.0.zip: unexpected EOF`, true},
		{`{"Path": "example.com/m", "Version": "v1.0.0", "Error": "example.com/m@v1.0.0: reading https://proxy.golang.org/example.com/m/@v/v1.0.0.zip: 502 Bad Gateway"}`, true},
		// The version does not exist, or the code does not build: retrying cannot help.
		{`go: example.com/m@v9.9.9: reading https://proxy.golang.org/example.com/m/@v/v9.9.9.info: 404 Not Found
	server response: not found: example.com/m@v9.9.9: invalid version: unknown revision v9.9.9`, false},
		{`# github.com/prometheus/prometheus/cmd/promtool
cmd/promtool/main.go:12:2: undefined: foo`, false},
		{`# github.com/prometheus/prometheus/cmd/promtool
cmd/promtool/main.go:40:1: syntax error: unexpected EOF, expected }`, false},
		{`go: github.com/seaweedfs/seaweedfs@v0.0.0-1: verifying module: checksum mismatch`, false},
	} {
		if got := transientProxyError.MatchString(c.out); got != c.transient {
			t.Errorf("transient = %v, want %v for:\n%s", got, c.transient, c.out)
		}
	}
}

// attemptsScript is a real process standing in for cmd/go: it counts its
// runs in a file, fails the first `fails` of them printing failOut on
// stderr, then prints "built" on stdout.
func attemptsScript(t *testing.T, fails int, failOut string) (newCmd func() *exec.Cmd, runs func() int) {
	t.Helper()
	dir := t.TempDir()
	counter := filepath.Join(dir, "runs")
	msg := filepath.Join(dir, "fail-output")
	if err := os.WriteFile(msg, []byte(failOut+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo x >> "$1"; if [ "$(wc -l < "$1")" -le "$2" ]; then cat "$3" >&2; exit 1; fi; echo built`
	newCmd = func() *exec.Cmd {
		return exec.Command("sh", "-c", script, "sh", counter, strconv.Itoa(fails), msg)
	}
	runs = func() int {
		b, err := os.ReadFile(counter)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	return newCmd, runs
}

func shortRetryDelays(t *testing.T) {
	saved := proxyRetryDelays
	proxyRetryDelays = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	t.Cleanup(func() { proxyRetryDelays = saved })
}

func TestRunGoFetchingRetriesTheProxy(t *testing.T) {
	shortRetryDelays(t)

	// Two 503s, then the build succeeds: three runs, no error.
	newCmd, runs := attemptsScript(t, 2, ciProxy503)
	stdout, stderr, err := runGoFetching(newCmd)
	if err != nil || string(stdout) != "built\n" || len(stderr) != 0 || runs() != 3 {
		t.Fatalf("after two 503s: err %v, stdout %q, stderr %q, runs %d; want nil, \"built\\n\", empty, 3", err, stdout, stderr, runs())
	}

	// The proxy never comes back: every attempt runs, the last output and
	// the attempt count are returned.
	newCmd, runs = attemptsScript(t, 9, ciProxy503)
	_, stderr, err = runGoFetching(newCmd)
	if err == nil || !strings.Contains(err.Error(), "attempt 4 of 4") || runs() != 4 || string(stderr) != ciProxy503+"\n" {
		t.Fatalf("proxy always 503: err %v, runs %d, stderr %q; want \"attempt 4 of 4\", 4 runs, the 503 text", err, runs(), stderr)
	}

	// A compile error is not retried.
	newCmd, runs = attemptsScript(t, 9, "cmd/promtool/main.go:12:2: undefined: foo")
	_, _, err = runGoFetching(newCmd)
	if err == nil || strings.Contains(err.Error(), "attempt") || runs() != 1 {
		t.Fatalf("compile error: err %v, runs %d; want the error after 1 run", err, runs())
	}
}
