package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// Secrets used by the tests: none of them may ever show up in a log line.
const (
	testUser     = "prometheus"
	testPassword = "s3cret-Pa55word-91f2"
	testToken    = "tok-7d1c0ffee-b3a7e4"
)

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// certs is a throw-away PKI in a temp dir: one CA signing a server
// certificate for 127.0.0.1 and a client certificate.
type certs struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
}

func makeCerts(t *testing.T, dir string) certs {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "acta-remote test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der, kd
	}
	sc, sk := leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	cc, ck := leaf(3, "test client", x509.ExtKeyUsageClientAuth)
	return certs{
		caFile:     write("ca.pem", "CERTIFICATE", caDER),
		serverCert: write("server.pem", "CERTIFICATE", sc),
		serverKey:  write("server-key.pem", "EC PRIVATE KEY", sk),
		clientCert: write("client.pem", "CERTIFICATE", cc),
		clientKey:  write("client-key.pem", "EC PRIVATE KEY", ck),
	}
}

// inProcess is serve() running in this test process.
type inProcess struct {
	cfg    *config.Config
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// serveInProcess runs serve with cfg (listen and grpc addresses must be
// fixed ports) until the test stops it, logging at debug into a buffer so
// the test can inspect every line.
func serveInProcess(t *testing.T, cfg *config.Config) *inProcess {
	t.Helper()
	p := &inProcess{cfg: cfg, logs: &syncBuffer{}, done: make(chan error, 1)}
	log := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- serve(ctx, cfg, log) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", cfg.Listen, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-p.done:
			t.Fatalf("serve exited before listening: %v\n%s", err, p.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen on %s\n%s", cfg.Listen, p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop cancels serve and waits for the store to close; safe to call twice.
func (p *inProcess) stop(t *testing.T) {
	t.Helper()
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// countStored opens the (stopped) server's store and counts the samples of
// series named name: what is on disk, not what an endpoint says.
func countStored(t *testing.T, dataDir, name string) int {
	t.Helper()
	st, err := actastore.Open(dataDir, actastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss := st.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	defer ss.Close()
	n := 0
	for ss.Next() {
		it := ss.At().Iterator()
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func writeSecret(t *testing.T, dir, name, secret string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeRequest(name string, ts int64, v float64) []byte {
	return testkit.RW1(prompb.TimeSeries{Labels: testkit.Labels("__name__", name, "job", "sec"), Samples: []prompb.Sample{{Timestamp: ts, Value: v}}})
}

func promClient(t *testing.T, rawURL string, hc config_util.HTTPClientConfig) (remote.WriteClient, remote.ReadClient) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	wu, _ := u.Parse("/api/v1/write")
	ru, _ := u.Parse("/api/v1/read")
	wc, err := remote.NewWriteClient("sec-test", &remote.ClientConfig{
		URL: &config_util.URL{URL: wu}, Timeout: model.Duration(10 * time.Second), HTTPClientConfig: hc})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := remote.NewReadClient("sec-test", &remote.ClientConfig{
		URL: &config_util.URL{URL: ru}, Timeout: model.Duration(10 * time.Second), HTTPClientConfig: hc,
		ChunkedReadLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return wc, rc
}

// readCount reads name over all time through Prometheus's read client.
func readCount(t *testing.T, rc remote.ReadClient, name string) (int, error) {
	ss, err := rc.Read(context.Background(), &prompb.Query{StartTimestampMs: 0, EndTimestampMs: math.MaxInt64,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name}}}, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			n++
		}
	}
	return n, ss.Err()
}

// TestServeAuthTLS drives the real server over TLS with basic auth and a
// bearer token, through Prometheus's own remote-write and remote-read
// clients configured as a prometheus.yml would (ca_file, basic_auth with
// password_file, authorization with credentials_file), plus raw requests
// and OTLP/gRPC. Wrong or missing credentials get 401 (UNAUTHENTICATED)
// and store nothing; no log line carries a credential.
func TestServeAuthTLS(t *testing.T) {
	dir := t.TempDir()
	pki := makeCerts(t, dir)
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Listen = freeAddr(t)
	cfg.OTLP.GRPC.ListenAddress = freeAddr(t)
	cfg.Auth.Basic.Username = testUser
	cfg.Auth.Basic.PasswordFile = writeSecret(t, dir, "password", testPassword)
	cfg.Auth.BearerTokenFile = writeSecret(t, dir, "token", testToken)
	cfg.TLS.CertFile, cfg.TLS.KeyFile = pki.serverCert, pki.serverKey
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := serveInProcess(t, cfg)
	base := "https://" + cfg.Listen
	tlsOnly := config_util.TLSConfig{CAFile: pki.caFile}

	// Good credentials, as Prometheus sends them.
	basic := config_util.HTTPClientConfig{TLSConfig: tlsOnly, BasicAuth: &config_util.BasicAuth{
		Username: testUser, PasswordFile: cfg.Auth.Basic.PasswordFile}}
	bearer := config_util.HTTPClientConfig{TLSConfig: tlsOnly, Authorization: &config_util.Authorization{
		Type: "Bearer", CredentialsFile: cfg.Auth.BearerTokenFile}}
	for i, hc := range []config_util.HTTPClientConfig{basic, bearer} {
		wc, rc := promClient(t, base, hc)
		if _, err := wc.Store(context.Background(), writeRequest("sec_ok", 1000+int64(i), float64(i)), 0); err != nil {
			t.Fatalf("client %d: write with good credentials: %v", i, err)
		}
		n, err := readCount(t, rc, "sec_ok")
		if err != nil || n != i+1 {
			t.Fatalf("client %d: read with good credentials: %d samples, %v; want %d", i, n, err, i+1)
		}
	}

	// Bad credentials through the same clients: the write is refused with
	// 401 (Prometheus reports it as a non-recoverable error) and reads fail.
	wrongPw := writeSecret(t, dir, "wrong-password", "not-the-password")
	wrongTok := writeSecret(t, dir, "wrong-token", "not-the-token")
	bad := map[string]config_util.HTTPClientConfig{
		"no credentials": {TLSConfig: tlsOnly},
		"wrong password": {TLSConfig: tlsOnly, BasicAuth: &config_util.BasicAuth{Username: testUser, PasswordFile: wrongPw}},
		"wrong user":     {TLSConfig: tlsOnly, BasicAuth: &config_util.BasicAuth{Username: "grafana", PasswordFile: cfg.Auth.Basic.PasswordFile}},
		"wrong token":    {TLSConfig: tlsOnly, Authorization: &config_util.Authorization{Type: "Bearer", CredentialsFile: wrongTok}},
		"token as basic": {TLSConfig: tlsOnly, BasicAuth: &config_util.BasicAuth{Username: testUser, PasswordFile: cfg.Auth.BearerTokenFile}},
	}
	for what, hc := range bad {
		wc, rc := promClient(t, base, hc)
		_, err := wc.Store(context.Background(), writeRequest("sec_denied", 2000, 1), 0)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s: write error %v, want a 401", what, err)
		}
		if _, err := readCount(t, rc, "sec_ok"); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s: read error %v, want a 401", what, err)
		}
	}

	// Raw requests: every protocol endpoint and /metrics answer 401 with a
	// challenge for each scheme; the probes stay open.
	caPool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(pki.caFile)
	caPool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool}}}
	do := func(method, path, authz string, body []byte) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	basicHdr := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for _, path := range []string{"/api/v1/write", "/api/v1/read", "/v1/metrics", "/otlp/v1/metrics", "/api/v1/otlp/v1/metrics", "/metrics"} {
		for _, authz := range []string{"", basicHdr(testUser, "x"), "Bearer x", "Bearer " + testPassword, basicHdr(testUser, testToken), "Digest abc", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser))} {
			code, h := do(http.MethodPost, path, authz, writeRequest("sec_denied", 3000, 1))
			if code != http.StatusUnauthorized {
				t.Errorf("POST %s with %q: %d, want 401", path, authz, code)
				continue
			}
			if c := h.Get("WWW-Authenticate"); !strings.Contains(c, `Basic realm="acta-remote"`) || !strings.Contains(c, `Bearer realm="acta-remote"`) {
				t.Errorf("POST %s: WWW-Authenticate %q, want Basic and Bearer challenges", path, c)
			}
		}
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		if code, _ := do(http.MethodGet, path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200 (probes stay open)", path, code)
		}
	}
	if code, _ := do(http.MethodGet, "/metrics", "Bearer "+testToken, nil); code != http.StatusOK {
		t.Errorf("GET /metrics with the token: %d, want 200", code)
	}
	if code, _ := do(http.MethodPost, "/api/v1/write", basicHdr(testUser, testPassword), writeRequest("sec_ok", 3000, 3)); code != http.StatusNoContent {
		t.Errorf("raw write with basic auth: %d, want 204", code)
	}
	// Plain HTTP to the TLS port never reaches a handler: Go's TLS server
	// answers 400 itself.
	if resp, err := http.Post("http://"+cfg.Listen+"/api/v1/write", "application/x-protobuf", bytes.NewReader(writeRequest("sec_denied", 4000, 1))); err != nil {
		t.Errorf("plain HTTP to the TLS listener: %v, want a 400 answer", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS listener: %d, want 400", resp.StatusCode)
		}
	}

	// OTLP/gRPC over TLS: the authorization metadata decides.
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("sec_grpc")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(time.UnixMilli(5000)))
	dp.SetDoubleValue(7)
	conn, err := grpc.NewClient(cfg.OTLP.GRPC.ListenAddress, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: caPool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gc := pmetricotlp.NewGRPCClient(conn)
	export := func(authz string) codes.Code {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if authz != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authz)
		}
		_, err := gc.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
		return status.Code(err)
	}
	for _, authz := range []string{"", "Bearer nope", basicHdr(testUser, "nope")} {
		if c := export(authz); c != codes.Unauthenticated {
			t.Errorf("gRPC Export with %q: %v, want Unauthenticated", authz, c)
		}
	}
	if c := export("Bearer " + testToken); c != codes.OK {
		t.Errorf("gRPC Export with the token: %v, want OK", c)
	}
	if c := export(basicHdr(testUser, testPassword)); c != codes.OK {
		t.Errorf("gRPC Export with basic auth: %v, want OK", c)
	}

	srv.stop(t)
	logs := srv.logs.String()
	if !strings.Contains(logs, "unauthorized request") || !strings.Contains(logs, "unauthorized gRPC call") {
		t.Errorf("401s were not logged:\n%.2000s", logs)
	}
	for _, secret := range []string{testPassword, testToken, "not-the-password", "not-the-token",
		base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPassword)),
		base64.StdEncoding.EncodeToString([]byte(testUser + ":x"))} {
		if strings.Contains(logs, secret) {
			t.Errorf("a credential (%.4s…) appears in the logs", secret)
		}
	}
	// On disk: the accepted samples, nothing of any refused request.
	if n := countStored(t, cfg.DataDir, "sec_denied"); n != 0 {
		t.Errorf("%d samples of refused requests were stored", n)
	}
	if n := countStored(t, cfg.DataDir, "sec_ok"); n != 3 {
		t.Errorf("sec_ok: %d samples stored, want 3", n)
	}
	if n := countStored(t, cfg.DataDir, "sec_grpc"); n != 1 {
		t.Errorf("sec_grpc: %d samples stored, want 1 (the same point twice)", n)
	}
}

