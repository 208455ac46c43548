package bucket

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is how to reach one bucket of an S3-compatible object store.
type Config struct {
	Endpoint string // host or host:port, no scheme
	Bucket   string
	Region   string // "" lets the client ask the server (AWS) or use us-east-1
	Insecure bool   // plain HTTP instead of HTTPS
	// AccessKeyID and SecretAccessKey (and SessionToken) sign requests when
	// set; otherwise the standard AWS environment (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then the shared
	// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
	// profile AWS_PROFILE), then anonymous requests.
	AccessKeyID, SecretAccessKey, SessionToken string
	TLS                                        TLSFiles
	// PartSize: objects larger than this are uploaded in parts of this
	// size (S3 multipart upload; at least 5 MiB). Default 64 MiB.
	PartSize int64
	// RequestTimeout bounds one request (a ranged GET, a HEAD, a LIST page,
	// a small PUT); an upload gets it once per part. Default 30s.
	RequestTimeout time.Duration
	// MaxRetries: attempts of one request on a transient failure (the S3
	// client's own backoff), default 3. Callers retry whole operations with
	// their own backoff.
	MaxRetries int
	Registerer prometheus.Registerer // nil registers nothing
}

// TLSFiles are the PEM files of the client's TLS settings (HTTPS only).
type TLSFiles struct {
	CAFile             string // CAs to trust instead of the system's
	CertFile, KeyFile  string // a client certificate (mutual TLS)
	ServerName         string // expected name in the server's certificate
	InsecureSkipVerify bool
}

// Client talks to one bucket. It is safe for concurrent use.
type Client struct {
	cfg Config
	mc  *minio.Client
	m   *metrics
}

// Sentinels; errors wrap them with the key.
var (
	// ErrNotFound: no object of that key.
	ErrNotFound = errors.New("bucket: no such object")
	// ErrVerify: an uploaded object is not what was sent (size or CRC-32C
	// read back differ).
	ErrVerify = errors.New("bucket: uploaded object does not verify")
	// ErrShortRead: the object holds fewer bytes than asked for (cut short).
	ErrShortRead = errors.New("bucket: object shorter than expected")
)

// New returns a client of cfg's bucket. It sends nothing.
func New(cfg Config) (*Client, error) {
	if cfg.PartSize == 0 {
		cfg.PartSize = 64 << 20
	}
	if cfg.PartSize < 5<<20 {
		return nil, fmt.Errorf("bucket: part size %d below the S3 minimum of 5 MiB", cfg.PartSize)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 3
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}})
	}
	tr, err := transport(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        creds,
		Secure:       !cfg.Insecure,
		Transport:    tr,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("bucket: client for %s: %w", cfg.Endpoint, err)
	}
	return &Client{cfg: cfg, mc: mc, m: newMetrics(cfg.Registerer)}, nil
}

// transport is an HTTP transport with the TLS files and connection
// timeouts of cfg (request deadlines come from contexts).
func transport(cfg Config) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = cfg.RequestTimeout
	tr.MaxIdleConnsPerHost = 64
	t := cfg.TLS
	if cfg.Insecure || (t == TLSFiles{}) {
		return tr, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("bucket: read CA file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("bucket: CA file %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("bucket: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	tr.TLSClientConfig = tc
	return tr, nil
}

// Name is "s3://<bucket>": the prefix of every object's name in errors.
func (c *Client) Name() string { return "s3://" + c.cfg.Bucket }

// URL names an object in errors and logs.
func (c *Client) URL(key string) string { return c.Name() + "/" + key }

// wrap classifies an S3 client error.
func (c *Client) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	er := minio.ToErrorResponse(err)
	if er.Code == minio.NoSuchKey || er.StatusCode == http.StatusNotFound && er.Code != minio.NoSuchBucket {
		return fmt.Errorf("%w: %s", ErrNotFound, c.URL(key))
	}
	return fmt.Errorf("bucket: %s %s: %w", op, c.URL(key), err)
}

func (c *Client) timeout(ctx context.Context, n int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.RequestTimeout*time.Duration(n))
}

