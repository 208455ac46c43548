package testkit

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Answer is what a server answered to one request.
type Answer struct {
	Code   int
	Body   []byte
	Header http.Header
}

// Send sends one request with http.DefaultClient and reads the whole
// answer. Each header entry is set on the request unless its value is
// empty (a test of a missing header leaves it empty). body may be nil;
// a body of unknown length (not a *bytes.Reader or *strings.Reader) goes
// out chunked. A transport error fails the test.
func Send(t testing.TB, method, url string, header map[string]string, body io.Reader) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s %s: %v", method, url, err)
	}
	return Answer{Code: resp.StatusCode, Body: b, Header: resp.Header}
}

// Post sends body to url with POST; see Send.
func Post(t testing.TB, url string, header map[string]string, body []byte) Answer {
	t.Helper()
	return Send(t, http.MethodPost, url, header, bytes.NewReader(body))
}