// TestServeMutualTLS requires client certificates: Prometheus's client with
// cert_file/key_file gets in, one without is refused in the handshake, for
// remote write, remote read and OTLP/gRPC.
func TestServeMutualTLS(t *testing.T) {
	dir := t.TempDir()
	pki := makeCerts(t, dir)
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Listen = freeAddr(t)
	cfg.OTLP.GRPC.ListenAddress = freeAddr(t)
	cfg.TLS = config.TLSConfig{CertFile: pki.serverCert, KeyFile: pki.serverKey, ClientCAFile: pki.caFile}
	srv := serveInProcess(t, cfg)
	base := "https://" + cfg.Listen

	wc, rc := promClient(t, base, config_util.HTTPClientConfig{TLSConfig: config_util.TLSConfig{
		CAFile: pki.caFile, CertFile: pki.clientCert, KeyFile: pki.clientKey}})
	if _, err := wc.Store(context.Background(), writeRequest("mtls_ok", 1000, 1), 0); err != nil {
		t.Fatalf("write with a client certificate: %v", err)
	}
	if n, err := readCount(t, rc, "mtls_ok"); err != nil || n != 1 {
		t.Fatalf("read with a client certificate: %d, %v; want 1", n, err)
	}
	wc, rc = promClient(t, base, config_util.HTTPClientConfig{TLSConfig: config_util.TLSConfig{CAFile: pki.caFile}})
	if _, err := wc.Store(context.Background(), writeRequest("mtls_denied", 1000, 1), 0); err == nil {
		t.Error("write without a client certificate succeeded")
	}
	if _, err := readCount(t, rc, "mtls_ok"); err == nil {
		t.Error("read without a client certificate succeeded")
	}

	caPool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(pki.caFile)
	caPool.AppendCertsFromPEM(caPEM)
	clientCert, err := tls.LoadX509KeyPair(pki.clientCert, pki.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("mtls_grpc")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(time.UnixMilli(5000)))
	dp.SetDoubleValue(1)
	for _, withCert := range []bool{false, true} {
		tc := &tls.Config{RootCAs: caPool}
		if withCert {
			tc.Certificates = []tls.Certificate{clientCert}
		}
		conn, err := grpc.NewClient(cfg.OTLP.GRPC.ListenAddress, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
		cancel()
		conn.Close()
		if withCert != (err == nil) {
			t.Errorf("gRPC Export with client certificate=%v: err %v", withCert, err)
		}
	}
	srv.stop(t)
	for name, want := range map[string]int{"mtls_ok": 1, "mtls_denied": 0, "mtls_grpc": 1} {
		if n := countStored(t, cfg.DataDir, name); n != want {
			t.Errorf("%s: %d samples stored, want %d", name, n, want)
		}
	}
}
