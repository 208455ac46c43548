package remoteread

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
	"github.com/acta-remote/acta-remote/rotation"
)

// acta-bench's every-series read at its default size: 10,000 series × 6 h
// of 15 s scrapes (1,440 samples each, timestamps jittered ±25 ms), values
// shaped like its generator's (cmd/acta-bench/gen_values.go): integer and
// 2-decimal counters, integer and 2-decimal gauges, full-precision noise,
// constants, cumulative histogram buckets; a stale marker ends one series
// in 50.
const (
	wideSeries  = 10_000
	wideSamples = 1_440
)

// wideData generates series i of the wide read.
func wideData(i int, t0 int64) (labels.Labels, []actastore.Sample) {
	rng := rand.New(rand.NewPCG(uint64(i), 17))
	kinds := []string{"node_network_receive_bytes_total", "node_cpu_seconds_total", "node_memory_Active_bytes",
		"node_load1", "scrape_duration_seconds", "node_filesystem_size_bytes", "http_request_duration_seconds_bucket"}
	kind := i % len(kinds)
	ls := labels.FromStrings("__name__", kinds[kind], "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250),
		"job", "node", "series", fmt.Sprint(i))
	ss := make([]actastore.Sample, wideSamples)
	rate := 1 + rng.Float64()*1000
	var units int64
	level := 1e6 * (1 + rng.Float64())
	for k := range ss {
		var v float64
		switch kind {
		case 0: // integer counter
			units += int64(rate * (0.7 + 0.6*rng.Float64()))
			v = float64(units)
		case 1: // 2-decimal counter
			units += int64(rate * (0.7 + 0.6*rng.Float64()))
			v = float64(units) / 100
		case 2: // integer gauge in pages
			level = max(4096, level+4096*math.Round(rng.NormFloat64()*3))
			v = math.Round(level/4096) * 4096
		case 3: // 2-decimal gauge
			level = max(0, level*0.9+rng.NormFloat64())
			v = math.Round(level*100) / 100
		case 4: // full-precision noise
			v = 0.05 * (0.7 + 0.6*rng.Float64())
		case 5: // constant
			v = 1.073741824e11
		case 6: // histogram bucket, bursty
			units += int64(rng.ExpFloat64() * 3)
			v = float64(units)
		}
		ss[k] = actastore.Sample{T: t0 + int64(k)*15000 + rng.Int64N(51) - 25, V: v}
	}
	if i%50 == 0 {
		ss[len(ss)-1].V = math.Float64frombits(0x7ff0000000000002) // stale marker
	}
	return ls, ss
}

// wideStore is one store holding the wide data in a given state.
type wideStore struct {
	dir  string
	st   *actastore.Store
	srv  *httptest.Server
	kept bool // in $ACTA_BENCH_WIDE_DIR
	url  string
	t0   int64
	want map[string][]actastore.Sample
}

var (
	wideMu     sync.Mutex
	wideStores = map[string]*wideStore{}
)