// CreateBucket creates the bucket unless it exists (tests, first set-up).
func (c *Client) CreateBucket(ctx context.Context) error {
	ctx, cancel := c.timeout(ctx, 1)
	defer cancel()
	ok, err := c.mc.BucketExists(ctx, c.cfg.Bucket)
	if err == nil && ok {
		return nil
	}
	if err := c.mc.MakeBucket(ctx, c.cfg.Bucket, minio.MakeBucketOptions{Region: c.cfg.Region}); err != nil {
		if er := minio.ToErrorResponse(err); er.Code == "BucketAlreadyOwnedByYou" || er.Code == "BucketAlreadyExists" {
			return nil
		}
		return fmt.Errorf("bucket: create %s: %w", c.cfg.Bucket, err)
	}
	return nil
}

// Put uploads size bytes of r as key: one PUT, or a multipart upload of
// PartSize parts for larger objects (the object appears only when the
// upload completes: an interrupted one leaves no object).
func (c *Client) Put(ctx context.Context, key string, r io.ReaderAt, size int64) error {
	ctx, cancel := c.timeout(ctx, 1+size/c.cfg.PartSize)
	defer cancel()
	began := time.Now()
	_, err := c.mc.PutObject(ctx, c.cfg.Bucket, key, io.NewSectionReader(r, 0, size), size, minio.PutObjectOptions{
		PartSize:    uint64(c.cfg.PartSize),
		ContentType: "application/octet-stream",
		NumThreads:  2,
	})
	c.m.observe("put", began, err)
	if err == nil {
		c.m.written.Add(float64(size))
	}
	return c.wrap("put", key, err)
}

// Verify reads key back and checks that it is size bytes with CRC-32C
// crc: what the bucket stores, not what was sent, so it holds on any S3
// implementation whatever checksums it keeps.
func (c *Client) Verify(ctx context.Context, key string, size int64, crc uint32) error {
	ctx, cancel := c.timeout(ctx, 1+size/c.cfg.PartSize)
	defer cancel()
	began := time.Now()
	st, err := c.mc.StatObject(ctx, c.cfg.Bucket, key, minio.StatObjectOptions{})
	c.m.observe("head", began, err)
	if err != nil {
		return c.wrap("head", key, err)
	}
	if st.Size != size {
		return fmt.Errorf("%w: %s is %d bytes, uploaded %d", ErrVerify, c.URL(key), st.Size, size)
	}
	began = time.Now()
	obj, err := c.mc.GetObject(ctx, c.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		c.m.observe("get", began, err)
		return c.wrap("get", key, err)
	}
	defer obj.Close()
	var got uint32
	var n int64
	buf := make([]byte, 256<<10)
	for {
		k, err := obj.Read(buf)
		got = UpdateCRC32C(got, buf[:k])
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			c.m.observe("get", began, err)
			return c.wrap("get", key, err)
		}
	}
	c.m.observe("get", began, nil)
	c.m.read.WithLabelValues("verify").Add(float64(n))
	if n != size || got != crc {
		return fmt.Errorf("%w: %s read back as %d bytes with CRC-32C %08x, uploaded %d bytes with %08x", ErrVerify, c.URL(key), n, got, size, crc)
	}
	return nil
}

