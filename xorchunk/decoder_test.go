package xorchunk

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// sample is one decoded sample, its value as bits so NaN payloads compare.
type sample struct {
	t int64
	v uint64
}

// viaChunkenc decodes chunk with chunkenc's iterator.
func viaChunkenc(chunk []byte) ([]sample, error) {
	c, err := chunkenc.FromData(chunkenc.EncXOR, chunk)
	if err != nil {
		return nil, err
	}
	var out []sample
	it := c.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		out = append(out, sample{t, math.Float64bits(v)})
	}
	return out, it.Err()
}

// viaDecoder decodes chunk with Decoder.
func viaDecoder(chunk []byte) ([]sample, error) {
	var d Decoder
	d.Reset(chunk)
	var out []sample
	for d.Next() {
		t, v := d.At()
		out = append(out, sample{t, math.Float64bits(v)})
	}
	return out, d.Err()
}

// checkDecode holds Decoder to chunkenc on every chunk chunkenc writes for
// the samples, cut every perChunk: the same samples, bit for bit, and no
// error from either.
func checkDecode(t *testing.T, ts []int64, vs []float64, perChunk int) {
	t.Helper()
	for i, chunk := range reference(ts, vs, perChunk) {
		want, werr := viaChunkenc(chunk)
		got, gerr := viaDecoder(chunk)
		if werr != nil || gerr != nil {
			t.Fatalf("chunk %d (per %d): chunkenc error %v, Decoder error %v", i, perChunk, werr, gerr)
		}
		if len(got) != len(want) {
			t.Fatalf("chunk %d (per %d): %d samples, chunkenc %d", i, perChunk, len(got), len(want))
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("chunk %d (per %d) sample %d: %d %#x, chunkenc %d %#x", i, perChunk, j, got[j].t, got[j].v, want[j].t, want[j].v)
			}
		}
	}
}

func TestDecoderMatchesChunkenc(t *testing.T) {
	cases := matchCases()
	for _, kind := range []string{"counter", "gauge", "constant"} {
		ts, vs := benchSamples(kind)
		cases = append(cases, matchCase{kind, ts, vs})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, per := range []int{120, 1, 2, 3, 7, MaxSamples} {
				checkDecode(t, c.ts, c.vs, per)
			}
		})
	}
}

// A header counting more samples than the stream holds stops Next with
// ErrTruncated after the samples that are there, as does a chunk shorter
// than its header; neither reads outside the chunk.
func TestDecoderTruncated(t *testing.T) {
	ts, vs := benchSamples("gauge")
	chunk := reference(ts[:100], vs[:100], 120)[0]
	want, _ := viaChunkenc(chunk)
	for _, cut := range []int{0, 1, 2, 5, 11, 12, len(chunk) / 2, len(chunk) - 1} {
		short := append([]byte(nil), chunk[:cut]...)
		got, err := viaDecoder(short)
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: %d samples and no error", cut, len(chunk), len(got))
		}
		if len(got) >= len(want) {
			t.Fatalf("cut at %d: %d samples, the whole chunk has %d", cut, len(got), len(want))
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("cut at %d, sample %d: %v, want %v", cut, j, got[j], want[j])
			}
		}
	}
}

// FuzzDecoder: for any samples (fuzzSamples), Decoder reads every chunk
// chunkenc writes of them exactly as chunkenc's iterator does; and on any
// bytes at all it neither panics nor gives a sample chunkenc would not
// give at that place: its samples are a prefix of chunkenc's, all of them
// when it reports no error.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{}, uint8(0), false)
	seed := make([]byte, 0, 17*300)
	for i := range 300 {
		seed = append(seed, byte(i*37))
		seed = binary.LittleEndian.AppendUint64(seed, uint64(i*15000))
		seed = binary.LittleEndian.AppendUint64(seed, math.Float64bits(float64(i%9)))
	}
	f.Add(seed, uint8(0), false)
	f.Add(seed, uint8(7), false)
	ts, vs := benchSamples("gauge")
	f.Add(reference(ts[:50], vs[:50], 120)[0], uint8(0), true)
	f.Fuzz(func(t *testing.T, data []byte, per uint8, raw bool) {
		if !raw {
			ts, vs := fuzzSamples(data)
			checkDecode(t, ts, vs, 120)
			checkDecode(t, ts, vs, int(per)+1)
			return
		}
		got, gerr := viaDecoder(data)
		if len(data) < headerSize {
			if gerr == nil || len(got) > 0 {
				t.Fatalf("%d bytes: %d samples, error %v", len(data), len(got), gerr)
			}
			return
		}
		if n := int(binary.BigEndian.Uint16(data)); len(got) > n {
			t.Fatalf("%d samples, the header counts %d", len(got), n)
		}
		want, werr := viaChunkenc(data)
		if len(got) > len(want) {
			t.Fatalf("%d samples, chunkenc %d", len(got), len(want))
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("sample %d: %v, chunkenc %v", j, got[j], want[j])
			}
		}
		if gerr == nil && (werr != nil || len(got) != len(want)) {
			t.Fatalf("no error with %d samples; chunkenc %d samples, error %v", len(got), len(want), werr)
		}
	})
}