// openWide returns the server of a store holding the wide data: "head"
// (nothing flushed), "sealed" (flushed, then compacted and typed by a
// maintenance pass, as acta-bench reads it after its settle and restart;
// one day file a series), or "sealed-2days": the same with the 6 h
// across a midnight (UTC), two day files a series, as acta-bench's data
// is when it runs within 6 h after midnight, and 5,000 readers for its
// 20,000 files.
func openWide(b *testing.B, state string) *wideStore {
	wideMu.Lock()
	defer wideMu.Unlock()
	if ws := wideStores[state]; ws != nil {
		return ws
	}
	opts := actastore.Options{WALSync: actastore.SyncInterval, FlushZstd: true, FlushZstdMinRows: 128,
		MaxQuerySamples: 0, Compaction: actastore.CompactionOptions{ZstdLevel: 9}, MaintenanceInterval: -1}
	if state == "head" {
		opts.BlockRows, opts.MaxHeadAge = 1<<20, 1000*time.Hour
	}
	if state == "sealed-2days" {
		// A quarter of its files: "sealed", open in the same process,
		// keeps its default (half the descriptor limit, 10,000 here).
		opts.MaxOpenReaders = wideSeries / 2
		opts.Rotation = rotation.Policy{Period: 24 * time.Hour} // the server's default
	}
	// The store outlives the sub-benchmark that opened it (others, and
	// later -count runs, reuse it): TestMain removes it (closeWide). With
	// $ACTA_BENCH_WIDE_DIR it is kept there, and later runs (of another
	// commit, for a before/after) open it instead of writing it again.
	// Not the head: closing the store flushes it.
	keep := os.Getenv("ACTA_BENCH_WIDE_DIR")
	if state == "head" {
		keep = ""
	}
	dir := filepath.Join(keep, state)
	reuse := false
	if keep == "" {
		var err error
		if dir, err = os.MkdirTemp("", "remoteread-wide-"); err != nil {
			b.Fatal(err)
		}
	} else if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		reuse = true
	}
	st, err := actastore.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	ws := &wideStore{dir: dir, st: st, kept: keep != ""}
	wideStores[state] = ws
	ws.t0 = wideStart(state, time.Now())
	if reuse {
		t0, err := os.ReadFile(filepath.Join(dir, "complete"))
		if err != nil {
			b.Fatal(err)
		}
		if ws.t0, err = strconv.ParseInt(string(t0), 10, 64); err != nil {
			b.Fatal(err)
		}
	}
	ws.want = make(map[string][]actastore.Sample, wideSeries)
	const per = 100
	for i := 0; i < wideSeries; i += per {
		batch := make([]actastore.SeriesSamples, 0, per)
		for j := i; j < i+per; j++ {
			ls, ss := wideData(j, ws.t0)
			ws.want[ls.String()] = ss
			batch = append(batch, actastore.SeriesSamples{Labels: ls, Samples: ss})
		}
		if reuse {
			continue
		}
		if _, err := st.Append(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	if state != "head" && !reuse {
		if err := st.FlushAll(); err != nil {
			b.Fatal(err)
		}
		res, err := st.Maintain()
		if err != nil {
			b.Fatal(err)
		}
		if res.Compacted < wideSeries {
			b.Fatalf("compacted %d files, want %d", res.Compacted, wideSeries)
		}
	}
	if keep != "" && !reuse {
		if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(strconv.FormatInt(ws.t0, 10)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	rl := readLimits
	rl.MaxSamplesPerQuery, rl.MaxSeriesPerQuery = 0, 0
	rl.MaxBytesPerFrame = 1 << 20 // Prometheus's default
	mux := http.NewServeMux()
	h := New(st, rl, nil, nil)
	// Labelled, so a CPU profile can leave the setup out
	// (go tool pprof -tagfocus phase=read): the goroutines a read starts
	// inherit the label.
	mux.HandleFunc("/api/v1/read", func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), pprof.Labels("phase", "read"), func(context.Context) { h.ServeHTTP(w, r) })
	})
	ws.srv = httptest.NewServer(mux)
	ws.url = ws.srv.URL + "/api/v1/read"
	return ws
}

// wideStart is the first timestamp (ms) of the wide data of state, read
// at now: the last 6 h ("head"; "sealed" too when they are within a UTC
// day, else 12:00-18:00 the day before), or 21:00 two days before to
// 03:00 the day before ("sealed-2days").
func wideStart(state string, now time.Time) int64 {
	now = now.UTC()
	day := now.Truncate(24 * time.Hour)
	t0 := now.Add(-6 * time.Hour)
	switch {
	case state == "sealed-2days":
		t0 = day.Add(-27 * time.Hour)
	case state == "sealed" && t0.Before(day):
		t0 = day.Add(-12 * time.Hour)
	}
	return t0.UnixMilli() / 1000 * 1000
}

// closeWide closes and removes the wide stores (TestMain).
func closeWide() {
	wideMu.Lock()
	defer wideMu.Unlock()
	for _, ws := range wideStores {
		if ws.srv != nil {
			ws.srv.Close()
		}
		ws.st.Close()
		if !ws.kept {
			os.RemoveAll(ws.dir)
		}
	}
	clear(wideStores)
}

// BenchmarkReadWide reads every series of the wide data at once, as
// acta-bench's "all series × whole span" query does (__name__=~".+"), with
// each response type, from the head and from sealed files; the time is to
// the answer's last byte, as acta-bench times it. Before timing, one
// answer is decoded with Prometheus's remote-read client code and every
// sample compared bit for bit.
func BenchmarkReadWide(b *testing.B) {
	for _, state := range []string{"head", "sealed", "sealed-2days"} {
		for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES} {
			b.Run(state+"/"+typ.String(), func(b *testing.B) {
				ws := openWide(b, state)
				body := testkit.ReadRequest([]prompb.ReadRequest_ResponseType{typ},
					q(ws.t0-60_000, ws.t0+6*3600_000, m(prompb.LabelMatcher_RE, "__name__", ".+")))
				var buf bytes.Buffer
				read := func() {
					resp, err := http.Post(ws.url, "application/x-protobuf", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					buf.Reset()
					_, err = io.Copy(&buf, resp.Body)
					resp.Body.Close()
					if err != nil {
						b.Fatal(err)
					}
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %d: %.200s", resp.StatusCode, buf.Bytes())
					}
				}
				read()
				checkWide(b, ws, typ, buf.Bytes())
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for b.Loop() {
					read()
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/read")
				// The process's CPU (server and client) per read: on a
				// shared machine a steadier figure than the wall time.
				b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/read")
				b.ReportMetric(float64(buf.Len())/(wideSeries*wideSamples), "B/sample")
			})
		}
	}
}

