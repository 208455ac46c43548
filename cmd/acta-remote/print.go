package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/acta-remote/acta-remote/actastore"
)

// printer writes samples as text (a labels line, then one tab-separated line
// per sample; with inline, the labels start every line, for tail's
// interleaved series) or JSON (one object per sample). Values are printed
// with their exact bits: NaN payloads (stale markers) and -0 are told apart.
//
// A float sample is "ms, UTC time, value, bits"; a native histogram is
// "ms, UTC time, Prometheus's histogram string, then kind, schema, counter
// reset hint and the sum's bits". The JSON forms are in sample and
// histogram.
type printer struct {
	w      io.Writer
	json   bool
	inline bool
}

func (p printer) series(lset labels.Labels) {
	if !p.json && !p.inline {
		fmt.Fprintln(p.w, lset.String())
	}
}

// merged prints a series' samples of both kinds, each sorted, merged by
// timestamp (floats first at equal ones).
func (p printer) merged(lset labels.Labels, fs []actastore.Sample, hs []actastore.HistogramSample) {
	p.mergedStarts(lset, fs, hs, nil, nil)
}

// mergedStarts is merged with the start timestamps stored with the samples
// (fsts, hsts: sorted by T, one per sample that has one).
func (p printer) mergedStarts(lset labels.Labels, fs []actastore.Sample, hs []actastore.HistogramSample, fsts, hsts []actastore.StartTime) {
	for len(fs) > 0 || len(hs) > 0 {
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T <= hs[0].T) {
			var st startOf
			st, fsts = takeStart(fsts, fs[0].T)
			p.sample(lset, fs[0], st)
			fs = fs[1:]
		} else {
			var st startOf
			st, hsts = takeStart(hsts, hs[0].T)
			p.histogram(lset, hs[0], st)
			hs = hs[1:]
		}
	}
}

// startOf is a sample's start timestamp (ms), when it has one.
type startOf struct {
	st int64
	ok bool
}

// takeStart returns the start timestamp of the sample at t from sorted sts
// and the entries after it.
func takeStart(sts []actastore.StartTime, t int64) (startOf, []actastore.StartTime) {
	for len(sts) > 0 && sts[0].T < t {
		sts = sts[1:]
	}
	if len(sts) > 0 && sts[0].T == t {
		return startOf{st: sts[0].ST, ok: true}, sts[1:]
	}
	return startOf{}, sts
}

// text is the start timestamp as the text form's last field (empty when
// none): tab, "st=", ms.
func (s startOf) text() string {
	if !s.ok {
		return ""
	}
	return "\tst=" + strconv.FormatInt(s.st, 10)
}

// json is the start timestamp as a JSON member after "t" (empty when
// none): ,"st":ms.
func (s startOf) json() string {
	if !s.ok {
		return ""
	}
	return `,"st":` + strconv.FormatInt(s.st, 10)
}

func (p printer) prefix(lset labels.Labels) string {
	if p.inline {
		return lset.String() + "\t"
	}
	return "  "
}

// sample prints one float sample; in JSON:
//
//	{"labels":{...},"t":ms,"st":ms,"v":value,"bits":"0x<16 hex digits>"}
//
// with v a number, or "NaN", "+Inf", "-Inf", and "st" (the start
// timestamp stored with it, ms) only when it has one; in text, st=ms ends
// the line then.
func (p printer) sample(lset labels.Labels, s actastore.Sample, st startOf) {
	bits := math.Float64bits(s.V)
	if !p.json {
		fmt.Fprintf(p.w, "%s%d\t%s\t%s\t0x%016x%s\n", p.prefix(lset), s.T, fmtMs(s.T), strconv.FormatFloat(s.V, 'g', -1, 64), bits, st.text())
		return
	}
	var sb strings.Builder
	labelsJSON(&sb, lset)
	fmt.Fprintf(&sb, `,"t":%d%s,"v":%s,"bits":"0x%016x"}`, s.T, st.json(), floatJSON(s.V, 64), bits)
	fmt.Fprintln(p.w, sb.String())
}

