package config

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/acta-remote/acta-remote/bucket"
)

// Server modes (Config.Mode, --mode).
const (
	ModeWrite = "write" // ingest, local files, and (with an object store) uploads
	ModeQuery = "query" // read-only: serve every writer's prefix of a bucket
)

// ObjectStoreConfig is storage.object_store: sealed series files go to an
// S3-compatible bucket (package bucket), under <prefix>/<instance_id>/.
type ObjectStoreConfig struct {
	Enabled bool `yaml:"enabled"`
	// Endpoint is host or host:port, without a scheme (Insecure picks
	// plain HTTP).
	Endpoint string `yaml:"endpoint"`
	Bucket   string `yaml:"bucket"`
	Prefix   string `yaml:"prefix"`
	Region   string `yaml:"region"`
	Insecure bool   `yaml:"insecure"`
	// Credentials: from files (secrets never in the config), or when both
	// are empty the standard AWS environment and shared credentials file.
	AccessKeyIDFile     string         `yaml:"access_key_id_file"`
	SecretAccessKeyFile string         `yaml:"secret_access_key_file"`
	SessionTokenFile    string         `yaml:"session_token_file"`
	TLS                 ObjectStoreTLS `yaml:"tls"`
	// InstanceID is this writer's prefix: unique per writer, so writers
	// never contend.
	InstanceID        string        `yaml:"instance_id"`
	PartSize          ByteSize      `yaml:"part_size"`
	RequestTimeout    time.Duration `yaml:"request_timeout"`
	UploadInterval    time.Duration `yaml:"upload_interval"`
	UploadConcurrency int           `yaml:"upload_concurrency"`
	// LocalRetention keeps an uploaded file's local copy until its newest
	// sample is this old (0: until its upload is verified and published).
	LocalRetention      Period               `yaml:"local_retention"`
	Backoff             BackoffConfig        `yaml:"backoff"`
	DeleteDelay         time.Duration        `yaml:"delete_delay"`
	BlockIndexCacheSize ByteSize             `yaml:"block_index_cache_size"`
	Retention           BucketRetention      `yaml:"retention"`
	Query               ObjectStoreQueryMode `yaml:"query"`
}

