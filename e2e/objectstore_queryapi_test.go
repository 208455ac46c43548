package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// checkQueryAPI asks base's Prometheus query API (a query instance's is
// over the bucket and the live writers) for metric name over [from, to)
// (ms, whole seconds) at a 15 s step, the step of the samples sent: every
// series of want must come back with every sample's value at its own
// timestamp, the same float (NaN payloads aside: the API prints "NaN"),
// stale markers absent;
// /api/v1/series must list the same series.
func checkQueryAPI(t *testing.T, who, base, name string, want sent, from, to int64) {
	t.Helper()
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	q := url.Values{"query": {name}, "start": {strconv.FormatInt(from/1000, 10)},
		"end": {strconv.FormatInt((to-1)/1000, 10)}, "step": {"15"}}
	getAPI(t, who, base+"/api/v1/query_range?"+q.Encode(), &qr)
	if len(qr.Data.Result) != len(want) {
		t.Fatalf("%s: query_range %s: %d series, want %d", who, name, len(qr.Data.Result), len(want))
	}
	for _, r := range qr.Data.Result {
		k := labelsString(r.Metric)
		w := want[k]
		if w == nil {
			t.Fatalf("%s: query_range returned %s, never written", who, k)
		}
		var exp []prompb.Sample
		for _, s := range w.Samples {
			if s.Timestamp >= from && s.Timestamp < to && !value.IsStaleNaN(s.Value) {
				exp = append(exp, s)
			}
		}
		if len(r.Values) != len(exp) {
			t.Fatalf("%s: %s: %d points, want %d", who, k, len(r.Values), len(exp))
		}
		for i, p := range r.Values {
			ts, vs := fmt.Sprint(p[0]), fmt.Sprint(p[1])
			v, err := strconv.ParseFloat(vs, 64) // "+Inf", "-Inf" and "NaN" too
			same := err == nil && (math.Float64bits(v) == math.Float64bits(exp[i].Value) || math.IsNaN(v) && math.IsNaN(exp[i].Value))
			if ts != strconv.FormatInt(exp[i].Timestamp/1000, 10) || !same {
				t.Fatalf("%s: %s: point %d is [%s %s], want %d %v", who, k, i, ts, vs, exp[i].Timestamp, exp[i].Value)
			}
		}
	}
	var sr struct {
		Data []map[string]string `json:"data"`
	}
	getAPI(t, who, base+"/api/v1/series?"+url.Values{"match[]": {name}}.Encode(), &sr)
	if len(sr.Data) != len(want) {
		t.Fatalf("%s: /api/v1/series: %d series, want %d", who, len(sr.Data), len(want))
	}
	for _, m := range sr.Data {
		if want[labelsString(m)] == nil {
			t.Fatalf("%s: /api/v1/series lists %v, never written", who, m)
		}
	}
}

// getAPI GETs u and decodes its JSON answer into out; anything but 200
// fails the test.
func getAPI(t *testing.T, who, u string, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		t.Fatalf("%s: GET %s: %d %s", who, u, resp.StatusCode, e.Error)
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber() // times as written (1764590400, not 1.7645904e+09)
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: GET %s: %v", who, u, err)
	}
}
