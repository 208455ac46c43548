package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeDeleteSeries deletes through the query API's admin endpoint of
// the real binary: one series wholly, one in a time range. They are gone
// from remote read (both response types) and from the series lookup, stay
// gone after kill -9 and a restart, and every other sample is untouched bit
// for bit.
func TestServeDeleteSeries(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "acta.yaml")
	if err := os.WriteFile(cfgFile, []byte(e2eConfig+"\nquery:\n  admin_api_enabled: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfgFile, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}
	const t0 = 1_750_000_000_000
	p := start(t, bin, args...)
	d, sets := genData(rand.New(rand.NewSource(7)), "del_e2e", 6, 200, t0)
	send(t, p.url, d, sets, 100)
	whole, ranged := sets[1], sets[4]
	mint, maxt := int64(t0+50*15000), int64(t0+149*15000) // samples 50..149 of the ranged series

	// Half of the data in files, half in the head, so both are deleted from.
	p.stop(t, syscall.SIGTERM)
	p = start(t, bin, args...)
	deleteSeries(t, p.url, url.Values{"match[]": {whole.String()}})
	deleteSeries(t, p.url, url.Values{"match[]": {ranged.String()},
		"start": {promTimeMs(mint)}, "end": {promTimeMs(maxt)}})

	want := dataset{}
	for k, ss := range d {
		if k == whole.String() {
			continue
		}
		if k == ranged.String() {
			var kept []sample
			for _, s := range ss {
				if s.T < mint || s.T > maxt {
					kept = append(kept, s)
				}
			}
			ss = kept
		}
		want[k] = ss
	}
	check := func(phase string) {
		t.Helper()
		checkAll(t, phase, p.url, "del_e2e", want)
		if got := seriesLookup(t, p.url, `{__name__="del_e2e"}`); len(got) != 5 || strings.Contains(strings.Join(got, " "), `"host-1:9100"`) {
			t.Errorf("%s: /api/v1/series has %d series %v, want 5 without host-1", phase, len(got), got)
		}
	}
	check("after delete")
	p.stop(t, syscall.SIGKILL)
	p = start(t, bin, args...)
	check("after kill -9 and restart")
	p.stop(t, syscall.SIGTERM)
}

// promTimeMs is a time the query API takes, exact to the ms.
func promTimeMs(ms int64) string { return fmt.Sprintf("%d.%03d", ms/1000, ms%1000) }

func deleteSeries(t *testing.T, base string, v url.Values) {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/admin/tsdb/delete_series", v)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete_series %v: %d %s", v, resp.StatusCode, b)
	}
}

// seriesLookup returns the label sets /api/v1/series answers, as JSON text.
func seriesLookup(t *testing.T, base, match string) []string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/series?" + url.Values{"match[]": {match}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Status string            `json:"status"`
		Data   []json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Status != "success" {
		t.Fatalf("series lookup: %v %+v", err, out)
	}
	var got []string
	for _, d := range out.Data {
		got = append(got, string(d))
	}
	return got
}
