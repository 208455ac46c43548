package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig names the PEM files of the server's TLS setup, shared by the
// HTTP and OTLP gRPC listeners.
type TLSConfig struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, requires every client to present a
	// certificate signed by one of its CAs (mutual TLS).
	ClientCAFile string
}

// Enabled reports whether TLS is configured.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" || c.KeyFile != "" }

// ServerTLS builds the server's *tls.Config, or nil when TLS is off. The
// certificate is read once at start; TLS 1.2 is the floor, as Prometheus's
// own web config defaults to.
func ServerTLS(c TLSConfig) (*tls.Config, error) {
	if !c.Enabled() {
		if c.ClientCAFile != "" {
			return nil, errors.New("auth: tls.client_ca_file needs tls.cert_file and tls.key_file")
		}
		return nil, nil
	}
	if c.CertFile == "" || c.KeyFile == "" {
		return nil, errors.New("auth: tls.cert_file and tls.key_file must be set together")
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: cannot load tls.cert_file %s / tls.key_file %s: %w", c.CertFile, c.KeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("auth: tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("auth: tls.client_ca_file %s holds no PEM certificate", c.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
