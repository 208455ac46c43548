package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// qaTarget is the scrape target of the query API test: the metrics of
// queryapi/testdata/corpus.promql, under the same names and labels as the
// data its unit test generates (Prometheus scrapes it with honor_labels, so
// the job and instance labels are the target's own). Every scrape moves it
// on: counters grow (one instance resets half-way), gauges move (with a
// NaN and an infinity), a classic and a native histogram take
// observations, pods come and go (Prometheus writes stale markers when a
// series leaves a successful scrape), one native histogram series goes
// away, and the counters carry exemplars. /slow serves qa_slow_gauge, which
// the config scrapes 4x less often. The exposition is Prometheus's protobuf
// format (expfmt), the one that carries native histograms.
type qaTarget struct {
	mu      sync.Mutex
	rng     *rand.Rand
	scrapes int
	start   time.Time

	requests map[string]float64 // instance/code → value
	latency  map[string]*classicHist
	native   map[string]*nativeHist
	slow     int
}

type classicHist struct {
	buckets    [3]uint64 // le 0.1, 0.5, 1 (cumulative)
	count      uint64
	sum        float64
	lastBucket int
}

// nativeHist is an integer native histogram of schema 1 with a fixed
// bucket layout (two spans), counts growing.
type nativeHist struct {
	pos   [4]int64 // absolute counts
	zero  uint64
	sum   float64
	count uint64
}

const qaRunLength = 75 * time.Second // how long the test lets Prometheus scrape

