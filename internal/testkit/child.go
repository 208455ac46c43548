package testkit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunAndKill runs the test binary again as a child that runs only the test
// named child, with env (NAME=value entries) added to this process's
// environment, and kills it with SIGKILL about after once it is ready. It
// returns N of every "ack N" line the child printed before it died, in the
// order printed.
//
// The child speaks on stdout, a line at a time: "ready" once it is set up
// (the wait for it, at most 30 s, does not count towards after), then
// "ack N" once work item N is durable. A line starting "error" fails the
// test, as does a child that ends by itself rather than by the kill, or
// never gets ready. Its stderr goes to this process's stderr. What the
// child does is the caller's (Ready, Fail and Acknowledge speak for it);
// crash tests use it to kill a writer at a random moment and then check
// that every acknowledged item survived.
func RunAndKill(t testing.TB, child string, env []string, after time.Duration) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []int
	var failure string // the first line that fails the test
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		readyOnce := sync.OnceFunc(func() { close(ready) })
		defer readyOnce() // a child that ends before "ready" ends the wait too
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				readyOnce()
			case strings.HasPrefix(line, "ack "):
				n, err := strconv.Atoi(line[4:])
				if err != nil && failure == "" {
					failure = "bad line " + strconv.Quote(line)
				}
				acks = append(acks, n)
			case strings.HasPrefix(line, "error") && failure == "":
				failure = line
				readyOnce()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		t.Fatalf("child %s %v never became ready", child, env)
	}
	time.Sleep(after)
	cmd.Process.Signal(syscall.SIGKILL)
	<-done // all of stdout read before Wait closes the pipe
	werr := cmd.Wait()
	if failure != "" {
		t.Fatalf("child %s %v: %s", child, env, failure)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child %s %v ended by itself before the kill: %v", child, env, werr)
	}
	return acks
}

// The child's side of RunAndKill's protocol.

// Ready tells the parent the child is set up: the kill may come from now.
func Ready() { fmt.Println("ready") }

// Fail tells the parent the child failed before its work began and ends
// the process with status 3.
func Fail(err error) {
	fmt.Printf("error %v\n", err)
	os.Exit(3)
}

// Acknowledge runs do(n) for n = first, first+1, ... on workers goroutines
// (each n once; with one worker, in order) and prints "ack N" once do(n)
// returned nil. An error is printed as "error item N: ..." and ends the
// process with status 4. It never returns: the parent kills the process.
func Acknowledge(workers, first int, do func(n int) error) {
	var mu sync.Mutex
	next := first
	claim := func() int {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next - 1
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				n := claim()
				err := do(n)
				mu.Lock() // one line at a time, never two interleaved
				if err != nil {
					fmt.Printf("error item %d: %v\n", n, err)
					os.Exit(4)
				}
				fmt.Printf("ack %d\n", n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
