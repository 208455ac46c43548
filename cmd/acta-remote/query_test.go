package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/prometheus/prometheus/model/labels"
)

// TestPrinterFormats pins the three output forms, with values that only
// their bits tell apart (a stale marker among NaNs, -0).
func TestPrinterFormats(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "job", `a"b`)
	smps := []actastore.Sample{
		{T: 1700000000123, V: math.Float64frombits(0x7ff0000000000002)},
		{T: 1700000000124, V: math.Copysign(0, -1)},
		{T: 1700000000125, V: 0.1},
	}
	f := func(p printer, want string) {
		t.Helper()
		var b bytes.Buffer
		p.w = &b
		p.series(ls)
		for _, s := range smps {
			p.sample(ls, s, startOf{})
		}
		if b.String() != want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
		}
	}
	f(printer{}, `{__name__="up", job="a\"b"}
  1700000000123	2023-11-14T22:13:20.123Z	NaN	0x7ff0000000000002
  1700000000124	2023-11-14T22:13:20.124Z	-0	0x8000000000000000
  1700000000125	2023-11-14T22:13:20.125Z	0.1	0x3fb999999999999a
`)
	f(printer{inline: true}, `{__name__="up", job="a\"b"}	1700000000123	2023-11-14T22:13:20.123Z	NaN	0x7ff0000000000002
{__name__="up", job="a\"b"}	1700000000124	2023-11-14T22:13:20.124Z	-0	0x8000000000000000
{__name__="up", job="a\"b"}	1700000000125	2023-11-14T22:13:20.125Z	0.1	0x3fb999999999999a
`)
	f(printer{json: true, inline: true}, `{"labels":{"__name__":"up","job":"a\"b"},"t":1700000000123,"v":"NaN","bits":"0x7ff0000000000002"}
{"labels":{"__name__":"up","job":"a\"b"},"t":1700000000124,"v":-0,"bits":"0x8000000000000000"}
{"labels":{"__name__":"up","job":"a\"b"},"t":1700000000125,"v":0.1,"bits":"0x3fb999999999999a"}
`)
}

func TestParseTime(t *testing.T) {
	f := func(s string, want int64, ok bool) {
		t.Helper()
		got, err := parseTime(s)
		if (err == nil) != ok || (ok && got != want) {
			t.Errorf("parseTime(%q) = %d, %v; want %d, ok=%v", s, got, err, want, ok)
		}
	}
	f("1700000000123", 1700000000123, true)
	f("-5", -5, true)
	f("2023-11-14T22:13:20.123Z", 1700000000123, true)
	f("2023-11-14T23:13:20+01:00", 1700000000000, true)
	f("yesterday", 0, false)
	if _, err := parseSelector(`up{job=~"a.*",instance!="x"}`); err != nil {
		t.Error(err)
	}
	if _, err := parseSelector(`up{job=}`); err == nil {
		t.Error("bad selector accepted")
	}
	if _, err := parseSelector(`rate(up[5m])`); err == nil {
		t.Error("an expression accepted as a selector")
	}
}
