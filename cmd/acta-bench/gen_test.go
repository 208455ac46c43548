package main

import (
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func testConfig(series int) GenConfig {
	return GenConfig{Seed: 42, Series: series, Start: 1_750_000_000_000, Duration: 2 * time.Hour,
		Interval: 15 * time.Second, JitterMs: 25, RestartEvery: 24 * time.Hour}
}

func mustDataset(t *testing.T, cfg GenConfig) *Dataset {
	t.Helper()
	d, err := NewDataset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fingerprint hashes every label set, timestamp and value bit of a walk.
func fingerprint(d *Dataset) uint64 {
	h := fnv.New64a()
	for i := range d.NumSeries() {
		h.Write([]byte(d.Labels(i).String()))
	}
	var buf [8]byte
	put := func(u uint64) {
		for j := range buf {
			buf[j] = byte(u >> (8 * j))
		}
		h.Write(buf[:])
	}
	d.Walk(func(k, tgt int, ts int64, first int, vals []float64) {
		put(uint64(ts))
		for _, v := range vals {
			put(math.Float64bits(v))
		}
	})
	return h.Sum64()
}

func TestDatasetDeterministicFromSeed(t *testing.T) {
	cfg := testConfig(1000)
	a, b := fingerprint(mustDataset(t, cfg)), fingerprint(mustDataset(t, cfg))
	if a != b {
		t.Fatalf("same config, different data: %x vs %x", a, b)
	}
	cfg.Seed++
	if c := fingerprint(mustDataset(t, cfg)); c == a {
		t.Fatalf("seeds 42 and 43 gave the same data (%x)", a)
	}
}

func TestDatasetExactSeriesCountAndUniqueLabels(t *testing.T) {
	for _, n := range []int{1, 67, 500, 3001} {
		d := mustDataset(t, testConfig(n))
		if d.NumSeries() != n {
			t.Fatalf("asked %d series, got %d", n, d.NumSeries())
		}
		if got, want := d.Samples(), int64(n)*480; got != want {
			t.Fatalf("%d series × 2 h: %d samples, want %d", n, got, want)
		}
		seen := map[string]bool{}
		for i := range n {
			ls := d.Labels(i)
			if seen[ls.String()] {
				t.Fatalf("duplicate series %s", ls)
			}
			seen[ls.String()] = true
			for _, name := range []string{"__name__", "job", "instance"} {
				if ls.Get(name) == "" {
					t.Fatalf("series %s has no %s", ls, name)
				}
			}
			if ls.Get("job") == "kubernetes-pods" && (ls.Get("namespace") == "" || ls.Get("pod") == "") {
				t.Fatalf("pod series %s lacks namespace or pod", ls)
			}
			if strings.HasSuffix(ls.Get("__name__"), "_bucket") && ls.Get("le") == "" {
				t.Fatalf("bucket series %s has no le", ls)
			}
		}
	}
}

// series collects every series' samples from a full walk.
func series(d *Dataset) [][]Sample {
	out := make([][]Sample, d.NumSeries())
	d.Walk(func(k, tgt int, ts int64, first int, vals []float64) {
		for i, v := range vals {
			out[first+i] = append(out[first+i], Sample{T: ts, V: v})
		}
	})
	return out
}

func TestSeriesSamplesRegeneratesTheWalk(t *testing.T) {
	d := mustDataset(t, testConfig(800))
	all := series(d)
	for _, i := range []int{0, 1, 63, 64, 399, 799} {
		got := d.SeriesSamples(i)
		if len(got) != len(all[i]) {
			t.Fatalf("series %d: %d samples regenerated, %d walked", i, len(got), len(all[i]))
		}
		for j := range got {
			if got[j].T != all[i][j].T || math.Float64bits(got[j].V) != math.Float64bits(all[i][j].V) {
				t.Fatalf("series %d sample %d: regenerated %v, walked %v", i, j, got[j], all[i][j])
			}
		}
	}
}

func TestTimestampsFifteenSecondsApartWithinJitter(t *testing.T) {
	cfg := testConfig(500)
	d := mustDataset(t, cfg)
	iv, j := cfg.Interval.Milliseconds(), cfg.JitterMs
	jittered := false
	for i, ss := range series(d) {
		for k, s := range ss {
			if s.T < cfg.Start || s.T >= d.End() {
				t.Fatalf("series %d sample %d at %d, outside [%d, %d)", i, k, s.T, cfg.Start, d.End())
			}
			if k == 0 {
				continue
			}
			gap := s.T - ss[k-1].T
			if gap < iv-2*j || gap > iv+2*j {
				t.Fatalf("series %d: %d ms between samples %d and %d, want %d ± %d", i, gap, k-1, k, iv, 2*j)
			}
			jittered = jittered || gap != iv
		}
	}
	if !jittered {
		t.Fatal("no jitter at all: every gap is exactly 15 s")
	}
}

func isCounter(ls labels.Labels) bool {
	n := ls.Get("__name__")
	return strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_bucket") || strings.HasSuffix(n, "_count")
}

// Counters only go down when their target restarts, and a pod's restart
// shows in its process_start_time_seconds at the same scrape.
func TestCountersMonotonicExceptResets(t *testing.T) {
	cfg := testConfig(3000)
	cfg.RestartEvery = time.Hour // many restarts in 2 h
	d := mustDataset(t, cfg)
	all := series(d)
	startTime := map[string]int{} // instance -> series index of process_start_time_seconds
	for i := range d.NumSeries() {
		if d.Labels(i).Get("__name__") == "process_start_time_seconds" {
			startTime[d.Labels(i).Get("instance")] = i
		}
	}
	resets, counters := 0, 0
	for i, ss := range all {
		ls := d.Labels(i)
		if !isCounter(ls) {
			continue
		}
		counters++
		st, isPod := startTime[ls.Get("instance")]
		for k := 1; k < len(ss); k++ {
			if ss[k].V >= ss[k-1].V {
				continue
			}
			resets++
			if !isPod {
				continue // nodes have no start-time series to check against
			}
			if all[st][k].V == all[st][k-1].V {
				t.Fatalf("%s dropped %v → %v at scrape %d without a restart", ls, ss[k-1].V, ss[k].V, k)
			}
		}
	}
	if counters == 0 || resets == 0 {
		t.Fatalf("%d counters, %d resets: the test checks nothing", counters, resets)
	}

	cfg.RestartEvery = 0
	d = mustDataset(t, cfg)
	for i, ss := range series(d) {
		if !isCounter(d.Labels(i)) {
			continue
		}
		for k := 1; k < len(ss); k++ {
			if ss[k].V < ss[k-1].V {
				t.Fatalf("without restarts %s went down at scrape %d: %v → %v", d.Labels(i), k, ss[k-1].V, ss[k].V)
			}
		}
	}
}

func TestValueShapes(t *testing.T) {
	d := mustDataset(t, testConfig(3000))
	all := series(d)
	byKey := map[string][]Sample{}
	for i, ss := range all {
		byKey[d.Labels(i).String()] = ss
	}
	checked := map[string]int{}
	for i, ss := range all {
		ls := d.Labels(i)
		name := ls.Get("__name__")
		for _, s := range ss {
			switch name {
			case "node_cpu_seconds_total", "process_cpu_seconds_total":
				if math.Round(s.V*100)/100 != s.V {
					t.Fatalf("%s = %v: not two decimals", ls, s.V)
				}
			case "node_memory_MemFree_bytes", "process_resident_memory_bytes":
				if math.Mod(s.V, 4096) != 0 {
					t.Fatalf("%s = %v: not whole pages", ls, s.V)
				}
			case "http_requests_total":
				if s.V != math.Trunc(s.V) {
					t.Fatalf("%s = %v: not an integer", ls, s.V)
				}
			case "up", "node_memory_MemTotal_bytes":
				if s.V != ss[0].V {
					t.Fatalf("%s changed: %v then %v", ls, ss[0].V, s.V)
				}
			case "node_load1":
				if math.Round(s.V*100)/100 != s.V || s.V < 0 {
					t.Fatalf("%s = %v", ls, s.V)
				}
			}
		}
		checked[name]++
		// Classic histograms: buckets cumulative in le, +Inf equal to _count.
		if name == "http_request_duration_seconds_bucket" && ls.Get("le") == "+Inf" {
			b := labels.NewBuilder(ls)
			b.Set("__name__", "http_request_duration_seconds_count")
			b.Del("le")
			count := byKey[b.Labels().String()]
			b.Set("le", "0.5")
			b.Set("__name__", "http_request_duration_seconds_bucket")
			half := byKey[b.Labels().String()]
			for k := range ss {
				if ss[k].V != count[k].V || half[k].V > ss[k].V {
					t.Fatalf("%s at scrape %d: +Inf %v, count %v, le=0.5 %v", ls, k, ss[k].V, count[k].V, half[k].V)
				}
			}
			checked["histogram"]++
		}
	}
	for _, n := range []string{"node_cpu_seconds_total", "process_cpu_seconds_total", "node_memory_MemFree_bytes", "http_requests_total", "up", "node_load1", "histogram"} {
		if checked[n] == 0 {
			t.Fatalf("no %s series in 3000: the shapes changed", n)
		}
	}
}

func TestNewDatasetRejectsBadConfig(t *testing.T) {
	f := func(cfg GenConfig) {
		t.Helper()
		if _, err := NewDataset(cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
	cfg := testConfig(10)
	cfg.Series = 0
	f(cfg)
	cfg = testConfig(10)
	cfg.JitterMs = 7500
	f(cfg)
	cfg = testConfig(10)
	cfg.Duration = time.Second
	f(cfg)
}
