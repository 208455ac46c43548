package auth

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func secretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	a, err := New(Config{BasicUsername: "u", BasicPasswordFile: secretFile(t, "pw\n"), BearerTokenFile: secretFile(t, "tok\r\n")}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f := func(header string, ok bool) {
		t.Helper()
		if err := a.Check(header); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", header, err, ok)
		}
	}
	f("Basic "+b64("u:pw"), true)
	f("basic "+b64("u:pw"), true) // the scheme is case-insensitive (RFC 9110)
	f("Bearer tok", true)
	f("bearer tok", true)
	f("", false)
	f("Basic "+b64("u:pw\n"), false) // the trailing newline belongs to the file only
	f("Basic "+b64("u:pwx"), false)
	f("Basic "+b64("x:pw"), false)
	f("Basic "+b64("u"), false)
	f("Basic %%%", false)
	f("Bearer tokx", false)
	f("Bearer "+b64("u:pw"), false)
	f("Basic "+b64("u:tok"), false)
	f("Token tok", false)
	f("tok", false)

	var nilA *Authenticator
	if nilA.Enabled() || nilA.Check("") != nil {
		t.Error("a nil Authenticator must let everything in")
	}
}

func TestNewErrors(t *testing.T) {
	f := func(c Config, want string) {
		t.Helper()
		_, err := New(c, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c, err, want)
		}
	}
	f(Config{BasicUsername: "u"}, "must be set together")
	f(Config{BasicUsername: "u", BasicPasswordFile: "/nonexistent/pw"}, "auth.basic.password_file: open /nonexistent/pw")
	f(Config{BearerTokenFile: secretFile(t, "\n")}, "is empty")
}

func TestWrap(t *testing.T) {
	a, err := New(Config{BearerTokenFile: secretFile(t, "tok")}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++ }))
	for _, c := range []struct {
		authz string
		code  int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer tok", 200}} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/v1/write", nil)
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("%q: %d, want %d", c.authz, rec.Code, c.code)
		}
		if c.code == 401 && rec.Header().Get("WWW-Authenticate") != `Bearer realm="acta-remote"` {
			t.Errorf("%q: WWW-Authenticate %q", c.authz, rec.Header().Get("WWW-Authenticate"))
		}
	}
	if reached != 1 {
		t.Errorf("handler reached %d times, want 1", reached)
	}
	if !errors.Is(a.Check("x"), ErrUnauthorized) {
		t.Error("want ErrUnauthorized")
	}
}

func TestServerTLSErrors(t *testing.T) {
	if c, err := ServerTLS(TLSConfig{}); c != nil || err != nil {
		t.Errorf("TLS off: %v, %v", c, err)
	}
	if _, err := ServerTLS(TLSConfig{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}); err == nil ||
		!strings.Contains(err.Error(), "tls.cert_file /nonexistent/c.pem") {
		t.Errorf("missing cert: %v", err)
	}
	if _, err := ServerTLS(TLSConfig{ClientCAFile: "/x"}); err == nil {
		t.Error("client CA without a certificate accepted")
	}
}
