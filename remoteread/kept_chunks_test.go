package remoteread

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// Streamed answers built from the XOR chunks the store keeps for its files
// (actastore.WithXORChunks) are, bit for bit, the samples stored (NaN
// payloads and stale markers included): on the read that builds them, on
// reads that reuse them, with ranges cutting chunks, with samples in the
// head after the files, after a flush appends to a file and after
// compaction rewrites it, with frames cut by a small budget.
func TestStreamedKeptChunks(t *testing.T) {
	st, err := actastore.Open(t.TempDir(), actastore.Options{BlockRows: 64, MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rl := readLimits
	rl.MaxBytesPerFrame = 2048
	wurl, rurl := server(t, st, rl)
	rng := rand.New(rand.NewSource(3))
	const t0 = 1_700_000_000_000
	var sets []labels.Labels
	data := want{}
	for i := range 8 {
		ls := labels.FromStrings("__name__", "kc", "i", fmt.Sprint(i))
		sets = append(sets, ls)
		data[ls.String()] = genSamples(rng, []int{1, 119, 120, 121, 500, 1000, 2000, 37}[i], t0)
	}
	writeBoth(t, wurl, data, sets)
	if err := st.FlushAll(); err != nil {
		t.Fatal(err)
	}
	first := data[sets[6].String()]
	ranges := [][2]int64{{0, 1 << 62}, {first[130].T, first[1777].T}, {first[5].T + 1, first[6].T - 1}, {first[1999].T, first[1999].T}}
	check := func(phase string) {
		t.Helper()
		for _, r := range ranges {
			got := readAll(t, rurl, testkit.ReadRequest([]prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
				q(r[0], r[1], m(prompb.LabelMatcher_EQ, "__name__", "kc"))), true)
			var g want
			if len(got) > 0 {
				g = got[0]
			} else {
				g = want{}
			}
			sameBits(t, fmt.Sprintf("%s [%d, %d]", phase, r[0], r[1]), g, filter(data, sets, r[0], r[1]))
		}
	}
	check("building chunks")
	check("kept chunks")
	// Samples in the head after the files' chunks.
	more := want{}
	for _, ls := range sets {
		ss := data[ls.String()]
		next := genSamples(rng, 50, ss[len(ss)-1].T+15000)
		more[ls.String()] = next
		data[ls.String()] = append(ss, next...)
	}
	writeBoth(t, wurl, more, sets)
	check("kept chunks and head")
	if err := st.FlushAll(); err != nil { // appends to the files
		t.Fatal(err)
	}
	check("after a flush")
	check("after a flush, kept again")
	if _, err := st.Maintain(); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	check("after compaction, kept again")
}