// histogram prints one native histogram sample; in JSON every field of
// Prometheus's model/histogram type, as stored:
//
//	{"labels":{...},"t":ms,"st":ms,"histogram":{"float":false,"reset_hint":"unknown",
//	 "schema":3,"zero_threshold":1e-128,"zero_count":2,"count":12,"sum":1.6,
//	 "positive_spans":[{"offset":-2,"length":2}],"positive_deltas":[1,2],
//	 "negative_spans":[],"negative_deltas":[],"custom_values":[]}}
//
// An integer histogram (float false) has integer counts and bucket deltas
// (positive_deltas, negative_deltas: each bucket's change from the one
// before, as Prometheus keeps them); a float histogram float counts
// (positive_counts, negative_counts). reset_hint is "unknown", "reset",
// "not_reset" or "gauge". Every float is exact: a finite one is the
// shortest number that parses back to the same bits (-0 included), any
// other a string of its IEEE 754 bits, so a stale marker's sum is
// "0x7ff0000000000002". "st" (the start timestamp stored with it, ms) is
// there only when it has one; in text, st=ms ends the line then.
func (p printer) histogram(lset labels.Labels, h actastore.HistogramSample, st startOf) {
	if !p.json {
		kind, schema, hint, sum := "histogram", int32(0), histogram.UnknownCounterReset, 0.0
		if h.FH != nil {
			kind, schema, hint, sum = "float_histogram", h.FH.Schema, h.FH.CounterResetHint, h.FH.Sum
		} else {
			schema, hint, sum = h.H.Schema, h.H.CounterResetHint, h.H.Sum
		}
		fmt.Fprintf(p.w, "%s%d\t%s\t%s\t%s schema=%d reset_hint=%s sum_bits=0x%016x%s\n", p.prefix(lset), h.T, fmtMs(h.T),
			histString(h), kind, schema, hintName(hint), math.Float64bits(sum), st.text())
		return
	}
	var f []string // the fields, in order
	if fh := h.FH; fh != nil {
		f = []string{`"float":true`, `"reset_hint":"` + hintName(fh.CounterResetHint) + `"`,
			`"schema":` + strconv.Itoa(int(fh.Schema)), `"zero_threshold":` + exactJSON(fh.ZeroThreshold),
			`"zero_count":` + exactJSON(fh.ZeroCount), `"count":` + exactJSON(fh.Count), `"sum":` + exactJSON(fh.Sum),
			`"positive_spans":` + spansJSON(fh.PositiveSpans), `"positive_counts":` + floatsJSON(fh.PositiveBuckets),
			`"negative_spans":` + spansJSON(fh.NegativeSpans), `"negative_counts":` + floatsJSON(fh.NegativeBuckets),
			`"custom_values":` + floatsJSON(fh.CustomValues)}
	} else {
		ih := h.H
		f = []string{`"float":false`, `"reset_hint":"` + hintName(ih.CounterResetHint) + `"`,
			`"schema":` + strconv.Itoa(int(ih.Schema)), `"zero_threshold":` + exactJSON(ih.ZeroThreshold),
			`"zero_count":` + strconv.FormatUint(ih.ZeroCount, 10), `"count":` + strconv.FormatUint(ih.Count, 10), `"sum":` + exactJSON(ih.Sum),
			`"positive_spans":` + spansJSON(ih.PositiveSpans), `"positive_deltas":` + intsJSON(ih.PositiveBuckets),
			`"negative_spans":` + spansJSON(ih.NegativeSpans), `"negative_deltas":` + intsJSON(ih.NegativeBuckets),
			`"custom_values":` + floatsJSON(ih.CustomValues)}
	}
	var sb strings.Builder
	labelsJSON(&sb, lset)
	fmt.Fprintf(&sb, `,"t":%d%s,"histogram":{%s}}`, h.T, st.json(), strings.Join(f, ","))
	fmt.Fprintln(p.w, sb.String())
}

// histString is Prometheus's String form ({count:12, sum:1.6, [-4,-2):5,
// ...}). It walks the buckets by the spans, which a stale marker (exempt
// from validation) need not match: then only count and sum are shown.
func histString(h actastore.HistogramSample) (s string) {
	defer func() {
		if recover() != nil {
			if h.FH != nil {
				s = fmt.Sprintf("{count:%g, sum:%g}", h.FH.Count, h.FH.Sum)
			} else {
				s = fmt.Sprintf("{count:%d, sum:%g}", h.H.Count, h.H.Sum)
			}
		}
	}()
	if h.FH != nil {
		return h.FH.String()
	}
	return h.H.String()
}

// hintName names a counter reset hint (model/histogram.CounterResetHint).
func hintName(h histogram.CounterResetHint) string {
	switch h {
	case histogram.UnknownCounterReset:
		return "unknown"
	case histogram.CounterReset:
		return "reset"
	case histogram.NotCounterReset:
		return "not_reset"
	case histogram.GaugeType:
		return "gauge"
	}
	return "hint_" + strconv.Itoa(int(h))
}

// exactJSON is a float as a JSON value that gives back its bits: the
// shortest number for a finite value, else a string of the IEEE 754 bits.
func exactJSON(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprintf(`"0x%016x"`, math.Float64bits(f))
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func labelsJSON(sb *strings.Builder, lset labels.Labels) {
	sb.WriteString(`{"labels":{`)
	i := 0
	lset.Range(func(l labels.Label) {
		if i++; i > 1 {
			sb.WriteByte(',')
		}
		sb.WriteString(jsonString(l.Name) + ":" + jsonString(l.Value))
	})
	sb.WriteByte('}')
}

func spansJSON(spans []histogram.Span) string {
	parts := make([]string, len(spans))
	for i, sp := range spans {
		parts[i] = fmt.Sprintf(`{"offset":%d,"length":%d}`, sp.Offset, sp.Length)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func intsJSON(vs []int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func floatsJSON(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = exactJSON(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
