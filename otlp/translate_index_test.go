package otlp

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestAppendSampleHashCollision forces two label sets onto one hash slot:
// each must still get its own series, and later samples must find theirs.
func TestAppendSampleHashCollision(t *testing.T) {
	tr := NewTranslator(DefaultConfig())
	tr.out = &Translation{}
	a := labels.FromStrings("__name__", "a")
	b := labels.FromStrings("__name__", "b")
	tr.appendSample(a, 1, 0, 1)
	tr.index[b.Hash()] = 0 // pretend b hashes like a
	tr.appendSample(b, 1, 0, 2)
	tr.appendSample(b, 2, 0, 3)
	tr.appendSample(a, 2, 0, 4)
	diffLines(t, "series", formatSeries(tr.out.Series), []string{
		`{__name__="a"} 1 1`,
		`{__name__="a"} 2 4`,
		`{__name__="b"} 1 2`,
		`{__name__="b"} 2 3`,
	})
	if tr.out.Samples != 4 {
		t.Fatalf("Samples = %d, want 4", tr.out.Samples)
	}
}
