package remoteread

import (
	"bytes"
	"io"
	"math"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

func TestReadBadInputs(t *testing.T) {
	rl := readLimits
	rl.MaxSamplesPerQuery = 50
	rl.MaxSeriesPerQuery = 2
	// As serve does: the store enforces the series limit before the first
	// byte, so a streamed answer can still fail with a clean 400.
	st := openStoreOpts(t, actastore.Options{MaxQuerySeries: rl.MaxSeriesPerQuery})
	wurl, rurl := server(t, st, rl)
	sets := []labels.Labels{
		labels.FromStrings("__name__", "a", "i", "1"),
		labels.FromStrings("__name__", "a", "i", "2"),
		labels.FromStrings("__name__", "a", "i", "3"),
		labels.FromStrings("__name__", "b"),
	}
	data := want{}
	for i, ls := range sets {
		n := []int{10, 10, 10, 60}[i]
		for j := 0; j < n; j++ {
			data[ls.String()] = append(data[ls.String()], actastore.Sample{T: int64(j * 1000), V: float64(j)})
		}
	}
	writeBoth(t, wurl, data, sets)

	both := []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}
	samplesOnly := []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}
	eqB := m(prompb.LabelMatcher_EQ, "__name__", "b")
	eqA := m(prompb.LabelMatcher_EQ, "__name__", "a")
	cases := []struct {
		name     string
		method   string
		body     []byte
		code     int
		contains string
	}{
		{"GET", http.MethodGet, testkit.ReadRequest(both, q(0, 1, eqB)), 405, "POST"},
		{"empty body", "", nil, 400, "snappy"},
		{"not snappy", "", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 400, "bad snappy block header"},
		{"body over limit", "", make([]byte, rl.MaxBodyBytes+1), 413, "limit 65536"},
		{"decoded length over limit", "", snappy.Encode(nil, make([]byte, rl.MaxDecodedBytes+1)), 413, "limit 262144"},
		{"malformed protobuf", "", snappy.Encode(nil, []byte{0x0a, 0x10, 0x01}), 400, "malformed ReadRequest"},
		{"no matchers", "", testkit.ReadRequest(both, q(0, 1)), 400, "query 0 has no matchers"},
		{"bad regex", "", testkit.ReadRequest(both, q(0, 1, m(prompb.LabelMatcher_RE, "__name__", "(("))), 400, "query 0: matcher 0"},
		{"unknown matcher type", "", testkit.ReadRequest(both, q(0, 1, m(prompb.LabelMatcher_Type(9), "__name__", "b"))), 400, "unknown type 9"},
		{"start after end", "", testkit.ReadRequest(both, q(0, 1, eqB), q(5, 4, eqB)), 400, "query 1: start 5 ms after end 4 ms"},
		{"unsupported response type", "", testkit.Encode(&prompb.ReadRequest{Queries: []*prompb.Query{q(0, 1, eqB)},
			AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{7}}), 400, "none of the accepted response types"},
		{"sample limit, samples", "", testkit.ReadRequest(samplesOnly, q(0, math.MaxInt64, eqB)), 422, "more than 50 samples, limit remote_read.max_samples_per_query"},
		{"sample limit, streamed", "", testkit.ReadRequest(both, q(0, math.MaxInt64, eqB)), 422, "more than 50 samples"},
		{"series limit, samples", "", testkit.ReadRequest(samplesOnly, q(0, math.MaxInt64, eqA)), 422, "3 series match, limit 2 (limits remote_read.max_series_per_query"},
		{"series limit, streamed", "", testkit.ReadRequest(both, q(0, math.MaxInt64, eqA)), 422, "3 series match, limit 2"},
		{"limits are per query", "", testkit.ReadRequest(both, q(0, 10_000, eqB), q(0, 30_000, eqB)), 200, ""},
	}
	for _, c := range cases {
		method := c.method
		if method == "" {
			method = http.MethodPost
		}
		a := testkit.Send(t, method, rurl, map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"}, bytes.NewReader(c.body))
		if a.Code != c.code || !strings.Contains(string(a.Body), c.contains) {
			t.Errorf("%s: got %d %q, want %d containing %q", c.name, a.Code, strings.TrimSpace(string(a.Body)), c.code, c.contains)
		}
	}
}

// A limit hit after the first frame went out cannot become a 400: the
// connection is aborted so the client sees a broken stream, never a
// complete-looking partial answer. The first series' frames exceed what
// the writer gathers before sending (flushBytes), so they are on the wire
// when the second series crosses the limit.
func TestStreamAbortedMidway(t *testing.T) {
	const first = 12000 // samples of noise: about 9 bytes each in XOR chunks
	rl := readLimits
	rl.MaxSamplesPerQuery = first + 20
	st := openStore(t)
	wurl, rurl := server(t, st, rl)
	sets := []labels.Labels{labels.FromStrings("__name__", "a", "i", "1"), labels.FromStrings("__name__", "a", "i", "2")}
	data := want{}
	rng := rand.New(rand.NewSource(1))
	for j := range first {
		data[sets[0].String()] = append(data[sets[0].String()], actastore.Sample{T: int64(j * 1000), V: rng.NormFloat64()})
	}
	for j := range 40 {
		data[sets[1].String()] = append(data[sets[1].String()], actastore.Sample{T: int64(j * 1000), V: float64(j)})
	}
	writeBoth(t, wurl, data, sets)
	resp, err := http.Post(rurl, "application/x-protobuf", bytes.NewReader(testkit.ReadRequest(
		[]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
		q(0, math.MaxInt64, m(prompb.LabelMatcher_EQ, "__name__", "a")))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: the first series fits, so the stream starts", resp.StatusCode)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("stream cut by the sample limit ended cleanly; the client would take it as complete")
	}
}
