package remotewrite

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

func openStore(t *testing.T, opts actastore.Options) *actastore.Store {
	t.Helper()
	st, err := actastore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func readBack(t *testing.T, st *actastore.Store, name string) map[string][]actastore.Sample {
	t.Helper()
	out := map[string][]actastore.Sample{}
	ss := st.Select(context.Background(), math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	for ss.Next() {
		s := ss.At()
		it := s.Iterator()
		for it.Next() {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], actastore.Sample{T: ts, V: v})
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The real store's per-sample rejections come back as a partial 400 that
// names them, and the rest of the request is stored.
func TestRealStoreRejections(t *testing.T) {
	st := openStore(t, actastore.Options{MaxSeries: 2, OutOfOrderWindow: time.Minute})
	srv := newServer(t, st)
	ts := func(v float64, tms int64, kv ...string) prompb.TimeSeries {
		return prompb.TimeSeries{Labels: testkit.Labels(kv...), Samples: []prompb.Sample{{Value: v, Timestamp: tms}}}
	}
	a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(v2Req([]string{"__name__", "m", "i", "1"})))
	if a.code != http.StatusNoContent || a.written != "1" {
		t.Fatalf("first write: %d %q %s", a.code, a.written, a.body)
	}
	f := func(name string, body []byte, code int, contains string) {
		t.Helper()
		a := post(t, srv.URL, ctV1, "snappy", body)
		if a.code != code || !strings.Contains(a.body, contains) {
			t.Errorf("%s: got %d %q, want %d containing %q", name, a.code, a.body, code, contains)
		}
	}
	// v2Req stored {i="1"} at t=1000 with value 0.
	f("exact duplicate is fine", testkit.RW1(ts(0, 1000, "__name__", "m", "i", "1")), 204, "")
	f("conflicting duplicate", testkit.RW1(ts(5, 1000, "__name__", "m", "i", "1"), ts(1, 2000, "__name__", "m", "i", "1")), 400, "duplicate sample")
	f("newer", testkit.RW1(ts(1, 1000+3600_000, "__name__", "m", "i", "1")), 204, "")
	f("too old", testkit.RW1(ts(1, 1500, "__name__", "m", "i", "1")), 400, "out-of-order sample: series {__name__=\"m\", i=\"1\"} sample at 1500 is more than 1m0s behind its newest sample 3601000 (config storage.out_of_order_window)")
	f("cardinality", testkit.RW1(ts(1, 5000, "__name__", "m", "i", "2"), ts(1, 5000, "__name__", "m", "i", "3")), 400, "limit 2; refused {__name__=\"m\", i=\"3\"} (config storage.max_series)")

	got := readBack(t, st, "m")
	want := map[string][]actastore.Sample{
		`{__name__="m", i="1"}`: {{T: 1000, V: 0}, {T: 2000, V: 1}, {T: 3601000, V: 1}},
		`{__name__="m", i="2"}`: {{T: 5000, V: 1}},
	}
	if len(got) != len(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	for k, ws := range want {
		if len(got[k]) != len(ws) {
			t.Errorf("%s: stored %v, want %v", k, got[k], ws)
			continue
		}
		for i := range ws {
			if got[k][i] != ws[i] {
				t.Errorf("%s: stored %v, want %v", k, got[k], ws)
			}
		}
	}
}

// The label rules the receiver leaves to the store (it checks them once,
// for a series it does not know yet): a name twice and invalid UTF-8 are
// refused with 400 naming the problem, each series alone; unsorted labels
// are sorted (issue 23), as senders are told to sort them anyway.
func TestRealStoreLabelRules(t *testing.T) {
	st := openStore(t, actastore.Options{})
	srv := newServer(t, st)
	f := func(name string, typ string, body []byte, code int, contains string) {
		t.Helper()
		if a := post(t, srv.URL, typ, "snappy", body); a.code != code || !strings.Contains(a.body, contains) {
			t.Errorf("%s: got %d %q, want %d containing %q", name, a.code, a.body, code, contains)
		}
	}
	f("duplicate label", ctV1, testkit.RW1(series("__name__", "m", "a", "1", "a", "2")), 400, `duplicate label name "a"`)
	f("invalid utf8 name", ctV1, testkit.RW1(series("__name__", "m", "\xff", "v")), 400, `label name "\xff" is not UTF-8`)
	f("invalid utf8 value", ctV1, testkit.RW1(series("__name__", "m\xfe")), 400, `value of label "__name__" is not UTF-8`)
	f("invalid utf8 value, 2.0", ctV2, testkit.RW2(v2Req([]string{"__name__", "m", "a", "\xff"})), 400, `value of label "a" is not UTF-8`)
	f("duplicate label, 2.0", ctV2, testkit.RW2(v2Req([]string{"__name__", "m", "a", "1", "a", "1"})), 400, `duplicate label name "a"`)
	if s := st.Stats(); s.Series != 0 {
		t.Fatalf("refused series created %d series", s.Series)
	}
	f("unsorted labels", ctV1, testkit.RW1(series("job", "a", "__name__", "m")), 204, "")
	f("unsorted labels, 2.0", ctV2, testkit.RW2(v2Req([]string{"z", "1", "__name__", "m"})), 204, "")
	got := readBack(t, st, "m")
	if len(got[`{__name__="m", job="a"}`]) != 1 || len(got[`{__name__="m", z="1"}`]) != 1 || len(got) != 2 {
		t.Fatalf("stored %v, want the two unsorted series under their sorted label sets", got)
	}
}

// Requests that fail validation leave the real store untouched.
func TestRealStoreBadInputsStoreNothing(t *testing.T) {
	st := openStore(t, actastore.Options{})
	srv := newServer(t, st)
	for _, body := range [][]byte{
		testkit.RW1(series("__name__", "m", "a", "\xff")),
		testkit.RW1(series("__name__", "m", "a", "1", "a", "2")),
		testkit.RW1(series("job", "x")),
		append(testkit.RW1(series("__name__", "m"))[:5], 0xff),
	} {
		if a := post(t, srv.URL, ctV1, "snappy", body); a.code != http.StatusBadRequest {
			t.Errorf("status %d %s, want 400", a.code, a.body)
		}
	}
	if got := readBack(t, st, "m"); len(got) != 0 {
		t.Errorf("bad inputs stored %v", got)
	}
	if s := st.Stats(); s.Series != 0 {
		t.Errorf("bad inputs created %d series", s.Series)
	}
}

// When flushing falls behind (the head holds more than MaxHeadSamples),
// writes get 429 with Retry-After, and succeed again once the head drains.
func TestRealStoreBackpressure(t *testing.T) {
	st := openStore(t, actastore.Options{MaxHeadSamples: 5, BlockRows: 1000})
	srv := newServer(t, st)
	many := prompb.TimeSeries{Labels: testkit.Labels("__name__", "m")}
	for i := range 10 {
		many.Samples = append(many.Samples, prompb.Sample{Value: float64(i), Timestamp: int64(i)})
	}
	if a := post(t, srv.URL, ctV1, "snappy", testkit.RW1(many)); a.code != http.StatusNoContent {
		t.Fatalf("first write: %d %s", a.code, a.body)
	}
	next := prompb.TimeSeries{Labels: testkit.Labels("__name__", "m"), Samples: []prompb.Sample{{Value: 1, Timestamp: 100}}}
	a := post(t, srv.URL, ctV2, "snappy", testkit.RW2(v2Req([]string{"__name__", "m"})))
	if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.written != "0" || !strings.Contains(a.body, "(config storage.max_head_samples") {
		t.Fatalf("over the head budget: %d retry-after=%q written=%q %s", a.code, a.header.Get("Retry-After"), a.written, a.body)
	}
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if a := post(t, srv.URL, ctV1, "snappy", testkit.RW1(next)); a.code != http.StatusNoContent {
		t.Fatalf("after the head drained: %d %s", a.code, a.body)
	}
	if got := readBack(t, st, "m")[`{__name__="m"}`]; len(got) != 11 {
		t.Errorf("stored %d samples, want 11 (the refused request stored nothing)", len(got))
	}
}

// Concurrent requests share pooled scratch; run under -race this checks that
// no request sees another's buffers, and every sample lands where it belongs.
func TestConcurrentWriters(t *testing.T) {
	st := openStore(t, actastore.Options{BlockRows: 16})
	srv := newServer(t, st)
	const writers, requests = 4, 30
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for n := range requests {
				var a answer
				if n%2 == 0 {
					a = post(t, srv.URL, ctV1, "snappy", testkit.RW1(prompb.TimeSeries{
						Labels:  testkit.Labels("__name__", "cw", "w", fmt.Sprint(w)),
						Samples: []prompb.Sample{{Value: float64(w*1000 + n), Timestamp: int64(n)}},
					}))
				} else {
					req := &writev2.Request{Symbols: []string{"", "__name__", "cw", "w", fmt.Sprint(w)},
						Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 3, 4},
							Samples: []writev2.Sample{{Value: float64(w*1000 + n), Timestamp: int64(n)}}}}}
					a = post(t, srv.URL, ctV2, "snappy", testkit.RW2(req))
				}
				if a.code != http.StatusNoContent {
					t.Errorf("writer %d request %d: %d %s", w, n, a.code, a.body)
					return
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	got := readBack(t, st, "cw")
	for w := range writers {
		ss := got[fmt.Sprintf(`{__name__="cw", w="%d"}`, w)]
		if len(ss) != requests {
			t.Errorf("writer %d: %d samples, want %d", w, len(ss), requests)
			continue
		}
		for n, s := range ss {
			if s.T != int64(n) || s.V != float64(w*1000+n) {
				t.Errorf("writer %d sample %d = %v", w, n, s)
				break
			}
		}
	}
}
