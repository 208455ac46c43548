package histfile_test

import (
	"testing"

	"github.com/acta-remote/acta-remote/histfile"
	"github.com/acta-remote/acta-remote/histfile/histtest"
)

// FuzzDecodeRecord: arbitrary bytes never panic, and what decodes encodes
// back to the bytes it consumed.
func FuzzDecodeRecord(f *testing.F) {
	for _, c := range histtest.Cases(0) {
		for _, s := range c.Samples {
			f.Add(histfile.AppendRecord(nil, s))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := histfile.DecodeRecord(b)
		if err != nil {
			return
		}
		used := b[:len(b)-len(rest)]
		if again := histfile.AppendRecord(nil, s); string(again) != string(used) {
			// Non-minimal varints decode but re-encode shorter; accept only
			// a shorter re-encoding that decodes to the same record.
			s2, _, err := histfile.DecodeRecord(again)
			if err != nil || string(histfile.AppendRecord(nil, s2)) != string(again) {
				t.Fatalf("record %x decoded, re-encoded %x does not round-trip", used, again)
			}
		}
	})
}
