package remoteread

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

var (
	bothTypes    = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}
	samplesFirst = []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
)

// -0 comes back -0 in both answers, next to NaN payloads, the stale marker
// and infinities (issue 23). The samples go into the store directly: a
// remote-write sender built on gogo's marshaller cannot send -0.
func TestNegativeZeroSurvivesBothAnswers(t *testing.T) {
	st := openStore(t)
	_, rurl := server(t, st, readLimits)
	bits := []uint64{1 << 63, 0, 0x7ff0000000000002, 0x7ff8000000000001, 0xfff8000000000abc,
		0x7ff0000000000000, 0xfff0000000000000, 1 << 63, 1}
	data := want{}
	var batch []actastore.SeriesSamples
	for i, name := range []string{"with_neg_zero", "neg_zero_only"} {
		ls := labels.FromStrings("__name__", name)
		var ss []actastore.Sample
		for j, b := range bits {
			if i == 1 && b != 1<<63 {
				continue
			}
			ss = append(ss, actastore.Sample{T: int64(1000 * (j + 1)), V: math.Float64frombits(b)})
		}
		data[ls.String()] = ss
		batch = append(batch, actastore.SeriesSamples{Labels: ls, Samples: ss})
	}
	if _, err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	query := q(0, math.MaxInt64, m(prompb.LabelMatcher_RE, "__name__", ".+"))
	sameBits(t, "SAMPLES", readAll(t, rurl, testkit.ReadRequest(samplesFirst, query), false)[0], data)
	sameBits(t, "STREAMED_XOR_CHUNKS", readAll(t, rurl, testkit.ReadRequest(bothTypes, query), true)[0], data)
}

// manySeries stores n series of k samples (noise, so chunks are of real
// size; every 50th value a special bit pattern) with names sorting in
// index order, and returns what it stored.
func manySeries(t testing.TB, st store, n, k int) want {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	data := want{}
	var batch []actastore.SeriesSamples
	for i := range n {
		ls := labels.FromStrings("__name__", "many", "i", fmt.Sprintf("%04d", i))
		ss := make([]actastore.Sample, k)
		for j := range ss {
			ss[j] = actastore.Sample{T: int64(j)*15000 + rng.Int63n(20), V: math.Round(rng.NormFloat64()*1e4) / 100}
			if j%50 == 49 {
				ss[j].V = math.Float64frombits(specials[(i+j)%len(specials)])
			}
		}
		data[ls.String()] = ss
		batch = append(batch, actastore.SeriesSamples{Labels: ls, Samples: ss})
	}
	if _, err := st.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return data
}

// post sends a read request as Prometheus does (Content-Type only) and
// requires a 200.
func post(t testing.TB, url string, body []byte) testkit.Answer {
	t.Helper()
	a := testkit.Post(t, url, map[string]string{"Content-Type": "application/x-protobuf"}, body)
	if a.Code != http.StatusOK {
		t.Fatalf("read: %d %s", a.Code, a.Body)
	}
	return a
}

// The pipelined SAMPLES answer, series compressed one by one, decodes to
// exactly the bytes gogo's ReadResponse.Marshal gives for the same series
// (what the handler sent before it was parallel), for several queries.
func TestSamplesAnswerIsPrometheusEncoding(t *testing.T) {
	st := openStore(t)
	_, rurl := server(t, st, readLimits)
	manySeries(t, st, 60, 300)
	queries := []*prompb.Query{
		q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "many")),
		q(1_000_000, 2_000_000, m(prompb.LabelMatcher_RE, "i", "00[0-3].")),
		q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "none")),
		q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "i", "0007")),
	}
	var exp prompb.ReadResponse
	for _, pq := range queries {
		ms, err := toMatchers(pq.Matchers)
		if err != nil {
			t.Fatal(err)
		}
		res := &prompb.QueryResult{}
		ss := st.Select(context.Background(), pq.StartTimestampMs, pq.EndTimestampMs, ms...)
		for ss.Next() {
			s := ss.At()
			ts := &prompb.TimeSeries{Labels: prompb.FromLabels(s.Labels(), nil)}
			for it := s.Iterator(); it.Next(); {
				tt, v := it.At()
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: tt, Value: v})
			}
			res.Timeseries = append(res.Timeseries, ts)
		}
		if ss.Err() != nil {
			t.Fatal(ss.Err())
		}
		exp.Results = append(exp.Results, res)
	}
	want, err := exp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := snappy.Decode(nil, post(t, rurl, testkit.ReadRequest(samplesFirst, queries...)).Body)
	if err != nil {
		t.Fatalf("answer is not one snappy block: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("decoded answer (%d bytes) differs from prompb's encoding (%d bytes)", len(got), len(want))
	}
}