// GetRange reads n bytes of key from offset off with one ranged GET.
// purpose labels the bytes in acta_bucket_read_bytes_total ("block",
// "discovery", ...). An object shorter than off+n is ErrShortRead.
func (c *Client) GetRange(ctx context.Context, key string, off, n int64, purpose string) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	ctx, cancel := c.timeout(ctx, 1)
	defer cancel()
	began := time.Now()
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, fmt.Errorf("bucket: range [%d, +%d) of %s: %w", off, n, c.URL(key), err)
	}
	obj, err := c.mc.GetObject(ctx, c.cfg.Bucket, key, opts)
	if err != nil {
		c.m.observe("get", began, err)
		return nil, c.wrap("get", key, err)
	}
	defer obj.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(obj, buf)
	c.m.read.WithLabelValues(purpose).Add(float64(k))
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		c.m.observe("get", began, nil)
		return nil, fmt.Errorf("%w: %s: %d bytes at offset %d, got %d", ErrShortRead, c.URL(key), n, off, k)
	}
	c.m.observe("get", began, err)
	if err != nil {
		if er := minio.ToErrorResponse(err); er.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			return nil, fmt.Errorf("%w: %s: %d bytes at offset %d: %v", ErrShortRead, c.URL(key), n, off, err)
		}
		return nil, c.wrap("get", key, err)
	}
	return buf, nil
}

// Get reads a whole object of at most maxBytes bytes.
func (c *Client) Get(ctx context.Context, key string, maxBytes int64, purpose string) ([]byte, error) {
	ctx, cancel := c.timeout(ctx, 1+maxBytes/c.cfg.PartSize)
	defer cancel()
	began := time.Now()
	obj, err := c.mc.GetObject(ctx, c.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		c.m.observe("get", began, err)
		return nil, c.wrap("get", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, maxBytes+1))
	c.m.observe("get", began, err)
	c.m.read.WithLabelValues(purpose).Add(float64(len(b)))
	if err != nil {
		return nil, c.wrap("get", key, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("bucket: %s is larger than the %d-byte limit", c.URL(key), maxBytes)
	}
	return b, nil
}

// PutBytes uploads a small object.
func (c *Client) PutBytes(ctx context.Context, key string, b []byte) error {
	return c.Put(ctx, key, bytes.NewReader(b), int64(len(b)))
}

// ObjectInfo is one listed object, or a common prefix (Prefix set, the
// rest zero) in a listing that is not recursive.
type ObjectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
	Prefix   bool
}

// List calls fn with every object under prefix, in key order; without
// recursive, deeper keys come as their common prefixes ("a/b/").
func (c *Client) List(ctx context.Context, prefix string, recursive bool, fn func(ObjectInfo) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	for o := range c.mc.ListObjects(ctx, c.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive}) {
		if o.Err != nil {
			c.m.observe("list", began, o.Err)
			return c.wrap("list", prefix, o.Err)
		}
		info := ObjectInfo{Key: o.Key, Size: o.Size, Modified: o.LastModified, Prefix: strings.HasSuffix(o.Key, "/") && o.Size == 0 && o.ETag == ""}
		if err := fn(info); err != nil {
			c.m.observe("list", began, nil)
			return err
		}
	}
	c.m.observe("list", began, nil)
	return nil
}

// Delete removes key; a key already gone is not an error.
func (c *Client) Delete(ctx context.Context, key string) error {
	ctx, cancel := c.timeout(ctx, 1)
	defer cancel()
	began := time.Now()
	err := c.mc.RemoveObject(ctx, c.cfg.Bucket, key, minio.RemoveObjectOptions{})
	c.m.observe("delete", began, err)
	if err = c.wrap("delete", key, err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// AbortUploads aborts every multipart upload under prefix that was begun
// and never completed (a crash mid-upload), so no part lingers; it
// returns how many.
func (c *Client) AbortUploads(ctx context.Context, prefix string) (int, error) {
	ctx, cancel := c.timeout(ctx, 4)
	defer cancel()
	n := 0
	for u := range c.mc.ListIncompleteUploads(ctx, c.cfg.Bucket, prefix, true) {
		if u.Err != nil {
			return n, c.wrap("list uploads", prefix, u.Err)
		}
		if err := c.mc.RemoveIncompleteUpload(ctx, c.cfg.Bucket, u.Key); err != nil {
			return n, c.wrap("abort upload", u.Key, err)
		}
		n++
	}
	return n, nil
}