func startQATarget(t *testing.T) (addr string) {
	t.Helper()
	q := &qaTarget{rng: rand.New(rand.NewPCG(7, 11)), requests: map[string]float64{},
		latency: map[string]*classicHist{}, native: map[string]*nativeHist{}, start: time.Now()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { q.serve(w, q.families()) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { q.serve(w, q.slowFamilies()) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func (q *qaTarget) serve(w http.ResponseWriter, fams []*dto.MetricFamily) {
	format := expfmt.NewFormat(expfmt.TypeProtoDelim)
	w.Header().Set("Content-Type", string(format))
	enc := expfmt.NewEncoder(w, format)
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return
		}
	}
}

func lp(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return out
}

func family(name, help string, typ dto.MetricType, unit string, ms ...*dto.Metric) *dto.MetricFamily {
	f := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum(), Metric: ms}
	if unit != "" {
		f.Unit = proto.String(unit)
	}
	return f
}

func (q *qaTarget) families() []*dto.MetricFamily {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.scrapes++
	elapsed := time.Since(q.start)
	var reqs, temps, lat, native, pods []*dto.Metric
	for _, inst := range []string{"a:9100", "b:9100", "c:9100"} {
		for _, code := range []string{"200", "404", "500"} {
			k := inst + "/" + code
			if inst == "b:9100" && elapsed > qaRunLength/2 && q.requests["reset"+k] == 0 {
				q.requests[k], q.requests["reset"+k] = 0, 1 // a restart: counter reset
			}
			q.requests[k] += float64(q.rng.IntN(50)) + q.rng.Float64()
			m := &dto.Metric{Label: lp("job", "api", "instance", inst, "code", code), Counter: &dto.Counter{Value: proto.Float64(q.requests[k])}}
			if inst == "a:9100" && code != "404" {
				m.Counter.Exemplar = &dto.Exemplar{Label: lp("trace_id", fmt.Sprintf("%s-%05d", code, q.scrapes)),
					Value: proto.Float64(float64(q.scrapes) / 8), Timestamp: timestamppb.Now()}
			}
			reqs = append(reqs, m)
		}
		v := 20 + 5*math.Sin(float64(q.scrapes)/10) + math.Round(q.rng.Float64()*100)/100
		switch q.scrapes % 37 {
		case 11:
			v = math.NaN()
		case 23:
			v = math.Inf(1)
		}
		temps = append(temps, &dto.Metric{Label: lp("job", "api", "instance", inst), Gauge: &dto.Gauge{Value: proto.Float64(v)}})

		h := q.latency[inst]
		if h == nil {
			h = &classicHist{}
			q.latency[inst] = h
		}
		for range 5 {
			x := q.rng.ExpFloat64() / 3
			h.sum += x
			h.count++
			for j, le := range []float64{0.1, 0.5, 1} {
				if x <= le {
					h.buckets[j]++
				}
			}
		}
		ch := &dto.Histogram{SampleCount: proto.Uint64(h.count), SampleSum: proto.Float64(h.sum)}
		for j, le := range []float64{0.1, 0.5, 1} {
			ch.Bucket = append(ch.Bucket, &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(h.buckets[j])})
		}
		lat = append(lat, &dto.Metric{Label: lp("job", "api", "instance", inst), Histogram: ch})
	}
	// Native histograms: instances a and b (b restarts half-way), and one
	// series that goes away after 60% of the run.
	for _, key := range []string{"api/a:9100", "api/b:9100", "batch/gone"} {
		job, inst, _ := strings.Cut(key, "/")
		if key == "batch/gone" && elapsed > qaRunLength*6/10 {
			continue
		}
		n := q.native[key]
		if n == nil || key == "api/b:9100" && elapsed > qaRunLength/2 && q.native["reset"] == nil {
			if n != nil {
				q.native["reset"] = &nativeHist{}
			}
			n = &nativeHist{}
			q.native[key] = n
		}
		for j := range n.pos {
			d := int64(q.rng.IntN(4))
			n.pos[j] += d
			n.count += uint64(d)
		}
		z := uint64(q.rng.IntN(2))
		n.zero += z
		n.count += z
		n.sum += q.rng.Float64() * 3
		nh := &dto.Histogram{SampleCount: proto.Uint64(n.count), SampleSum: proto.Float64(n.sum), Schema: proto.Int32(1),
			ZeroThreshold: proto.Float64(1e-128), ZeroCount: proto.Uint64(n.zero),
			PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(-1), Length: proto.Uint32(2)}, {Offset: proto.Int32(1), Length: proto.Uint32(2)}}}
		prev := int64(0)
		for _, c := range n.pos {
			nh.PositiveDelta = append(nh.PositiveDelta, c-prev)
			prev = c
		}
		native = append(native, &dto.Metric{Label: lp("job", job, "instance", inst), Histogram: nh})
	}
	// A float gauge histogram.
	g := 2 + math.Sin(float64(q.scrapes)/7)
	queue := &dto.Metric{Label: lp("job", "api"), Histogram: &dto.Histogram{
		SampleCountFloat: proto.Float64(g/4 + 3*g), SampleSum: proto.Float64(7.5 * g), Schema: proto.Int32(0),
		ZeroThreshold: proto.Float64(0.001), ZeroCountFloat: proto.Float64(g / 4),
		PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(3)}},
		PositiveCount: []float64{g, g, g},
	}}
	// Pods: pod-p lives from p/8 to p/8+3/8 of the run.
	for p := range 6 {
		from := qaRunLength * time.Duration(p) / 8
		if elapsed >= from && elapsed < from+qaRunLength*3/8 {
			pods = append(pods, &dto.Metric{Label: lp("job", "kube", "pod", fmt.Sprintf("pod-%d", p)),
				Gauge: &dto.Gauge{Value: proto.Float64(float64(1<<20*(p+1)) + float64(q.rng.IntN(4096)))}})
		}
	}
	fams := []*dto.MetricFamily{
		family("qa_requests_total", "Requests served.", dto.MetricType_COUNTER, "", reqs...),
		family("qa_temperature_celsius", "Room temperature.", dto.MetricType_GAUGE, "celsius", temps...),
		family("qa_latency_seconds", "Request latency.", dto.MetricType_HISTOGRAM, "seconds", lat...),
		family("qa_native_seconds", "Native latency.", dto.MetricType_HISTOGRAM, "seconds", native...),
		family("qa_native_queue", "Queue length distribution.", dto.MetricType_GAUGE_HISTOGRAM, "", queue),
	}
	if len(pods) > 0 {
		fams = append(fams, family("qa_pod_memory_bytes", "Pod memory.", dto.MetricType_GAUGE, "bytes", pods...))
	}
	return fams
}

func (q *qaTarget) slowFamilies() []*dto.MetricFamily {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.slow++
	return []*dto.MetricFamily{family("qa_slow_gauge", "A gauge scraped every 4 s.", dto.MetricType_GAUGE, "",
		&dto.Metric{Label: lp("job", "batch"), Gauge: &dto.Gauge{Value: proto.Float64(float64(q.slow) * 1.5)}})}
}
