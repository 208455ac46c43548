package remoteread

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
)

// FuzzReadRequest sends arbitrary ReadRequest protobufs (snappy-framed, as
// on the wire) to the handler over a small real store: every answer must be
// 200, 400 or 413, never a 5xx or a panic.
func FuzzReadRequest(f *testing.F) {
	seed := func(qs ...*prompb.Query) {
		b, _ := (&prompb.ReadRequest{Queries: qs, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{
			prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}}).Marshal()
		f.Add(b)
	}
	seed(q(0, 10_000, m(prompb.LabelMatcher_EQ, "__name__", "a")))
	seed(q(0, 1, m(prompb.LabelMatcher_RE, "__name__", ".+")), q(5, 9, m(prompb.LabelMatcher_NRE, "i", "1|2")))
	seed(q(9, 1, m(prompb.LabelMatcher_NEQ, "job", "")))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})

	st := openStoreOpts(f, actastore.Options{})
	ls := labels.FromStrings("__name__", "a", "i", "1")
	if _, err := st.Append(f.Context(), []actastore.SeriesSamples{{Labels: ls, Samples: []actastore.Sample{{T: 1000, V: 1}, {T: 2000, V: 2}}}}); err != nil {
		f.Fatal(err)
	}
	rl := readLimits
	rl.MaxSamplesPerQuery = 100
	h := New(st, rl, slog.New(slog.DiscardHandler), nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/read", bytes.NewReader(snappy.Encode(nil, data)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
