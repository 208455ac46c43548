// Package auth guards the server's endpoints: HTTP basic auth and bearer
// tokens checked in constant time (for HTTP handlers and the OTLP gRPC
// service alike), and the TLS configuration both listeners share.
//
// Credentials come from files, read once when the server starts, so they
// never appear in the config file, on the command line or in the process
// environment. Failures are logged without the offered credentials: the log
// names the client address, the path and which check failed, never a header
// value.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Config names the credential files. Any combination may be set; with
// both, either credential is accepted (a basic-auth client and a token
// client can share a server). With neither, every request is let in.
type Config struct {
	// BasicUsername and BasicPasswordFile enable HTTP basic auth together.
	BasicUsername     string
	BasicPasswordFile string
	// BearerTokenFile enables "Authorization: Bearer <token>".
	BearerTokenFile string
}

// ErrUnauthorized is returned for a missing or wrong credential. Its text
// never contains what the client sent.
var ErrUnauthorized = errors.New("auth: missing or invalid credentials")

// realm is sent in WWW-Authenticate with every 401.
const realm = "acta-remote"

// Authenticator checks an Authorization header value. The zero value (and
// a nil pointer) lets everything in.
type Authenticator struct {
	// Expected values are kept as SHA-256 digests so that the constant-time
	// compare sees equal lengths whatever the client sends: comparing the raw
	// secret would leak its length through timing.
	user, pass [sha256.Size]byte
	token      [sha256.Size]byte
	hasBasic   bool
	hasBearer  bool
	log        *slog.Logger
}

// New reads the credential files named by c. An empty or unreadable file is
// an error naming the file (never its contents); one trailing newline is
// stripped, as Prometheus does for its password and token files.
func New(c Config, log *slog.Logger) (*Authenticator, error) {
	if log == nil {
		log = slog.Default()
	}
	a := &Authenticator{log: log}
	if (c.BasicUsername == "") != (c.BasicPasswordFile == "") {
		return nil, errors.New("auth: auth.basic.username and auth.basic.password_file must be set together")
	}
	if c.BasicUsername != "" {
		pw, err := readSecret(c.BasicPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("auth: auth.basic.password_file: %w", err)
		}
		a.user = sha256.Sum256([]byte(c.BasicUsername))
		a.pass = sha256.Sum256(pw)
		a.hasBasic = true
	}
	if c.BearerTokenFile != "" {
		tok, err := readSecret(c.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("auth: auth.bearer_token_file: %w", err)
		}
		a.token = sha256.Sum256(tok)
		a.hasBearer = true
	}
	return a, nil
}

// ReadSecretFile reads a secret from a file as the server's own credential
// files are read: one trailing newline (and carriage return) stripped, an
// empty file refused; errors name the path, never the contents.
func ReadSecretFile(path string) ([]byte, error) { return readSecret(path) }

func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err // names the path, not the contents
	}
	b = []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return b, nil
}

// Enabled reports whether any credential is required.
func (a *Authenticator) Enabled() bool { return a != nil && (a.hasBasic || a.hasBearer) }

// Check verifies one Authorization header value.
func (a *Authenticator) Check(header string) error {
	if !a.Enabled() {
		return nil
	}
	scheme, rest, _ := strings.Cut(header, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case a.hasBasic && strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return ErrUnauthorized
		}
		u, p, ok := strings.Cut(string(raw), ":")
		if !ok {
			return ErrUnauthorized
		}
		uh, ph := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		// Both compares always run: no early exit on a wrong user name.
		okUser := subtle.ConstantTimeCompare(uh[:], a.user[:])
		okPass := subtle.ConstantTimeCompare(ph[:], a.pass[:])
		if okUser&okPass == 1 {
			return nil
		}
	case a.hasBearer && strings.EqualFold(scheme, "Bearer"):
		th := sha256.Sum256([]byte(rest))
		if subtle.ConstantTimeCompare(th[:], a.token[:]) == 1 {
			return nil
		}
	}
	return ErrUnauthorized
}

// challenge is the WWW-Authenticate value: one challenge per scheme the
// server accepts (RFC 9110 §11.6.1).
func (a *Authenticator) challenge() string {
	var cs []string
	if a.hasBasic {
		cs = append(cs, `Basic realm="`+realm+`", charset="UTF-8"`)
	}
	if a.hasBearer {
		cs = append(cs, `Bearer realm="`+realm+`"`)
	}
	return strings.Join(cs, ", ")
}

// Wrap returns next guarded by a; requests without a valid credential get
// 401 with WWW-Authenticate and never reach next. A nil or disabled
// Authenticator returns next unchanged.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	if !a.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.Check(r.Header.Get("Authorization")); err != nil {
			a.log.Warn("unauthorized request", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path,
				"credential", presence(r.Header.Get("Authorization")))
			w.Header().Set("WWW-Authenticate", a.challenge())
			http.Error(w, "401 unauthorized: missing or invalid credentials", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// presence describes what was offered without revealing it.
func presence(h string) string {
	if h == "" {
		return "none"
	}
	scheme, _, _ := strings.Cut(h, " ")
	switch {
	case strings.EqualFold(scheme, "Basic"):
		return "basic (rejected)"
	case strings.EqualFold(scheme, "Bearer"):
		return "bearer (rejected)"
	}
	return "unknown scheme (rejected)"
}

// GRPCOptions returns interceptors enforcing a on every unary and
// streaming call, reading the "authorization" metadata key (what gRPC
// clients, the Collector's otlp exporter included, send for
// headers: {authorization: ...}). Nil when a is disabled.
func (a *Authenticator) GRPCOptions() []grpc.ServerOption {
	if !a.Enabled() {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := a.checkGRPC(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := a.checkGRPC(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

func (a *Authenticator) checkGRPC(ctx context.Context, method string) error {
	var h string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			h = v[0]
		}
	}
	if a.Check(h) == nil {
		return nil
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	a.log.Warn("unauthorized gRPC call", "remote", remote, "method", method, "credential", presence(h))
	return status.Error(codes.Unauthenticated, "missing or invalid credentials")
}
