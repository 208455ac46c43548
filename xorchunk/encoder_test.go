package xorchunk

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// reference encodes samples with chunkenc, cutting a chunk every perChunk
// samples, and returns the chunks' bytes.
func reference(ts []int64, vs []float64, perChunk int) [][]byte {
	var out [][]byte
	var c *chunkenc.XORChunk
	var app chunkenc.Appender
	for i := range ts {
		if i%perChunk == 0 {
			if c != nil {
				out = append(out, c.Bytes())
			}
			c = chunkenc.NewXORChunk()
			app, _ = c.Appender()
		}
		app.Append(0, ts[i], vs[i])
	}
	if c != nil {
		out = append(out, c.Bytes())
	}
	return out
}

// encode encodes the same way into one buffer, back to back.
func encode(ts []int64, vs []float64, perChunk int) [][]byte {
	var buf []byte
	var offs []int
	var e Encoder
	for i := range ts {
		if i%perChunk == 0 {
			if i > 0 {
				buf = e.Finish(buf)
			}
			offs = append(offs, len(buf))
			e.Start(buf)
		}
		e.Append(ts[i], vs[i])
	}
	if len(ts) > 0 {
		buf = e.Finish(buf)
	}
	out := make([][]byte, len(offs))
	for i, o := range offs {
		end := len(buf)
		if i+1 < len(offs) {
			end = offs[i+1]
		}
		out[i] = buf[o:end]
	}
	return out
}

// checkOpen appends the samples (at most MaxSamples) to one chunk with
// both encoders and, after every sample, compares Encoder.Chunk with
// chunkenc's bytes (and that Chunk did not grow the buffer, and Len is its
// length), with Grow called between some samples; then freezes a copy and
// compares again.
func checkOpen(t *testing.T, ts []int64, vs []float64) {
	t.Helper()
	ts, vs = ts[:min(len(ts), MaxSamples)], vs[:min(len(vs), MaxSamples)]
	c := chunkenc.NewXORChunk()
	app, _ := c.Appender()
	var e Encoder
	dst := make([]byte, 0, 3) // small: Chunk often has to copy
	e.Start(dst)
	var got []byte
	for i := range ts {
		app.Append(0, ts[i], vs[i])
		e.Append(ts[i], vs[i])
		if e.LastT() != ts[i] {
			t.Fatalf("LastT %d after appending %d", e.LastT(), ts[i])
		}
		capBefore := e.Cap()
		if got = e.Chunk(); !bytes.Equal(got, c.Bytes()) || e.NumSamples() != i+1 || e.Cap() != capBefore {
			t.Fatalf("open chunk after %d samples (NumSamples %d, Cap %d before Chunk, %d after):\n got  %x\n want %x",
				i+1, e.NumSamples(), capBefore, e.Cap(), got, c.Bytes())
		}
		if e.Len() != len(got) {
			t.Fatalf("Len %d after %d samples, the chunk is %d bytes", e.Len(), i+1, len(got))
		}
		if i%7 == 3 { // room reserved between samples changes no byte
			e.Grow(i)
			if e.Cap() < e.Len()+i-8 {
				t.Fatalf("Grow(%d) at Len %d left Cap %d", i, e.Len(), e.Cap())
			}
		}
	}
	if len(ts) == 0 {
		got = e.Chunk()
	}
	if fin := e.Finish(dst); !bytes.Equal(fin, c.Bytes()) {
		t.Fatalf("finished after Chunk:\n got  %x\n want %x", fin, c.Bytes())
	}
	var f Encoder
	f.Freeze(bytes.Clone(got), 1234)
	if !bytes.Equal(f.Chunk(), c.Bytes()) || f.NumSamples() != len(ts) || f.LastT() != 1234 {
		t.Fatalf("frozen: %x (%d samples, LastT %d), want %x (%d, 1234)", f.Chunk(), f.NumSamples(), f.LastT(), c.Bytes(), len(ts))
	}
}

func check(t *testing.T, ts []int64, vs []float64, perChunk int) {
	t.Helper()
	want, got := reference(ts, vs, perChunk), encode(ts, vs, perChunk)
	if len(got) != len(want) {
		t.Fatalf("%d chunks, chunkenc cut %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("chunk %d of %d samples:\n got  %x\n want %x", i, len(ts), got[i], want[i])
		}
	}
	// What chunkenc reads back is what went in, bit for bit.
	k := 0
	for _, b := range got {
		c, err := chunkenc.FromData(chunkenc.EncXOR, b)
		if err != nil {
			t.Fatal(err)
		}
		it := c.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			at, av := it.At()
			if at != ts[k] || math.Float64bits(av) != math.Float64bits(vs[k]) {
				t.Fatalf("sample %d reads back (%d, %x), want (%d, %x)", k, at, math.Float64bits(av), ts[k], math.Float64bits(vs[k]))
			}
			k++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	if k != len(ts) {
		t.Fatalf("read back %d samples, want %d", k, len(ts))
	}
}

// Values whose bits must survive, and timestamp steps that hit every delta
// of delta bucket edge (chunkenc's bitRange is asymmetric).
var (
	special = []float64{
		math.Float64frombits(0x7ff0000000000002), // Prometheus stale marker
		math.Float64frombits(0x7ff8000000000001), // NaN with a payload
		math.Float64frombits(0xfff8000000000000), // negative NaN
		math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1),
		math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.1, 1e300,
	}
	edges = []int64{0, 1, -1, 8191, 8192, 8193, -8191, -8192, 65535, 65536, 65537, -65535, -65536,
		524287, 524288, 524289, -524287, -524288, math.MaxInt64, math.MinInt64, math.MaxInt32}
)

