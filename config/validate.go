package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Validate checks every value and returns all problems, each naming its key.
func (c *Config) Validate() error {
	var v validator
	// An empty host (":9201") listens on every interface: allowed, but
	// only when written out on purpose.
	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		v.failf("listen", "want host:port, got %q: %v", c.Listen, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.failf("listen", "port must be 0..65535, got %q", port)
	}
	if c.DataDir == "" {
		v.failf("data_dir", "must not be empty")
	}
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "text", "json")

	s := c.Storage
	v.oneOf("storage.wal_sync", s.WALSync, "always", "interval")
	if s.WALSync == "interval" {
		v.durationRange("storage.wal_sync_interval", s.WALSyncInterval, time.Millisecond, time.Hour)
	}
	v.rangeInt("storage.wal_segment_size", int64(s.WALSegmentSize), 1<<20, 1<<30)
	if s.WALCheckpointBytes != 0 {
		v.rangeInt("storage.wal_checkpoint_bytes", int64(s.WALCheckpointBytes), 1<<20, 1<<40)
	}
	v.rangeInt("storage.block_rows", int64(s.BlockRows), 1, 1<<20)
	v.durationRange("storage.max_head_age", s.MaxHeadAge, time.Second, 24*time.Hour)
	v.durationRange("storage.out_of_order_window", s.OutOfOrderWindow, 0, 365*24*time.Hour)
	v.rangeInt("storage.max_head_samples", s.MaxHeadSamples, 0, 1<<40)
	if s.MaxHeadBytes != 0 {
		v.rangeInt("storage.max_head_bytes", int64(s.MaxHeadBytes), 1<<20, 1<<50)
	}
	v.durationRange("storage.max_future", s.MaxFuture, 0, 100*365*24*time.Hour)
	v.rangeInt("storage.max_open_files", int64(s.MaxOpenFiles), 1, 1<<20)
	v.rangeInt("storage.zstd_level", int64(s.ZstdLevel), 1, 22)
	v.rangeInt("storage.max_series", int64(s.MaxSeries), 0, 1<<40)

	if b := int64(s.MemoryBudget); b != 0 {
		v.rangeInt("storage.memory_budget", b, 64<<20, 1<<50)
		if req, how := c.requestBytes(); b >= 64<<20 && req > b/2 {
			v.failf("storage.memory_budget", "requests in flight may hold %d bytes (%s), more than half the budget %d; lower max_concurrent or the body limits, or raise the budget", req, how, b)
		}
	}

	v.rangeInt("runtime.gogc", int64(c.Runtime.GOGC), 1, 1000)

	c.validateRotation(&v)
	c.validateQuery(&v)
	c.validateObjectStore(&v)

	w := c.RemoteWrite
	v.rangeInt("remote_write.max_body_bytes", int64(w.MaxBodyBytes), 1<<10, 1<<30)
	v.rangeInt("remote_write.max_decoded_bytes", int64(w.MaxDecodedBytes), 1<<10, 4<<30)
	if w.MaxDecodedBytes < w.MaxBodyBytes && w.MaxDecodedBytes >= 1<<10 {
		v.failf("remote_write.max_decoded_bytes", "must be at least remote_write.max_body_bytes (%d), got %d", w.MaxBodyBytes, w.MaxDecodedBytes)
	}
	v.rangeInt("remote_write.max_series_per_request", int64(w.MaxSeriesPerRequest), 1, 1<<30)
	v.rangeInt("remote_write.max_labels_per_series", int64(w.MaxLabelsPerSeries), 1, 1<<16)
	v.rangeInt("remote_write.max_label_name_length", int64(w.MaxLabelNameLength), 1, 1<<20)
	v.rangeInt("remote_write.max_label_value_length", int64(w.MaxLabelValueLength), 1, 1<<24)
	v.rangeInt("remote_write.max_concurrent", int64(w.MaxConcurrent), 1, 1<<16)
	v.durationRange("remote_write.max_queue_wait", w.MaxQueueWait, 0, time.Minute)

	r := c.RemoteRead
	v.rangeInt("remote_read.max_body_bytes", int64(r.MaxBodyBytes), 1<<10, 1<<30)
	v.rangeInt("remote_read.max_decoded_bytes", int64(r.MaxDecodedBytes), 1<<10, 4<<30)
	if r.MaxDecodedBytes < r.MaxBodyBytes && r.MaxDecodedBytes >= 1<<10 {
		v.failf("remote_read.max_decoded_bytes", "must be at least remote_read.max_body_bytes (%d), got %d", r.MaxBodyBytes, r.MaxDecodedBytes)
	}
	v.rangeInt("remote_read.max_samples_per_query", r.MaxSamplesPerQuery, 1, 1<<40)
	v.rangeInt("remote_read.max_series_per_query", int64(r.MaxSeriesPerQuery), 1, 1<<40)
	v.rangeInt("remote_read.max_concurrent", int64(r.MaxConcurrent), 1, 1<<16)
	v.durationRange("remote_read.max_queue_wait", r.MaxQueueWait, 0, time.Minute)
	v.rangeInt("remote_read.max_bytes_per_frame", int64(r.MaxBytesPerFrame), 1<<10, 1<<30)
	if (c.Auth.Basic.Username == "") != (c.Auth.Basic.PasswordFile == "") {
		v.failf("auth.basic", "username and password_file must be set together, got username %q and password_file %q",
			c.Auth.Basic.Username, c.Auth.Basic.PasswordFile)
	}
	if strings.Contains(c.Auth.Basic.Username, ":") {
		v.failf("auth.basic.username", "must not contain ':' (basic auth separates user and password with it)")
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		v.failf("tls", "cert_file and key_file must be set together, got cert_file %q and key_file %q", c.TLS.CertFile, c.TLS.KeyFile)
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		v.failf("tls.client_ca_file", "needs tls.cert_file and tls.key_file (mutual TLS is TLS first)")
	}
	if err := c.OTLP.validate(); err != nil {
		// validate names keys relative to the block, one problem per line.
		for _, line := range strings.Split(err.Error(), "\n") {
			v.errs = append(v.errs, fmt.Errorf("config: otlp.%s", line))
		}
	}
	return v.err()
}

// validator collects every problem so one run of the server reports them all.
type validator struct{ errs []error }

func (v *validator) failf(key, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("config: %s: "+format, append([]any{key}, args...)...))
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) oneOf(key, got string, allowed ...string) {
	for _, a := range allowed {
		if got == a {
			return
		}
	}
	v.failf(key, "must be one of %q, got %q", allowed, got)
}

func (v *validator) rangeInt(key string, got, lo, hi int64) {
	if got < lo || got > hi {
		v.failf(key, "must be between %d and %d, got %d", lo, hi, got)
	}
}

func (v *validator) durationRange(key string, got, lo, hi time.Duration) {
	if got < lo || got > hi {
		v.failf(key, "must be between %s and %s, got %s", lo, hi, got)
	}
}
