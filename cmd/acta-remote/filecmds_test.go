package main

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtures = "../../acta/testdata/fixtures"

// capture runs f with os.Stdout redirected and returns what it printed.
func capture(t *testing.T, f func() int) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	code := f()
	w.Close()
	os.Stdout = old
	return <-done, code
}

func TestHeadJSONFixtures(t *testing.T) {
	for file, want := range map[string]string{
		"minimal.acta":    "{\"time\":1000000}\n{\"time\":2000000}\n{\"time\":3000000}\n",
		"no_primary.acta": "{\"event\":\"alpha\",\"value\":10}\n{\"event\":\"beta\",\"value\":20}\n{\"event\":\"gamma\",\"value\":30}\n",
		"date32.acta":     "{\"date\":20455,\"close\":101.25}\n{\"date\":20458,\"close\":102.5}\n",
	} {
		n := "3"
		if file == "date32.acta" {
			n = "2"
		}
		got, code := capture(t, func() int { return runHead([]string{filepath.Join(fixtures, file), "-n", n, "--json"}) })
		if code != exitOK || got != want {
			t.Errorf("%s: exit %d\n%s\nwant\n%s", file, code, got, want)
		}
	}
	got, _ := capture(t, func() int {
		return runHead([]string{"--json", filepath.Join(fixtures, "nyc_taxi_3_rows.acta"), "-n=1"})
	})
	for _, frag := range []string{`"trip_distance":0.97`, `"route_key":"ef000000ee00000001"`, `"pickup_time":1767228844000000`, `"fare_cents":720`, `"sparse_validity":false`} {
		if !strings.Contains(got, frag) {
			t.Errorf("taxi row 0 lacks %s: %s", frag, got)
		}
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("-n=1 printed %q", got)
	}
}

func TestFileCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(fixtures, "minimal.acta"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.acta")
	bad := append([]byte(nil), data...)
	bad[len(bad)-40] ^= 1
	os.WriteFile(corrupt, bad, 0o644)
	// A well-formed v0.3 prologue: unsupported, not corrupt.
	v3 := append([]byte(nil), data...)
	v3[10] = 3
	putCRC(v3)
	unsupported := filepath.Join(dir, "v3.acta")
	os.WriteFile(unsupported, v3, 0o644)
	for _, tc := range []struct {
		run  func([]string) int
		args []string
		want int
	}{
		{runValidate, []string{filepath.Join(fixtures, "nyc_taxi_3_rows.acta")}, exitOK},
		{runValidate, []string{corrupt, "--level", "structural"}, exitCorrupt},
		{runValidate, []string{unsupported}, exitUnsupported},
		{runInspect, []string{unsupported}, exitUnsupported},
		{runHead, []string{corrupt}, exitCorrupt},
		{runValidate, []string{filepath.Join(dir, "missing.acta")}, exitError},
		{runRecover, []string{filepath.Join(fixtures, "minimal.acta")}, exitOK},
		{runInspect, []string{}, exitError},
	} {
		_, code := capture(t, func() int { return tc.run(tc.args) })
		if code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.want)
		}
	}
}

// putCRC recomputes the prologue CRC32C after an edit.
func putCRC(b []byte) {
	c := crc32.Checksum(b[:60], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(b[60:], c)
}
