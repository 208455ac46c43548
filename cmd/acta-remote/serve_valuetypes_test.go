package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
)

// valueTypesConfig: heads flush within a second and maintenance runs every
// second, so that three days of history sent now are sealed, merged,
// typed and compacted (the newest file too, idle) within seconds.
const valueTypesConfig = `
storage:
  max_head_age: 1s
rotation:
  interval: 1s
otlp:
  grpc:
    enabled: false
`

// vtValue draws the value of shape (name) at row j: what the issue lists —
// NaN payloads, the stale marker, ±Inf, subnormals, 2^53+1, integers near
// ±2^63, decimals at every scale 0..18 (and -0 through OTLP).
func vtValue(rng *rand.Rand, shape string, scale, j int) float64 {
	// No -0 here: these go over Remote-Write, whose protobuf (prompb, as
	// Prometheus sends it) omits a zero double, so -0 arrives as 0. OTLP's
	// value oneof keeps it (below).
	special := []float64{math.Float64frombits(0x7ff0000000000002), math.Float64frombits(0x7ff8000000000001),
		math.Float64frombits(0xfff4000000000abc), math.Inf(1), math.Inf(-1)}
	switch shape {
	case "int":
		if j%97 == 50 {
			return special[j%len(special)]
		}
		return []float64{float64(rng.Int63()), -float64(rng.Int63()), math.Ldexp(1, 63) * -1, math.Nextafter(math.Ldexp(1, 63), 0),
			9007199254740993, float64(rng.Intn(1000))}[j%6]
	case "dec":
		if j%101 == 7 {
			return math.Float64frombits(0x7ff0000000000002) // a stale marker now and then
		}
		u := rng.Int63n(1<<53 + 1)
		if rng.Intn(2) == 0 {
			u = -u
		}
		return float64(u) / math.Pow10(scale)
	default: // floats of every class
		if j%3 == 0 {
			return special[j%len(special)]
		}
		if j%3 == 1 {
			return math.Float64frombits(rng.Uint64() & 0x800fffffffffffff) // subnormal
		}
		return rng.NormFloat64() * math.Pow10(rng.Intn(40)-20)
	}
}

// specSamples decodes a series file with the acta package alone, by the
// rule docs/format/series.md gives a reader that knows only Acta v0.2:
// value if present (float64 as is, int64 converted, decimal64 as the
// decimal string unscaled e-scale parsed to the nearest float64), else
// value_float64. Rows are merged across blocks, one per timestamp, the
// first stored winning.
func specSamples(t *testing.T, path string) []sample {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	ti, vi, ei := s.Index("timestamp"), s.Index("value"), s.Index("value_float64")
	vt := s.Columns[vi].Type
	var out []sample
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		ts := b.Columns[ti].(*acta.FixedArray[int64]).Values
		for row, tv := range ts {
			var v float64
			val := b.Columns[vi]
			switch {
			case val.Validity().Valid(row) && vt.ID == acta.TypeFloat64:
				v = val.(*acta.FixedArray[float64]).Values[row]
			case val.Validity().Valid(row) && vt.ID == acta.TypeInt64:
				v = float64(val.(*acta.FixedArray[int64]).Values[row])
			case val.Validity().Valid(row) && vt.ID == acta.TypeDecimal64:
				u := val.(*acta.FixedArray[int64]).Values[row]
				v, err = strconv.ParseFloat(strconv.FormatInt(u, 10)+"e-"+strconv.Itoa(int(vt.Scale)), 64)
				if err != nil {
					t.Fatal(err)
				}
			case ei >= 0 && b.Columns[ei].Validity().Valid(row):
				v = b.Columns[ei].(*acta.FixedArray[float64]).Values[row]
			default:
				t.Fatalf("%s block %d row %d: neither value nor value_float64", path, i, row)
			}
			out = append(out, sample{tv, v})
		}
	}
	slices.SortStableFunc(out, func(a, b sample) int { return int(max(min(a.T-b.T, 1), -1)) })
	return slices.CompactFunc(out, func(a, b sample) bool { return a.T == b.T })
}

// specStarts reads a series file's start timestamps as docs/format/series.md
// tells a reader that knows only Acta v0.2: the nullable timestamp64(ms)
// column start_timestamp, when the file has it; a row with a value gives
// the start timestamp of the sample in its row. Merged across blocks as
// specSamples merges the samples (rows without one included, so that the
// first stored row of a timestamp decides).
func specStarts(t *testing.T, path string) []actastore.StartTime {
	t.Helper()
	r, err := acta.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Schema()
	ti, si := s.Index("timestamp"), s.Index("start_timestamp")
	if si < 0 {
		return nil
	}
	if c := s.Columns[si]; c.Type != acta.Timestamp(acta.Millisecond) || !c.Nullable {
		t.Fatalf("%s: start_timestamp column %+v", path, c)
	}
	type row struct {
		st actastore.StartTime
		ok bool
	}
	var rows []row
	for i := range r.Blocks() {
		b, err := r.ReadBlock(i)
		if err != nil {
			t.Fatal(err)
		}
		ts := b.Columns[ti].(*acta.FixedArray[int64]).Values
		sc := b.Columns[si].(*acta.FixedArray[int64])
		for j, tv := range ts {
			rows = append(rows, row{actastore.StartTime{T: tv, ST: sc.Values[j]}, sc.Valid.Valid(j)})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return int(max(min(a.st.T-b.st.T, 1), -1)) })
	rows = slices.CompactFunc(rows, func(a, b row) bool { return a.st.T == b.st.T })
	var out []actastore.StartTime
	for _, r := range rows {
		if r.ok {
			out = append(out, r.st)
		}
	}
	return out
}