// BenchmarkReadWideNarrow is acta-bench's "1,000 series × 1 h" read on
// the sealed wide data: a regular expression of 1,000 alternatives, the
// last hour, streamed.
func BenchmarkReadWideNarrow(b *testing.B) {
	for _, state := range []string{"sealed", "sealed-2days"} {
		b.Run(state, func(b *testing.B) {
			ws := openWide(b, state)
			alts := make([]string, 1000)
			for i := range alts {
				alts[i] = fmt.Sprint(i * 7 % wideSeries)
			}
			body := testkit.ReadRequest([]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
				q(ws.t0+5*3600_000, ws.t0+6*3600_000, m(prompb.LabelMatcher_EQ, "job", "node"), m(prompb.LabelMatcher_RE, "series", strings.Join(alts, "|"))))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				resp, err := http.Post(ws.url, "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d, %v", resp.StatusCode, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/read")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/read")
		})
	}
}

// checkWide decodes an answer and compares every sample with the data.
func checkWide(b *testing.B, ws *wideStore, typ prompb.ReadRequest_ResponseType, body []byte) {
	b.Helper()
	got := map[string][]actastore.Sample{}
	if typ == prompb.ReadRequest_SAMPLES {
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			b.Fatal(err)
		}
		var rr prompb.ReadResponse
		if err := rr.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		for _, ts := range rr.Results[0].Timeseries {
			key := pbToLabels(ts.Labels).String()
			for _, s := range ts.Samples {
				got[key] = append(got[key], actastore.Sample{T: s.Timestamp, V: s.Value})
			}
		}
	} else {
		cr := remote.NewChunkedReader(bytes.NewReader(body), 64<<20, nil)
		for {
			var res prompb.ChunkedReadResponse
			err := cr.NextProto(&res)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, cs := range res.ChunkedSeries {
				key := pbToLabels(cs.Labels).String()
				for _, c := range cs.Chunks {
					ch, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
					if err != nil {
						b.Fatal(err)
					}
					it := ch.Iterator(nil)
					for it.Next() == chunkenc.ValFloat {
						t, v := it.At()
						got[key] = append(got[key], actastore.Sample{T: t, V: v})
					}
					if it.Err() != nil {
						b.Fatal(it.Err())
					}
				}
			}
		}
	}
	if len(got) != len(ws.want) {
		b.Fatalf("%d series back, want %d", len(got), len(ws.want))
	}
	for key, want := range ws.want {
		g := got[key]
		if len(g) != len(want) {
			b.Fatalf("%s: %d samples back, want %d", key, len(g), len(want))
		}
		for i := range want {
			if g[i].T != want[i].T || math.Float64bits(g[i].V) != math.Float64bits(want[i].V) {
				b.Fatalf("%s sample %d: got %d %x, want %d %x", key, i, g[i].T, math.Float64bits(g[i].V), want[i].T, math.Float64bits(want[i].V))
			}
		}
	}
}

// cpuTime is the user and system CPU the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pbToLabels(ls []prompb.Label) labels.Labels {
	bld := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		bld.Add(l.Name, l.Value)
	}
	bld.Sort()
	return bld.Labels()
}

// BenchmarkReadWideOne is acta-bench's "1 series × 1 h" and "1 series ×
// 6 h" reads on the sealed wide data: the labels of one series (a
// different one each read, as acta-bench picks them), streamed. One
// streamed read of everything first keeps every file's XOR chunks, as the
// server's warm-up does after a start (acta-bench reads after a restart).
func BenchmarkReadWideOne(b *testing.B) {
	for _, state := range []string{"sealed", "sealed-2days"} {
		for _, hours := range []int64{1, 6} {
			for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES} {
				b.Run(fmt.Sprintf("%s/%dh/%s", state, hours, typ), func(b *testing.B) {
					ws := openWide(b, state)
					all := testkit.ReadRequest([]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
						q(ws.t0-60_000, ws.t0+6*3600_000, m(prompb.LabelMatcher_RE, "__name__", ".+")))
					if resp, err := http.Post(ws.url, "application/x-protobuf", bytes.NewReader(all)); err != nil {
						b.Fatal(err)
					} else {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					bodies := make([][]byte, 64)
					for i := range bodies {
						ls, _ := wideData(i*151%wideSeries, ws.t0)
						var ms []*prompb.LabelMatcher
						ls.Range(func(l labels.Label) { ms = append(ms, m(prompb.LabelMatcher_EQ, l.Name, l.Value)) })
						bodies[i] = testkit.ReadRequest([]prompb.ReadRequest_ResponseType{typ},
							q(ws.t0+(6-hours)*3600_000, ws.t0+6*3600_000, ms...))
					}
					b.ReportAllocs()
					cpu0 := cpuTime()
					i := 0
					for b.Loop() {
						resp, err := http.Post(ws.url, "application/x-protobuf", bytes.NewReader(bodies[i%len(bodies)]))
						if err != nil {
							b.Fatal(err)
						}
						n, err := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != http.StatusOK || n < 100 {
							b.Fatalf("status %d, %d bytes, %v", resp.StatusCode, n, err)
						}
						i++
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/read")
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/read")
				})
			}
		}
	}
}
