package remotewrite

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

const (
	ctV1 = testkit.ContentTypeRW1
	ctV2 = testkit.ContentTypeRW2
)

// memAppender records committed batches (deep copies); err/errs let a
// test script the store's answer.
type memAppender struct {
	mu     sync.Mutex
	series []actastore.SeriesSamples // float samples by series
	extras []actastore.SeriesExtras  // histograms and exemplars by series
	meta   []actastore.NamedMetadata
	err    error
	errs   []error
}

func (m *memAppender) Commit(_ context.Context, b *actastore.Batch) (actastore.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return actastore.Result{}, m.err
	}
	var res actastore.Result
	for _, s := range b.Series {
		if s.Labels.IsEmpty() {
			s.Labels = pairsLabels(s.LabelPairs)
		}
		if len(s.Samples) > 0 {
			m.series = append(m.series, actastore.SeriesSamples{Labels: s.Labels, Samples: append([]actastore.Sample(nil), s.Samples...)})
			res.Samples.Written += len(s.Samples)
		}
		if len(s.Histograms) > 0 || len(s.Exemplars) > 0 {
			m.extras = append(m.extras, actastore.SeriesExtras{Labels: s.Labels,
				Histograms: append([]actastore.HistogramSample(nil), s.Histograms...),
				Exemplars:  append([]actastore.Exemplar(nil), s.Exemplars...)})
			res.Histograms.Written += len(s.Histograms)
			res.Exemplars.Written += len(s.Exemplars)
		}
	}
	// Copies, as the store makes: the batch's strings may alias the body.
	for _, md := range b.Metadata {
		m.meta = append(m.meta, actastore.NamedMetadata{Name: strings.Clone(md.Name), Metadata: actastore.Metadata{
			Type: md.Type, Unit: strings.Clone(md.Unit), Help: strings.Clone(md.Help)}})
	}
	res.Metadata.Written = len(b.Metadata)
	res.Errors = m.errs
	return res, nil
}

var testLimits = Limits{
	MaxBodyBytes:        64 << 10,
	MaxDecodedBytes:     256 << 10,
	MaxSeriesPerRequest: 100,
	MaxLabelsPerSeries:  8,
	MaxLabelNameLength:  32,
	MaxLabelValueLength: 64,
	MaxConcurrent:       4,
	MaxQueueWait:        10 * time.Second,
}

func newServer(t testing.TB, app actastore.Appender) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(app, testLimits, slog.New(slog.DiscardHandler), nil))
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	code    int
	body    string
	header  http.Header
	written string
}

// post sends body with Content-Type ct and Content-Encoding enc, each left
// out when empty.
func post(t testing.TB, url, ct, enc string, body []byte) answer {
	t.Helper()
	a := testkit.Post(t, url, map[string]string{"Content-Type": ct, "Content-Encoding": enc}, body)
	return answer{a.Code, string(a.Body), a.Header, a.Header.Get(headerSamplesWritten)}
}

// v2Req symbolizes label sets (each "name", "value", ...) with one sample each.
func v2Req(sets ...[]string) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, set := range sets {
		var refs []uint32
		for _, s := range set {
			refs = append(refs, st.Symbolize(s))
		}
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: refs,
			Samples:    []writev2.Sample{{Value: float64(i), Timestamp: 1000 + int64(i)}},
		})
	}
	req.Symbols = st.Symbols()
	return req
}

// pairsLabels decodes a SeriesData.LabelPairs encoding (uvarint count,
// then uvarint length, name, uvarint length, value; see
// actastore.AppendLabelCount and AppendLabelPair) into a sorted label set,
// as the store does; it panics on a bad encoding or a wrong count.
func pairsLabels(b []byte) labels.Labels {
	var sb labels.ScratchBuilder
	enc := b
	n, k := binary.Uvarint(b)
	if k <= 0 {
		panic(fmt.Sprintf("bad label count % x", enc))
	}
	b = b[k:]
	read := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			panic(fmt.Sprintf("bad label pair encoding % x", enc))
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	got := uint64(0)
	for ; len(b) > 0; got++ {
		name := read()
		sb.Add(name, read())
	}
	if got != n {
		panic(fmt.Sprintf("label count %d, %d labels follow: % x", n, got, enc))
	}
	sb.Sort()
	return sb.Labels()
}

func series(kv ...string) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: testkit.Labels(kv...), Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}}}
}

func lbls(kv ...string) labels.Labels { return labels.FromStrings(kv...) }

func labelsEqual(a, b labels.Labels) bool { return labels.Equal(a, b) }
