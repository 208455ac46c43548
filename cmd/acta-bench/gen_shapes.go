package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
)

// metricType is the Prometheus metric type of a series, sent as RW 2.0
// metadata.
type metricType uint8

const (
	typeGauge metricType = iota
	typeCounter
	typeHistogram
)

// target is one scraped endpoint: its series are the groups' series in order.
type target struct {
	groups        []group
	seed          uint64
	phase         int64   // ms after the slot start at which it is scraped
	restartWeight float64 // relative restart rate (pods restart more than nodes)
	first, count  int     // its series indices: [first, first+count)
}

// group is a set of series whose values are generated together: one metric
// family of one target (all CPU modes, all buckets of one histogram).
type group struct {
	series []labels.Labels
	typ    metricType
	kind   valueKind
	base   []float64 // per series: level of gauges, value of constants
	rate   []float64 // per series: mean counter increment or gauge walk per scrape
	dec    int       // decimal places of decimal kinds
	quant  float64   // quantum of integer gauges (4096 for page-sized memory)
	bounds []float64 // histogram upper bounds, without +Inf
	seed   uint64
}

// family adds one group to t: the series are name × the target's labels ×
// each of the extra label sets (nil: one series).
func (t *target) family(base labels.Labels, name string, typ metricType, kind valueKind, extra []map[string]string, fill func(i int, g *group)) {
	if extra == nil {
		extra = []map[string]string{nil}
	}
	g := group{typ: typ, kind: kind}
	for i, ex := range extra {
		b := labels.NewBuilder(base)
		b.Set(labels.MetricName, name)
		for k, v := range ex {
			b.Set(k, v)
		}
		g.series = append(g.series, b.Labels())
		g.base = append(g.base, 0)
		g.rate = append(g.rate, 0)
		fill(i, &g)
	}
	t.groups = append(t.groups, g)
}

// histogram adds a classic histogram: _bucket per bound and +Inf, _sum, _count.
func (t *target) histogram(base labels.Labels, name string, ex map[string]string, bounds []float64, perScrape float64) {
	g := group{typ: typeHistogram, kind: kindHistogram, bounds: bounds}
	add := func(n string, le string) {
		b := labels.NewBuilder(base)
		b.Set(labels.MetricName, n)
		for k, v := range ex {
			b.Set(k, v)
		}
		if le != "" {
			b.Set("le", le)
		}
		g.series = append(g.series, b.Labels())
		g.base = append(g.base, 0)
		g.rate = append(g.rate, perScrape)
	}
	for _, ub := range bounds {
		add(name+"_bucket", strconv.FormatFloat(ub, 'g', -1, 64))
	}
	add(name+"_bucket", "+Inf")
	add(name+"_sum", "")
	add(name+"_count", "")
	t.groups = append(t.groups, g)
}

func set(v float64) func(int, *group) { return func(i int, g *group) { g.base[i] = v } }

