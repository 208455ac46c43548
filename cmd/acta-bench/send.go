package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// IngestResult is what one system did with one Load.
type IngestResult struct {
	Proto         string  `json:"proto"`
	Samples       int64   `json:"samples"`
	Requests      int     `json:"requests"`
	Retries       int     `json:"retries"`        // 429/5xx/transport errors retried
	Failed        int     `json:"failed"`         // requests given up on (non-retryable 4xx or too many retries)
	FailedSamples int64   `json:"failed_samples"` // samples in those requests
	FirstError    string  `json:"first_error,omitempty"`
	ElapsedSec    float64 `json:"elapsed_s"`
	SamplesPerSec float64 `json:"samples_per_s"` // sustained: after the warm-up fraction
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
}

// sendOne is one HTTP attempt's outcome.
type attempt struct {
	done    time.Time
	latency time.Duration
	samples int // non-zero only on the attempt that succeeded
}

// Ingest sends ld to url, shard by shard in parallel, round by round, and
// measures throughput after warmup (a fraction of the samples) and the
// latency of every HTTP attempt after it.
func Ingest(client *http.Client, url string, ld *Load, warmup float64) IngestResult {
	res := IngestResult{Proto: ld.Proto}
	var (
		mu  sync.Mutex
		all []attempt
	)
	start := time.Now()
	for _, round := range ld.Rounds {
		var wg sync.WaitGroup
		for _, bodies := range round {
			wg.Go(func() {
				var local []attempt
				var retries, failed int
				var failedSamples int64
				var firstErr string
				for _, b := range bodies {
					as, err := post(client, url, ld.Proto, b)
					local = append(local, as...)
					retries += len(as) - 1
					if err != nil {
						failed++
						failedSamples += int64(b.Samples)
						if firstErr == "" {
							firstErr = err.Error()
						}
					}
				}
				mu.Lock()
				all = append(all, local...)
				res.Requests += len(bodies)
				res.Retries += retries
				res.Failed += failed
				res.FailedSamples += failedSamples
				if res.FirstError == "" {
					res.FirstError = firstErr
				}
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	end := time.Now()
	res.ElapsedSec = end.Sub(start).Seconds()
	slices.SortFunc(all, func(a, b attempt) int { return a.done.Compare(b.done) })
	for _, a := range all {
		res.Samples += int64(a.samples)
	}
	// Sustained rate: from the moment warmup of the samples were
	// acknowledged to the end, so start-up effects (first series
	// creation, empty caches, connection set-up) stay out.
	var cum int64
	warmAt, warmIdx := start, 0
	for i, a := range all {
		if float64(cum) >= warmup*float64(res.Samples) {
			warmAt, warmIdx = a.done, i
			break
		}
		cum += int64(a.samples)
	}
	if d := end.Sub(warmAt).Seconds(); d > 0 {
		res.SamplesPerSec = float64(res.Samples-cum) / d
	}
	var lat []time.Duration
	for _, a := range all[warmIdx:] {
		lat = append(lat, a.latency)
	}
	res.P50Ms, res.P99Ms = quantileMs(lat, 0.5), quantileMs(lat, 0.99)
	return res
}

// post sends one body, retrying what a remote-write client retries (429,
// 5xx, transport errors) with back-off, honouring Retry-After.
func post(client *http.Client, url, proto string, b Body) ([]attempt, error) {
	var as []attempt
	backoff := 50 * time.Millisecond
	for try := 0; ; try++ {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b.Data))
		if err != nil {
			return as, err
		}
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("User-Agent", "acta-bench")
		if proto == protoRW2 {
			req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
			req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
		} else {
			req.Header.Set("Content-Type", "application/x-protobuf")
			req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		var msg []byte
		if err == nil {
			msg, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		a := attempt{done: time.Now(), latency: time.Since(t0)}
		if err == nil && resp.StatusCode/100 == 2 {
			a.samples = b.Samples
			as = append(as, a)
			if proto == protoRW2 {
				// A 2.0 receiver reports what it stored; fewer than sent
				// is a partial write even under a 2xx.
				if n, perr := strconv.Atoi(resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written")); perr == nil && n != b.Samples {
					return as, fmt.Errorf("receiver wrote %d of %d samples", n, b.Samples)
				}
			}
			return as, nil
		}
		as = append(as, a)
		retryable := err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !retryable || try == 30 {
			if err != nil {
				return as, fmt.Errorf("after %d attempts: %v", try+1, err)
			}
			return as, fmt.Errorf("HTTP %d after %d attempts: %s", resp.StatusCode, try+1, bytes.TrimSpace(msg))
		}
		wait := backoff
		if err == nil {
			if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil {
				wait = time.Duration(s) * time.Second
			}
		}
		time.Sleep(min(wait, 2*time.Second))
		backoff = min(2*backoff, 2*time.Second)
	}
}

// quantileMs is the q-quantile of ds in milliseconds (nearest rank).
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	i = min(max(i-1, 0), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
