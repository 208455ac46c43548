package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
)

func unsnappy(t *testing.T, b []byte, into interface{ Unmarshal([]byte) error }) {
	t.Helper()
	dec, err := snappy.Decode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := into.Unmarshal(dec); err != nil {
		t.Fatal(err)
	}
}

func TestBodies(t *testing.T) {
	ts := prompb.TimeSeries{Labels: Labels("b", "2", "a", "1", "odd"), Samples: []prompb.Sample{{Timestamp: 7, Value: 1.5}}}
	if want := []prompb.Label{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}}; !reflect.DeepEqual(ts.Labels, want) {
		t.Fatalf("Labels = %v, want %v (order kept, odd name dropped)", ts.Labels, want)
	}
	var w1 prompb.WriteRequest
	unsnappy(t, RW1(ts, ts), &w1)
	if len(w1.Timeseries) != 2 || !reflect.DeepEqual(w1.Timeseries[1], ts) {
		t.Fatalf("RW1 decodes to %+v", w1.Timeseries)
	}
	req := &writev2.Request{Symbols: []string{"", "__name__", "m"},
		Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Timestamp: 3, Value: 4}}}}}
	var w2 writev2.Request
	unsnappy(t, RW2(req), &w2)
	if !reflect.DeepEqual(w2.Symbols, req.Symbols) || !reflect.DeepEqual(w2.Timeseries[0].Samples, req.Timeseries[0].Samples) {
		t.Fatalf("RW2 decodes to %+v", &w2)
	}
	q := &prompb.Query{StartTimestampMs: 1, EndTimestampMs: 2, Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "x.*"}}}
	var rr prompb.ReadRequest
	unsnappy(t, ReadRequest([]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}, q, q), &rr)
	if len(rr.Queries) != 2 || rr.Queries[1].Matchers[0].Value != "x.*" || rr.AcceptedResponseTypes[0] != prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		t.Fatalf("ReadRequest decodes to %+v", &rr)
	}
}

// Send sets the non-empty headers, sends a bytes body with its length and
// a reader of unknown length chunked, and returns the whole answer.
func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, hasEnc := r.Header["Content-Encoding"]
		w.Header().Set("X-Seen", fmt.Sprintf("%s %s len=%d te=%v enc=%v", r.Method, r.Header.Get("Content-Type"), r.ContentLength, r.TransferEncoding, hasEnc))
		w.WriteHeader(http.StatusTeapot)
		w.Write(b)
	}))
	defer srv.Close()
	a := Post(t, srv.URL, map[string]string{"Content-Type": "x/y", "Content-Encoding": ""}, []byte("hello"))
	if a.Code != http.StatusTeapot || string(a.Body) != "hello" || a.Header.Get("X-Seen") != "POST x/y len=5 te=[] enc=false" {
		t.Fatalf("Post: %d %q %q", a.Code, a.Body, a.Header.Get("X-Seen"))
	}
	a = Send(t, http.MethodPut, srv.URL, nil, io.MultiReader(strings.NewReader("ab"), strings.NewReader("c")))
	if string(a.Body) != "abc" || a.Header.Get("X-Seen") != "PUT  len=-1 te=[chunked] enc=false" {
		t.Fatalf("Send chunked: %q %q", a.Body, a.Header.Get("X-Seen"))
	}
}

func TestReadAnswers(t *testing.T) {
	want := &prompb.ReadResponse{Results: []*prompb.QueryResult{{Timeseries: []*prompb.TimeSeries{{Labels: Labels("a", "b"), Samples: []prompb.Sample{{Timestamp: 1, Value: 2}}}}}}}
	got, err := ReadResponse(Encode(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadResponse = %+v, %v", got, err)
	}
	if _, err := ReadResponse([]byte("not snappy")); err == nil {
		t.Fatal("ReadResponse of a bad body: no error")
	}

	var buf bytes.Buffer
	cw := remote.NewChunkedWriter(&buf, nopFlusher{})
	for i := range 3 {
		b, _ := (&prompb.ChunkedReadResponse{QueryIndex: int64(i + 1)}).Marshal()
		if _, err := cw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	var idx []int64
	if err := Frames(bytes.NewReader(buf.Bytes()), 1<<20, func(c *prompb.ChunkedReadResponse) error {
		idx = append(idx, c.QueryIndex)
		return nil
	}); err != nil || !reflect.DeepEqual(idx, []int64{1, 2, 3}) {
		t.Fatalf("Frames: %v, %v", idx, err)
	}
	stop := errors.New("stop")
	if err := Frames(bytes.NewReader(buf.Bytes()), 1<<20, func(*prompb.ChunkedReadResponse) error { return stop }); err != stop {
		t.Fatalf("Frames returned %v, want f's error", err)
	}
	if err := Frames(bytes.NewReader(buf.Bytes()), 1, func(*prompb.ChunkedReadResponse) error { return nil }); err == nil {
		t.Fatal("a frame over maxFrame was read")
	}
}

type nopFlusher struct{}

func (nopFlusher) Flush() {}

// After FillDisk not even one byte more fits; removing the filler frees it.
func TestFillDisk(t *testing.T) {
	dir := MountTmpfs(t, 1<<20)
	filler := filepath.Join(dir, "filler")
	FillDisk(t, filler)
	f, err := os.Create(filepath.Join(dir, "one"))
	if err != nil {
		t.Fatal(err) // an empty file needs no data block
	}
	defer f.Close()
	if _, err := f.Write([]byte{1}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing a byte to a full disk: %v, want ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{1}); err != nil {
		t.Fatalf("writing after freeing space: %v", err)
	}
}

// TestKitChild is TestRunAndKill's child: it acknowledges 0, 1, 2, ...
func TestKitChild(t *testing.T) {
	if os.Getenv("TESTKIT_CHILD") == "" {
		t.Skip("only run as TestRunAndKill's child")
	}
	Ready()
	switch os.Getenv("TESTKIT_CHILD") {
	case "fail":
		Acknowledge(2, 0, func(n int) error {
			if n == 3 {
				return errors.New("boom")
			}
			return nil
		})
	case "exit":
		os.Exit(0)
	}
	Acknowledge(1, 0, func(int) error { time.Sleep(time.Millisecond); return nil })
}

// fatalRecorder is a testing.TB whose Fatal ends only its goroutine and
// keeps the message, so a test can watch another helper fail.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fatalRecorder) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

// A child's error line, and a child that ends by itself, fail the test.
func TestRunAndKillFails(t *testing.T) {
	for mode, want := range map[string]string{"fail": "error item 3: boom", "exit": "ended by itself before the kill"} {
		f := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			RunAndKill(f, "TestKitChild", []string{"TESTKIT_CHILD=" + mode}, 100*time.Millisecond)
		}()
		<-done
		if !strings.Contains(f.msg, want) {
			t.Errorf("child %s: RunAndKill failed with %q, want %q", mode, f.msg, want)
		}
	}
}

func TestRunAndKill(t *testing.T) {
	acks := RunAndKill(t, "TestKitChild", []string{"TESTKIT_CHILD=1"}, 200*time.Millisecond)
	if len(acks) < 10 {
		t.Fatalf("%d acks in 200 ms", len(acks))
	}
	for i, n := range acks {
		if n != i {
			t.Fatalf("ack %d is %d: lines lost or reordered", i, n)
		}
	}
}