// The pipelined streamed answer: series in label order, every chunk
// exactly the bytes chunkenc writes for its samples, 120 samples a chunk
// but the last, frames cut at max_bytes_per_frame (give or take a chunk),
// and all samples bit for bit.
func TestStreamedAnswerShape(t *testing.T) {
	st := openStore(t)
	rl := readLimits
	rl.MaxBytesPerFrame = 2000
	_, rurl := server(t, st, rl)
	data := manySeries(t, st, 80, 1000)
	a := post(t, rurl, testkit.ReadRequest(bothTypes, q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "many"))))
	got := want{}
	var order []string
	err := testkit.Frames(bytes.NewReader(a.Body), 1<<24, func(cresp *prompb.ChunkedReadResponse) error {
		if len(cresp.ChunkedSeries) != 1 {
			t.Fatalf("frame holds %d series, want 1", len(cresp.ChunkedSeries))
		}
		cs := cresp.ChunkedSeries[0]
		k := cs.ToLabels(&labels.ScratchBuilder{}, nil).String()
		if len(order) == 0 || order[len(order)-1] != k {
			order = append(order, k)
		}
		size := 0
		for _, l := range cs.Labels {
			size += l.Size()
		}
		for i, c := range cs.Chunks {
			if i < len(cs.Chunks)-1 && size+c.Size() >= rl.MaxBytesPerFrame {
				t.Fatalf("%s: frame goes on after %d bytes, limit %d", k, size, rl.MaxBytesPerFrame)
			}
			size += c.Size()
			chk, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
			if err != nil {
				t.Fatal(err)
			}
			ref := chunkenc.NewXORChunk()
			app, _ := ref.Appender()
			for it := chk.Iterator(nil); it.Next() == chunkenc.ValFloat; {
				tt, v := it.At()
				app.Append(0, tt, v)
				got[k] = append(got[k], actastore.Sample{T: tt, V: v})
			}
			if !bytes.Equal(ref.Bytes(), c.Data) {
				t.Fatalf("%s: chunk differs from chunkenc's encoding of its samples", k)
			}
			if n := chk.NumSamples(); n != samplesPerChunk && len(got[k]) != len(data[k]) {
				t.Fatalf("%s: a chunk of %d samples before the last", k, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(order) || len(order) != len(data) {
		t.Fatalf("series came in this order (each once, sorted, wanted): %v", order)
	}
	sameBits(t, "streamed", got, data)
}

// A client that goes away in the middle of a long streamed answer stops
// the pipeline: no goroutine of the handler outlives the request, and its
// slot is given back. With two slots, the third read needs the first's
// slot; a cancelled handler may still be unwinding when it arrives, so it
// waits for the slot (a zero wait answers 429 then, which made this test
// flaky) and would get 429 after the wait if the slot were never freed.
func TestStreamClientGoneStopsPipeline(t *testing.T) {
	st := openStore(t)
	rl := readLimits
	rl.MaxSamplesPerQuery = 1 << 30
	rl.MaxConcurrent, rl.MaxQueueWait = 2, 10*time.Second
	_, rurl := server(t, st, rl)
	manySeries(t, st, 300, 3000)
	body := testkit.ReadRequest(bothTypes, q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "many")))
	before := runtime.NumGoroutine()
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rurl, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d: status %d, want 200", i, resp.StatusCode)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 100<<10)); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		cancel()
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the cancelled reads, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// A series with nothing in range (a store that loads series lazily may
// hand one out) is left out of both answers, as Prometheus leaves it out.
func TestEmptySeriesLeftOut(t *testing.T) {
	q := &histQuerier{series: []*memHistSeries{
		{lset: labels.FromStrings("__name__", "a")},
		{lset: labels.FromStrings("__name__", "b"), floats: []actastore.Sample{{T: 1, V: 2}}},
		{lset: labels.FromStrings("__name__", "c")},
	}}
	srv := httptest.NewServer(New(q, readLimits, nil, nil))
	defer srv.Close()
	rr, err := testkit.ReadResponse(post(t, srv.URL, testkit.ReadRequest(samplesFirst, q0())).Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Results) != 1 || len(rr.Results[0].Timeseries) != 1 || len(rr.Results[0].Timeseries[0].Samples) != 1 {
		t.Fatalf("SAMPLES answer %v, want the one series with a sample", rr.Results)
	}
	a := post(t, srv.URL, testkit.ReadRequest(bothTypes, q0()))
	frames := 0
	err = testkit.Frames(bytes.NewReader(a.Body), 1<<24, func(cresp *prompb.ChunkedReadResponse) error {
		frames++
		if cs := cresp.ChunkedSeries; len(cs) != 1 || len(cs[0].Chunks) == 0 || cs[0].Labels[0].Value != "b" {
			t.Fatalf("frame %v, want series b with its chunk", cs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if frames != 1 {
		t.Fatalf("%d frames, want 1", frames)
	}
}

func q0() *prompb.Query { return q(0, math.MaxInt64, m(prompb.LabelMatcher_RE, "__name__", ".+")) }

// segments keeps what it is given, in order, across block boundaries and
// for pieces larger than a block.
func TestSegments(t *testing.T) {
	var sg segments
	var want []byte
	rng := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 10, segmentBytes - 20, 30, segmentBytes + 5, 1, segmentBytes, 7} {
		b := make([]byte, n)
		rng.Read(b)
		sg.append(b)
		want = append(want, b...)
	}
	if got := bytes.Join(sg, nil); !bytes.Equal(got, want) {
		t.Fatalf("segments hold %d bytes, want %d (or differ)", len(got), len(want))
	}
	if len(sg) < 4 || cap(sg[0]) != 0 && cap(sg[0]) != 10 {
		t.Fatalf("%d segments, the first of capacity %d: blocks not cut, or the first not of the first piece's size", len(sg), cap(sg[0]))
	}
	for i := range sg {
		if cap(sg[i]) > 2*segmentBytes {
			t.Fatalf("segment %d has capacity %d", i, cap(sg[i]))
		}
	}
}
