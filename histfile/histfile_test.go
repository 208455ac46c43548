package histfile_test

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

func TestCasesValid(t *testing.T) {
	for _, c := range histtest.Cases(1000) {
		for i, s := range c.Samples {
			var err error
			if s.FH != nil {
				err = s.FH.Validate()
			} else {
				err = s.H.Validate()
			}
			if err != nil {
				t.Errorf("%s[%d]: %v", c.Name, i, err)
			}
		}
	}
}

// sameSample compares every field, floats by bits, through reflect on
// copies whose floats were replaced by their bits.
func sameSample(t *testing.T, what string, want, got histfile.Sample) {
	t.Helper()
	// Records and files must agree to the bit; reflect.DeepEqual treats NaN
	// as unequal, so compare the record encodings of both, then the fields.
	wb, gb := histfile.AppendRecord(nil, want), histfile.AppendRecord(nil, got)
	if string(wb) != string(gb) {
		t.Fatalf("%s: got %+v %+v, want %+v %+v", what, got.H, got.FH, want.H, want.FH)
	}
	if want.T != got.T || want.IsFloat() != got.IsFloat() {
		t.Fatalf("%s: t/kind differ", what)
	}
	if !math.IsNaN(want.Sum()) && !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: got %+v %+v, want %+v %+v", what, got.H, got.FH, want.H, want.FH)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, c := range histtest.Cases(-5000) {
		var buf []byte
		for _, s := range c.Samples {
			buf = histfile.AppendRecord(buf, s)
		}
		for i, want := range c.Samples {
			got, rest, err := histfile.DecodeRecord(buf)
			if err != nil {
				t.Fatalf("%s[%d]: %v", c.Name, i, err)
			}
			buf = rest
			sameSample(t, c.Name, want, got)
		}
		if len(buf) != 0 {
			t.Fatalf("%s: %d trailing bytes", c.Name, len(buf))
		}
	}
}

func TestRecordCorrupt(t *testing.T) {
	c := histtest.Cases(0)[0]
	rec := histfile.AppendRecord(nil, c.Samples[1])
	for n := 0; n < len(rec); n++ {
		if _, _, err := histfile.DecodeRecord(rec[:n]); err == nil {
			t.Fatalf("record cut to %d of %d bytes decoded", n, len(rec))
		}
	}
}

// TestFileRoundTrip writes every case to a real Acta file, reads it back,
// and checks the file validates.
func TestFileRoundTrip(t *testing.T) {
	for _, c := range histtest.Cases(1_700_000_000_000) {
		path := filepath.Join(t.TempDir(), c.Name+".acta")
		w, err := acta.Create(path, histfile.Schema(), acta.WriterOptions{Codec: acta.CodecZstd, Encoding: acta.EncodingAdaptive})
		if err != nil {
			t.Fatal(err)
		}
		// Two blocks: the split must not matter.
		half := len(c.Samples) / 2
		for _, part := range [][]histfile.Sample{c.Samples[:half], c.Samples[half:]} {
			if err := w.Append(histfile.Batch(part)); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := acta.Validate(path, acta.ValidateFull); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		r, err := acta.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []histfile.Sample
		for i := range r.Blocks() {
			b, err := r.ReadBlock(i)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = histfile.Decode(got, b); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		}
		r.Close()
		if len(got) != len(c.Samples) {
			t.Fatalf("%s: %d samples back, want %d", c.Name, len(got), len(c.Samples))
		}
		for i := range got {
			sameSample(t, c.Name, c.Samples[i], got[i])
		}
	}
}
