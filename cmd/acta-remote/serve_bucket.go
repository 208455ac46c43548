package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/auth"
	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/config"
)

// bucketClient builds the object store client of storage.object_store,
// reading its credential files (or leaving them to the AWS environment).
func bucketClient(cfg *config.Config, reg prometheus.Registerer) (*bucket.Client, error) {
	o := cfg.Storage.ObjectStore
	bc := bucket.Config{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Region: o.Region, Insecure: o.Insecure,
		TLS: bucket.TLSFiles{CAFile: o.TLS.CAFile, CertFile: o.TLS.CertFile, KeyFile: o.TLS.KeyFile,
			ServerName: o.TLS.ServerName, InsecureSkipVerify: o.TLS.InsecureSkipVerify},
		PartSize: int64(o.PartSize), RequestTimeout: o.RequestTimeout, Registerer: reg,
	}
	for _, f := range []struct {
		key, path string
		dst       *string
	}{{"access_key_id_file", o.AccessKeyIDFile, &bc.AccessKeyID}, {"secret_access_key_file", o.SecretAccessKeyFile, &bc.SecretAccessKey},
		{"session_token_file", o.SessionTokenFile, &bc.SessionToken}} {
		if f.path == "" {
			continue
		}
		b, err := auth.ReadSecretFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("storage.object_store.%s: %w", f.key, err)
		}
		*f.dst = string(b)
	}
	return bucket.New(bc)
}

// tierOptions maps storage.object_store onto the store's tier.
func tierOptions(cfg *config.Config, c *bucket.Client) *actastore.TierOptions {
	o := cfg.Storage.ObjectStore
	return &actastore.TierOptions{
		Client:               c,
		Layout:               bucket.Layout{Prefix: o.Prefix},
		Instance:             o.InstanceID,
		UploadInterval:       o.UploadInterval,
		LocalRetention:       time.Duration(o.LocalRetention),
		MinBackoff:           o.Backoff.Min,
		MaxBackoff:           o.Backoff.Max,
		Concurrency:          o.UploadConcurrency,
		DeleteDelay:          o.DeleteDelay,
		BlockIndexCacheBytes: int64(o.BlockIndexCacheSize),
		RetentionMaxAge:      time.Duration(o.Retention.MaxAge),
		RetentionOwner:       o.Retention.Owner,
		RetentionInterval:    o.Retention.Interval,
	}
}

// viewOptions maps storage.object_store onto a query-mode bucket view;
// its block index cache lives in the data directory.
func viewOptions(cfg *config.Config, c *bucket.Client) actastore.BucketViewOptions {
	o := cfg.Storage.ObjectStore
	return actastore.BucketViewOptions{
		Client:          c,
		Layout:          bucket.Layout{Prefix: o.Prefix},
		CacheDir:        filepath.Join(cfg.DataDir, "tier", "blockindex"),
		CacheBytes:      int64(o.BlockIndexCacheSize),
		RefreshInterval: o.Query.RefreshInterval,
		MaxQuerySeries:  cfg.RemoteRead.MaxSeriesPerQuery,
		MaxQuerySamples: cfg.RemoteRead.MaxSamplesPerQuery,
	}
}

// useBucket makes a read-only view read the files that exist only in the
// bucket of the server config at path (acta-remote query --config).
func useBucket(ro *actastore.ReadOnly, path string) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	o := cfg.Storage.ObjectStore
	if !o.Enabled {
		return fmt.Errorf("%s has no storage.object_store", path)
	}
	c, err := bucketClient(cfg, nil)
	if err != nil {
		return err
	}
	return ro.UseBucket(c, bucket.Layout{Prefix: o.Prefix}, o.InstanceID)
}