// ObjectStoreTLS are the client's TLS files (HTTPS endpoints).
type ObjectStoreTLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// BackoffConfig bounds the wait after a failed upload cycle (doubling).
type BackoffConfig struct {
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// BucketRetention is bucket retention by age, run by exactly one instance.
type BucketRetention struct {
	MaxAge   Period        `yaml:"max_age"`
	Owner    bool          `yaml:"owner"`
	Interval time.Duration `yaml:"interval"`
}

// ObjectStoreQueryMode is what a query-mode server (mode: query) reads.
type ObjectStoreQueryMode struct {
	// RefreshInterval: how often the index objects are read again.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// Writers are live writers' remote-read URLs, asked for what they hold
	// locally (data not uploaded yet).
	Writers []string `yaml:"writers"`
	// WriterTimeout bounds one writer's answer.
	WriterTimeout time.Duration `yaml:"writer_timeout"`
	// WriterBearerTokenFile and WriterCAFile authenticate to the writers.
	WriterBearerTokenFile string `yaml:"writer_bearer_token_file"`
	WriterCAFile          string `yaml:"writer_ca_file"`
	// PartialResponse answers with what the bucket and the other writers
	// hold when a writer fails; false fails the query.
	PartialResponse bool `yaml:"partial_response"`
}

// S3 bucket names (the AWS rules every implementation accepts).
var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func (c *Config) validateObjectStore(v *validator) {
	v.oneOf("mode", c.Mode, ModeWrite, ModeQuery)
	o := c.Storage.ObjectStore
	const k = "storage.object_store."
	if c.Mode == ModeQuery && !o.Enabled {
		v.failf("mode", "query mode reads a bucket: set storage.object_store.enabled (and its endpoint and bucket)")
	}
	if !o.Enabled {
		return
	}
	switch {
	case o.Endpoint == "":
		v.failf(k+"endpoint", "must be set (host or host:port)")
	case strings.Contains(o.Endpoint, "://"):
		v.failf(k+"endpoint", "want host or host:port without a scheme, got %q (storage.object_store.insecure: true selects plain HTTP)", o.Endpoint)
	}
	if !bucketNameRE.MatchString(o.Bucket) {
		v.failf(k+"bucket", "want an S3 bucket name (3-63 of a-z, 0-9, '.', '-'), got %q", o.Bucket)
	}
	if err := bucket.ValidPrefix(o.Prefix); err != nil {
		v.failf(k+"prefix", "%v", err)
	}
	if c.Mode == ModeWrite {
		if err := bucket.ValidInstance(o.InstanceID); err != nil {
			v.failf(k+"instance_id", "%v (each writer needs its own)", err)
		}
		if c.Rotation.Retention.MaxAge != 0 {
			v.failf("rotation.retention.max_age", "must be 0 with storage.object_store: local copies follow storage.object_store.local_retention, "+
				"the bucket storage.object_store.retention.max_age (got %s)", c.Rotation.Retention.MaxAge)
		}
	} else if o.InstanceID != "" {
		v.failf(k+"instance_id", "a query-mode server writes no prefix: leave it empty (got %q)", o.InstanceID)
	}
	if (o.AccessKeyIDFile == "") != (o.SecretAccessKeyFile == "") {
		v.failf(k+"access_key_id_file", "access_key_id_file and secret_access_key_file must be set together, got %q and %q", o.AccessKeyIDFile, o.SecretAccessKeyFile)
	}
	if o.SessionTokenFile != "" && o.AccessKeyIDFile == "" {
		v.failf(k+"session_token_file", "needs access_key_id_file and secret_access_key_file")
	}
	if (o.TLS.CertFile == "") != (o.TLS.KeyFile == "") {
		v.failf(k+"tls", "cert_file and key_file must be set together")
	}
	if o.Insecure && (o.TLS != ObjectStoreTLS{}) {
		v.failf(k+"tls", "TLS settings need HTTPS: insecure is true")
	}
	v.rangeInt(k+"part_size", int64(o.PartSize), 5<<20, 5<<30)
	v.durationRange(k+"request_timeout", o.RequestTimeout, time.Second, time.Hour)
	v.durationRange(k+"upload_interval", o.UploadInterval, time.Second, 24*time.Hour)
	v.rangeInt(k+"upload_concurrency", int64(o.UploadConcurrency), 1, 256)
	v.durationRange(k+"local_retention", time.Duration(o.LocalRetention), 0, 100*365*day)
	v.durationRange(k+"backoff.min", o.Backoff.Min, 10*time.Millisecond, time.Hour)
	v.durationRange(k+"backoff.max", o.Backoff.Max, o.Backoff.Min, 24*time.Hour)
	v.durationRange(k+"delete_delay", o.DeleteDelay, time.Second, 30*day)
	v.rangeInt(k+"block_index_cache_size", int64(o.BlockIndexCacheSize), 1<<20, 1<<40)
	r := o.Retention
	switch {
	case r.Owner && r.MaxAge == 0:
		v.failf(k+"retention.owner", "the retention owner needs storage.object_store.retention.max_age")
	case !r.Owner && r.MaxAge != 0:
		v.failf(k+"retention.max_age", "is applied by the one instance with storage.object_store.retention.owner: true; set owner here, or leave max_age 0 (got %s)", r.MaxAge)
	case r.MaxAge != 0 && time.Duration(r.MaxAge) < time.Hour:
		v.failf(k+"retention.max_age", "must be 0 or at least 1h, got %s", r.MaxAge)
	}
	v.durationRange(k+"retention.interval", r.Interval, time.Second, 7*day)
	q := o.Query
	v.durationRange(k+"query.refresh_interval", q.RefreshInterval, time.Second, day)
	v.durationRange(k+"query.writer_timeout", q.WriterTimeout, time.Second, time.Hour)
	if c.Mode != ModeQuery && len(q.Writers) > 0 {
		v.failf(k+"query.writers", "only a query-mode server (mode: query) asks writers")
	}
	for i, w := range q.Writers {
		if u, err := url.Parse(w); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.failf(k+"query.writers", "entry %d: want an http(s) remote-read URL such as http://writer:9201/api/v1/read, got %q", i, w)
		}
	}
}