func TestEncoderMatchesChunkenc(t *testing.T) {
	for _, c := range matchCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, per := range []int{120, 1, 2, 3, 7} {
				check(t, c.ts, c.vs, per)
			}
			checkOpen(t, c.ts, c.vs)
		})
	}
}

// matchCase is one series both coders are held to chunkenc on.
type matchCase struct {
	name string
	ts   []int64
	vs   []float64
}

// matchCases: the edge cases of the format (one sample, negative and
// decreasing timestamps, every delta-of-delta width edge, every special
// value after every other) and 2880 regular scrapes.
func matchCases() []matchCase {
	cs := []matchCase{
		{"empty", nil, nil},
		{"one", []int64{1234567890123}, []float64{42}},
		{"negative first timestamp", []int64{-5, -4, -2}, []float64{1, 1, 2}},
	}

	// Regular 15 s scrapes with a slowly moving gauge and some jitter: 2880
	// samples, 24 chunks of 120 as Prometheus cuts them.
	var ts []int64
	var vs []float64
	v := 100.0
	for i := range 2880 {
		ts = append(ts, 1_700_000_000_000+int64(i)*15000+int64(i%7)-3)
		v += float64(i%13) * 0.125
		vs = append(vs, v)
	}
	cs = append(cs, matchCase{"scrapes", ts, vs})

	// Every special value after every other, and every delta of delta edge.
	ts, vs = nil, nil
	tt, step := int64(0), int64(0)
	for i, a := range special {
		for _, b := range special {
			ts = append(ts, tt, tt+step)
			vs = append(vs, a, b)
			step += edges[i%len(edges)]
			tt += 2 * step
		}
	}
	cs = append(cs, matchCase{"specials", ts, vs})
	ts, vs = nil, nil
	tt = 1000
	prev := int64(15000)
	for _, d := range edges {
		for range 3 {
			ts = append(ts, tt)
			vs = append(vs, float64(len(ts)))
			prev += d
			tt += prev
		}
	}
	return append(cs, matchCase{"edges", ts, vs},
		matchCase{"equal timestamps", []int64{5, 5, 5, 5}, []float64{1, 2, 2, 1}},
		matchCase{"decreasing timestamps", []int64{10, 9, 1, -100, math.MinInt64, math.MaxInt64}, []float64{1, 2, 3, 4, 5, 6}})
}

// FuzzEncoder: for any timestamps and value bits, Encoder writes exactly
// chunkenc's bytes, with chunks cut at 120 samples (as Prometheus cuts
// them) and at a fuzzed size, and an open chunk (Chunk) is chunkenc's
// after every sample. Each 17-byte record is one sample: a mode
// byte (a small step, a jittered one, or raw timestamp bits; a value from
// the specials, a small change or raw bits), 8 bytes of timestamp material
// and 8 of value material.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	seed := make([]byte, 0, 17*300)
	for i := range 300 {
		seed = append(seed, byte(i*37))
		seed = binary.LittleEndian.AppendUint64(seed, uint64(i*15000))
		seed = binary.LittleEndian.AppendUint64(seed, math.Float64bits(float64(i%9)))
	}
	f.Add(seed, uint8(0))
	f.Add(seed, uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, per uint8) {
		ts, vs := fuzzSamples(data)
		check(t, ts, vs, 120)
		check(t, ts, vs, int(per)+1)
		checkOpen(t, ts, vs)
	})
}

// fuzzSamples turns fuzz bytes into samples, 17 bytes each (FuzzEncoder).
func fuzzSamples(data []byte) ([]int64, []float64) {
	var ts []int64
	var vs []float64
	tt, v := int64(1_700_000_000_000), 0.0
	for ; len(data) >= 17; data = data[17:] {
		mode := data[0]
		tb := binary.LittleEndian.Uint64(data[1:])
		vb := binary.LittleEndian.Uint64(data[9:])
		switch mode & 3 {
		case 0:
			tt += 15000
		case 1:
			tt += int64(int16(tb))
		case 2:
			tt += int64(tb)
		case 3:
			tt = int64(tb)
		}
		switch (mode >> 2) & 3 {
		case 0:
			v = special[int(vb%uint64(len(special)))]
		case 1:
			v += float64(int8(vb))
		case 2, 3:
			v = math.Float64frombits(vb)
		}
		ts = append(ts, tt)
		vs = append(vs, v)
	}
	return ts, vs
}

// Finish appends the chunk to the buffer given to Start, keeping its
// bytes: in place while the chunk fits that buffer's spare capacity (the
// same array), copied after them when it outgrew it.
func TestFinishAppendsToStartBuffer(t *testing.T) {
	c := chunkenc.NewXORChunk()
	app, _ := c.Appender()
	for i := range 50 {
		app.Append(0, int64(i)*15000, float64(i*i))
	}
	want := append([]byte("prefix"), c.Bytes()...)
	for _, spare := range []int{0, 3, len(c.Bytes()) - 1, len(c.Bytes()), 4096} {
		dst := append(make([]byte, 0, len("prefix")+spare), "prefix"...)
		var e Encoder
		e.Start(dst)
		for i := range 50 {
			e.Append(int64(i)*15000, float64(i*i))
		}
		got := e.Finish(dst)
		if !bytes.Equal(got, want) {
			t.Fatalf("spare %d: got %x, want %x", spare, got, want)
		}
		inPlace := &got[0] == &dst[:1][0]
		if fits := spare >= len(c.Bytes()); inPlace != fits {
			t.Fatalf("spare %d for a %d-byte chunk: in dst's array %v, want %v", spare, len(c.Bytes()), inPlace, fits)
		}
	}
}
