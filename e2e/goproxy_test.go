package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"
)

// proxyRetryDelays are the waits between attempts of a go command that
// fetches from the Go module proxy: six attempts over about four minutes.
// A variable so the retry test can shorten it.
var proxyRetryDelays = []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second, 60 * time.Second, 120 * time.Second}

// transientProxyError matches what cmd/go prints when the module proxy (or
// the network before it) failed rather than the module: 5xx and 429 answers,
// timeouts and dropped connections (an "unexpected EOF" only after a URL:
// the compiler's "syntax error: unexpected EOF" is not the proxy's). A CI run once failed on
// "reading https://proxy.golang.org/...: 503 Service Unavailable ...
// connection timeout" while building promtool.
var transientProxyError = regexp.MustCompile(`(?i)` +
	`\b(429 Too Many Requests|500 Internal Server Error|502 Bad Gateway|503 Service Unavailable|504 Gateway Time-?out)\b` +
	`|connection (timeout|timed out|reset|refused)|i/o timeout|TLS handshake timeout` +
	`|https?://\S*: unexpected EOF|upstream connect error|temporary failure in name resolution`)

// runGoFetching runs the go command newCmd builds (a fresh *exec.Cmd per
// attempt: one cannot be run twice) and returns what it printed on stdout
// and on stderr. When it fails with a transient proxy error on either (`go
// mod download -json` reports errors in its JSON on stdout) it is run again
// after each of proxyRetryDelays; any other failure is returned at once,
// with the output of the last attempt.
func runGoFetching(newCmd func() *exec.Cmd) (stdout, stderr []byte, err error) {
	for attempt := 0; ; attempt++ {
		var outBuf, errBuf bytes.Buffer
		cmd := newCmd()
		cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
		err := cmd.Run()
		stdout, stderr = outBuf.Bytes(), errBuf.Bytes()
		transient := transientProxyError.Match(stdout) || transientProxyError.Match(stderr)
		if err == nil || !transient || attempt == len(proxyRetryDelays) {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%w (attempt %d of %d)", err, attempt+1, len(proxyRetryDelays)+1)
			}
			return stdout, stderr, err
		}
		d := proxyRetryDelays[attempt]
		fmt.Fprintf(os.Stderr, "e2e: the Go module proxy failed (attempt %d of %d), trying again in %s:\n%s%s",
			attempt+1, len(proxyRetryDelays)+1, d, stdout, stderr)
		time.Sleep(d)
	}
}