// newNodeTarget is shaped like a node_exporter scrape: per-CPU mode
// counters in centiseconds, page-sized memory gauges, filesystem and network
// devices, load averages, and the clock itself (node_time_seconds).
func newNodeTarget(rng *rand.Rand, idx int) *target {
	ip := fmt.Sprintf("10.%d.%d.%d", 16+idx/65536%16, idx/256%256, idx%256)
	base := labels.FromStrings("job", "node", "instance", ip+":9100")
	t := &target{restartWeight: 0.1}
	cpus := []int{2, 4, 8}[rng.IntN(3)]
	modes := map[string]float64{"idle": 11, "iowait": 0.1, "irq": 0, "nice": 0, "softirq": 0.05, "steal": 0, "system": 0.6, "user": 2.2}
	var cpuEx []map[string]string
	var cpuRate []float64
	for c := range cpus {
		for _, m := range []string{"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"} {
			cpuEx = append(cpuEx, map[string]string{"cpu": strconv.Itoa(c), "mode": m})
			cpuRate = append(cpuRate, modes[m])
		}
	}
	t.family(base, "node_cpu_seconds_total", typeCounter, kindCounterDec, cpuEx, func(i int, g *group) {
		g.dec, g.base[i], g.rate[i] = 2, float64(rng.IntN(1e6)), cpuRate[i]
	})
	memTotal := float64(int64(4096) << (20 + rng.IntN(3))) // 4, 8 or 16 GiB
	t.family(base, "node_memory_MemTotal_bytes", typeGauge, kindConst, nil, set(memTotal))
	for _, m := range []string{"MemAvailable", "MemFree", "Cached", "Buffers"} {
		t.family(base, "node_memory_"+m+"_bytes", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
			g.quant, g.base[i], g.rate[i] = 4096, memTotal*(0.1+0.4*rng.Float64()), 40
		})
	}
	fs := []map[string]string{
		{"device": "/dev/nvme0n1p1", "fstype": "ext4", "mountpoint": "/"},
		{"device": "/dev/nvme0n1p2", "fstype": "ext4", "mountpoint": "/var/lib/kubelet"},
		{"device": "tmpfs", "fstype": "tmpfs", "mountpoint": "/run"},
	}
	sizes := []float64{1 << 36, 1 << 37, 1 << 31}
	t.family(base, "node_filesystem_size_bytes", typeGauge, kindConst, fs, func(i int, g *group) { g.base[i] = sizes[i] })
	t.family(base, "node_filesystem_avail_bytes", typeGauge, kindGaugeInt, fs, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 4096, sizes[i]*(0.2+0.6*rng.Float64()), 3
	})
	t.family(base, "node_filesystem_files_free", typeGauge, kindGaugeInt, fs, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 1, float64(1e6+rng.IntN(3e6)), 5
	})
	nics := []map[string]string{{"device": "eth0"}, {"device": "lo"}}
	for _, f := range []struct {
		name string
		rate float64
	}{{"node_network_receive_bytes_total", 4e6}, {"node_network_transmit_bytes_total", 3e6}, {"node_network_receive_packets_total", 4e3}, {"node_network_transmit_packets_total", 3e3}} {
		t.family(base, f.name, typeCounter, kindCounterInt, nics, func(i int, g *group) {
			g.base[i], g.rate[i] = float64(rng.Int64N(1e12)), f.rate/float64(1+9*i)
		})
	}
	for _, n := range []string{"node_load1", "node_load5", "node_load15"} {
		t.family(base, n, typeGauge, kindGaugeDec, nil, func(i int, g *group) {
			g.dec, g.base[i], g.rate[i] = 2, float64(cpus)*0.4, 0.05
		})
	}
	disks := []map[string]string{{"device": "nvme0n1"}, {"device": "nvme1n1"}}
	t.family(base, "node_disk_read_bytes_total", typeCounter, kindCounterInt, disks, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 512, float64(rng.Int64N(1e12)), 2e5
	})
	t.family(base, "node_disk_written_bytes_total", typeCounter, kindCounterInt, disks, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 512, float64(rng.Int64N(1e12)), 8e5
	})
	t.family(base, "node_disk_io_time_seconds_total", typeCounter, kindCounterDec, disks, func(i int, g *group) {
		g.dec, g.base[i], g.rate[i] = 3, float64(rng.IntN(1e5)), 0.4
	})
	t.family(base, "node_context_switches_total", typeCounter, kindCounterInt, nil, func(i int, g *group) {
		g.base[i], g.rate[i] = float64(rng.Int64N(1e10)), 6e4
	})
	t.family(base, "node_procs_running", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 1, 3, 1
	})
	t.family(base, "node_boot_time_seconds", typeGauge, kindConst, nil, set(1.7e9+float64(rng.IntN(1e7))))
	t.family(base, "node_time_seconds", typeGauge, kindClock, nil, set(0))
	t.family(base, "node_uname_info", typeGauge, kindConst, []map[string]string{{"machine": "x86_64", "nodename": "node-" + strconv.Itoa(idx), "release": "6.8.0-45-generic", "sysname": "Linux"}}, set(1))
	scrapeSeries(t, base, rng)
	return t
}

var apps = []struct{ app, namespace string }{
	{"checkout", "shop"}, {"cart", "shop"}, {"catalog", "shop"}, {"frontend", "shop"},
	{"search", "search"}, {"indexer", "search"}, {"payments", "payments"}, {"ledger", "payments"},
	{"auth", "platform"}, {"gateway", "platform"}, {"coredns", "kube-system"}, {"metrics-server", "kube-system"},
}

var latencyBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newPodTarget is shaped like an application pod scraped through Kubernetes
// service discovery: namespace/pod/container labels, request counters by
// handler, method and code, latency histograms, and client_golang's
// process_* and go_* families.
func newPodTarget(rng *rand.Rand, idx int) *target {
	a := apps[rng.IntN(len(apps))]
	const alnum = "bcdfghjklmnpqrstvwxz2456789"
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = alnum[rng.IntN(len(alnum))]
	}
	pod := fmt.Sprintf("%s-%08x-%s", a.app, rng.Uint32(), suffix)
	ip := fmt.Sprintf("10.%d.%d.%d", 64+idx/65536%64, idx/256%256, idx%256)
	base := labels.FromStrings("job", "kubernetes-pods", "instance", ip+":8080", "namespace", a.namespace,
		"pod", pod, "container", a.app, "app", a.app)
	t := &target{restartWeight: 1}
	load := 1 + 20*rng.Float64() // requests per second
	var reqEx []map[string]string
	var reqRate []float64
	for _, h := range []string{"/api/v1/items", "/api/v1/orders"} {
		for _, m := range []string{"GET", "POST"} {
			for _, c := range []struct {
				code  string
				share float64
			}{{"200", 0.97}, {"404", 0.025}, {"500", 0.005}} {
				reqEx = append(reqEx, map[string]string{"handler": h, "method": m, "code": c.code})
				reqRate = append(reqRate, load*15*c.share/4)
			}
		}
	}
	reqEx = append(reqEx, map[string]string{"handler": "/healthz", "method": "GET", "code": "200"})
	reqRate = append(reqRate, 1.5) // kubelet probes every 10 s
	t.family(base, "http_requests_total", typeCounter, kindCounterInt, reqEx, func(i int, g *group) { g.rate[i] = reqRate[i] })
	for _, h := range []string{"/api/v1/items", "/api/v1/orders", "/healthz"} {
		per := load * 15 / 2
		if h == "/healthz" {
			per = 1.5
		}
		t.histogram(base, "http_request_duration_seconds", map[string]string{"handler": h}, latencyBounds, per)
	}
	t.family(base, "process_cpu_seconds_total", typeCounter, kindCounterDec, nil, func(i int, g *group) {
		g.dec, g.rate[i] = 2, 0.3*load
	})
	t.family(base, "process_resident_memory_bytes", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 4096, float64(5e7+rng.IntN(4e8)), 30
	})
	t.family(base, "process_virtual_memory_bytes", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 4096, float64(1e9+rng.IntN(2e9)), 2
	})
	t.family(base, "process_open_fds", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 1, float64(20+rng.IntN(200)), 1
	})
	t.family(base, "process_start_time_seconds", typeGauge, kindStartTime, nil, set(0))
	t.family(base, "go_goroutines", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 1, float64(30+rng.IntN(300)), 2
	})
	t.family(base, "go_memstats_alloc_bytes", typeGauge, kindGaugeInt, nil, func(i int, g *group) {
		g.quant, g.base[i], g.rate[i] = 8, float64(1e7+rng.IntN(1e8)), 2e4
	})
	t.family(base, "go_gc_duration_seconds_count", typeCounter, kindCounterInt, nil, func(i int, g *group) { g.rate[i] = 0.5 })
	t.family(base, "go_threads", typeGauge, kindConst, nil, set(float64(8+rng.IntN(12))))
	scrapeSeries(t, base, rng)
	return t
}

// scrapeSeries adds what Prometheus itself records for every target.
func scrapeSeries(t *target, base labels.Labels, rng *rand.Rand) {
	n := 0
	for _, g := range t.groups {
		n += len(g.series)
	}
	t.family(base, "up", typeGauge, kindConst, nil, set(1))
	t.family(base, "scrape_duration_seconds", typeGauge, kindGaugeFloat, nil, func(i int, g *group) {
		g.base[i] = 0.002 + 0.05*rng.Float64()
	})
	t.family(base, "scrape_samples_scraped", typeGauge, kindConst, nil, set(float64(n)))
}