// Every path in and out keeps every bit once the files are typed, merged
// and compacted: Remote-Write 1.0 and 2.0 and OTLP in; remote read
// (samples and streamed XOR chunks), acta-remote query and a reader of the
// files that knows only the Acta v0.2 spec out.
func TestServeValueTypesBitExact(t *testing.T) {
	bin := buildBinary(t)
	p, data := startWith(t, bin, valueTypesConfig)
	rng := rand.New(rand.NewSource(16))
	t0 := time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC).UnixMilli() // a Thursday: the days share a 7d window
	const n = 3 * 24 * 6                                          // 3 days at 10 minutes
	want := dataset{}
	var sets []labels.Labels
	addSeries := func(shape string, scale int) {
		ls := labels.FromStrings("__name__", "vt_"+shape, "scale", strconv.Itoa(scale))
		ss := make([]sample, n)
		for j := range ss {
			ss[j] = sample{T: t0 + int64(j)*600_000, V: vtValue(rng, shape, scale, j)}
		}
		sets = append(sets, ls)
		want[ls.String()] = ss
	}
	addSeries("int", 0)
	addSeries("float", 0)
	for s := 0; s <= 18; s++ {
		addSeries("dec", s)
	}
	send(t, p.url, want, sets, 100)

	// OTLP: a gauge of 2-decimal values with a -0, an infinity and a point
	// without a recorded value (the stale marker).
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("vt_otlp")
	dps := m.SetEmptyGauge().DataPoints()
	var otlpSent []sample
	for j := range n {
		ts := t0 + int64(j)*600_000
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(time.UnixMilli(ts)))
		v := float64(rng.Intn(100000)) / 100
		switch j {
		case 10:
			v = math.Copysign(0, -1)
		case 20:
			v = math.Inf(1)
		case 30:
			dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
			v = math.Float64frombits(0x7ff0000000000002)
		}
		dp.SetDoubleValue(v)
		otlpSent = append(otlpSent, sample{ts, v})
	}
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(p.url+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte("rejected")) {
		t.Fatalf("OTLP export: %d %q", resp.StatusCode, b)
	}
	otlp := read(t, p.url, "vt_otlp", false)
	if len(otlp) != 1 {
		t.Fatalf("OTLP series: %v", otlp)
	}
	for k := range otlp {
		want[k] = otlpSent
	}

	// Wait for every file to be written by compaction or a merge.
	deadline := time.Now().Add(90 * time.Second)
	for {
		files, final := 0, 0
		filepath.WalkDir(filepath.Join(data, "series"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".acta") {
				return nil
			}
			files++
			if r, err := acta.Open(path); err == nil {
				if r.Schema().ID == 5 {
					final++
				}
				r.Close()
			}
			return nil
		})
		if files == 2*len(want) && final == files {
			break // Thursday to Saturday merged, Sunday compacted as the idle newest
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: %d series files, %d compacted; want %d of each", files, final, 2*len(want))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Remote read keeps every bit, -0 included, as streamed XOR chunks and
	// as SAMPLES (remoteread marshals a series holding -0 itself: gogo
	// drops a zero double).
	sameData(t, "remote read, streamed", read(t, p.url, "vt_.*", true), want)
	sameData(t, "remote read, samples", read(t, p.url, "vt_.*", false), want)
	out, _ := runTool(t, bin, "query", "--data-dir", data, "--json", `{__name__=~"vt_.*"}`)
	sameData(t, "query", parseJSONOutput(t, out), want)
	p.stop(t, syscall.SIGTERM)

	// The files alone, read by the spec's rule; the catalog names them.
	ro, err := actastore.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, si := range ro.Series(labels.MustNewMatcher(labels.MatchRegexp, "__name__", "vt_.*")) {
		files, err := ro.ListFiles(si.Ref)
		if err != nil || len(files) != 2 {
			t.Fatalf("%s: files %v %v", si.Labels, files, err)
		}
		var got []sample
		for _, f := range files { // in start order: every sample below the next file's start
			got = append(got, specSamples(t, f.Path)...)
			if err := acta.Validate(f.Path, acta.ValidateFull); err != nil {
				t.Error(err)
			}
		}
		k := si.Labels.String()
		sameData(t, "spec reader "+k, dataset{k: got}, dataset{k: want[k]})
		r, _ := acta.Open(files[0].Path)
		types[k] = r.Schema().Columns[1].Type.String()
		r.Close()
	}
	if len(types) != len(want) {
		t.Fatalf("the catalog has %d of the %d series", len(types), len(want))
	}
	for k, typ := range types {
		switch {
		case strings.Contains(k, "vt_int"):
			if typ != "int64" {
				t.Errorf("%s: %s, want int64", k, typ)
			}
		case strings.Contains(k, "vt_dec"):
			s, _ := strconv.Atoi(labelsOf(k).Get("scale"))
			if want := fmt.Sprintf("decimal64(18,%d)", s); typ != want && !(s == 0 && typ == "int64") {
				t.Errorf("%s: %s, want %s", k, typ, want)
			}
		case strings.Contains(k, "vt_otlp"):
			if typ != "decimal64(18,2)" {
				t.Errorf("%s: %s, want decimal64(18,2)", k, typ)
			}
		case strings.Contains(k, "vt_float"):
			if typ != "float64" {
				t.Errorf("%s: %s, want float64", k, typ)
			}
		}
	}
	t.Logf("value types: %v", types)
}

func labelsOf(s string) labels.Labels {
	// s is labels.String(): {a="1", b="2"}
	var pairs []string
	for _, kv := range strings.Split(strings.Trim(s, "{}"), ", ") {
		k, v, _ := strings.Cut(kv, "=")
		uq, _ := strconv.Unquote(v)
		pairs = append(pairs, k, uq)
	}
	return labels.FromStrings(pairs...)
}
