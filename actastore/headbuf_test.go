package actastore

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// Values whose bits a compressed head must keep: NaN payloads, the stale
// marker, infinities, both zeros, the extremes and a subnormal.
var headSpecials = []uint64{
	0x7ff0000000000002, // Prometheus stale marker
	0x7ff8000000000001, // Prometheus NormalNaN
	0xfff8000000000000, // negative quiet NaN
	0x7ff4000000000000, // signalling NaN
	0x7fffffffffffffff, // NaN, every payload bit
	0x7ff0000000000000, // +Inf
	0xfff0000000000000, // -Inf
	0x8000000000000000, // -0
	0,                  // +0
	0x7fefffffffffffff, // MaxFloat64
	0x0000000000000001, // smallest subnormal
	0xc00921fb54442d18, // -pi
}

// headModel checks a headBuf against a sorted reference of its samples.
func checkHeadModel(t *testing.T, what string, h *headBuf[Sample], ref []Sample, accounted int64) {
	t.Helper()
	if got := h.all(floats, nil); !equalBits(got, ref) {
		t.Fatalf("%s: head holds %d samples %v..., want %d %v...", what, len(got), head3(got), len(ref), head3(ref))
	}
	if h.len() != len(ref) {
		t.Fatalf("%s: len %d, want %d", what, h.len(), len(ref))
	}
	if b := h.bytes(floats); b != accounted {
		t.Fatalf("%s: head costs %d bytes, the deltas add up to %d", what, b, accounted)
	}
	if len(ref) == 0 {
		if _, _, ok := h.bounds(floats); ok || h.maxT(floats) != noTime {
			t.Fatalf("%s: an empty head has bounds", what)
		}
		return
	}
	lo, hi, ok := h.bounds(floats)
	if !ok || lo != ref[0].T || hi != ref[len(ref)-1].T || h.maxT(floats) != hi {
		t.Fatalf("%s: bounds %d %d %v maxT %d, want %d %d", what, lo, hi, ok, h.maxT(floats), ref[0].T, ref[len(ref)-1].T)
	}
}

// A float head under a random mix of in-order appends, out-of-order
// inserts (past the side slice's merge size), resends and deletions holds
// exactly the reference: every read in order, bit for bit, and its byte
// deltas add up to what it costs.
func TestHeadBufMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 3))
	var h headBuf[Sample]
	var ref []Sample
	var accounted int64
	next := int64(1_700_000_000_000)
	value := func() float64 {
		if r.IntN(5) == 0 {
			return math.Float64frombits(headSpecials[r.IntN(len(headSpecials))])
		}
		return float64(r.IntN(1000)) / 8
	}
	insertRef := func(s Sample) bool {
		i, found := slices.BinarySearchFunc(ref, s.T, func(a Sample, t int64) int { return cmpInt64(a.T, t) })
		if found {
			return false
		}
		ref = slices.Insert(ref, i, s)
		return true
	}
	sides := 0
	for step := 0; step < 5000; step++ {
		switch op := r.IntN(100); {
		case op < 70: // in order, a scrape later
			next += 15000 + r.Int64N(3) - 1
			s := Sample{T: next, V: value()}
			added, b := h.add(floats, s)
			if !added || !insertRef(s) {
				t.Fatalf("step %d: in-order sample %v not added", step, s)
			}
			accounted += b
		case op < 92: // out of order: an older timestamp
			s := Sample{T: next - r.Int64N(200*15000) - 1, V: value()}
			want := insertRef(s)
			if !want {
				// The stored one stays, whatever the value.
				s.V = 12345
			}
			added, b := h.add(floats, s)
			if added != want {
				t.Fatalf("step %d: out-of-order %v added %v, want %v", step, s, added, want)
			}
			if len(h.side()) > 0 {
				sides++
			}
			accounted += b
		case op < 97: // a resend of a stored sample
			if len(ref) == 0 {
				continue
			}
			s := ref[r.IntN(len(ref))]
			got, ok := h.find(floats, s.T)
			if !ok || math.Float64bits(got.V) != math.Float64bits(s.V) {
				t.Fatalf("step %d: find %d = %v %v, want %v", step, s.T, got, ok, s)
			}
			if added, b := h.add(floats, s); added || b != 0 {
				t.Fatalf("step %d: resend %v added", step, s)
			}
		case op < 99: // a range read
			if len(ref) == 0 {
				continue
			}
			a, b := ref[r.IntN(len(ref))].T, ref[r.IntN(len(ref))].T+r.Int64N(3)-1
			var exp []Sample
			for _, s := range ref {
				if s.T >= a && s.T <= b {
					exp = append(exp, s)
				}
			}
			if got := h.inRange(floats, []Sample{{T: -1}}, a, b); !equalBits(got[1:], exp) || got[0].T != -1 {
				t.Fatalf("step %d: range [%d, %d]: %d samples, want %d", step, a, b, len(got)-1, len(exp))
			}
		default: // a deletion
			if len(ref) == 0 {
				continue
			}
			a := ref[r.IntN(len(ref))].T
			b := a + r.Int64N(10*15000)
			del := func(s Sample) bool { return s.T >= a && s.T <= b }
			n := len(ref)
			ref = slices.DeleteFunc(ref, del)
			dn, db := h.deleteFunc(floats, del)
			if dn != n-len(ref) {
				t.Fatalf("step %d: deleted %d, want %d", step, dn, n-len(ref))
			}
			accounted += db
		}
		if step%97 == 0 {
			checkHeadModel(t, "random", &h, ref, accounted)
		}
	}
	checkHeadModel(t, "random", &h, ref, accounted)
	if sides == 0 || h.p.n() == 0 {
		t.Fatalf("the test never used both parts of the head (side samples seen %d times)", sides)
	}
	got := h.take(floats)
	if !equalBits(got, ref) {
		t.Fatalf("take: %d samples, want %d", len(got), len(ref))
	}
	checkHeadModel(t, "after take", &h, nil, 0)
}

// A head holding more samples than a chunk can count keeps the rest
// uncompressed, in order.
func TestHeadBufBeyondChunkCapacity(t *testing.T) {
	var h headBuf[Sample]
	var ref []Sample
	var accounted int64
	for i := range xorHeadMaxSamples + 300 {
		s := Sample{T: int64(i) * 1000, V: float64(i % 17)}
		_, b := h.add(floats, s)
		accounted += b
		ref = append(ref, s)
	}
	if h.p.n() != xorHeadMaxSamples || len(h.side()) != 300 {
		t.Fatalf("chunk holds %d, side %d", h.p.n(), len(h.side()))
	}
	// An older sample still goes in its place.
	s := Sample{T: 500, V: -1}
	_, b := h.add(floats, s)
	accounted += b
	ref = slices.Insert(ref, 1, s)
	checkHeadModel(t, "full chunk", &h, ref, accounted)
}

// Float samples with every special bit pattern come back from a
// compressed head through Select bit for bit, in order with out-of-order
// ones between them; and the same after a restart that replays them from
// the WAL into the same chunk and side samples, after the next sample, and
// after a flush.
func TestHeadCompressedBitExactThroughSelect(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Logger: quiet})
	ls := labels.FromStrings("__name__", "special")
	w := want{}
	var all []Sample
	t0 := int64(1_700_000_000_000)
	// Plain values first: the chunk holds more than the specials.
	const nPlain = 8
	var plain []Sample
	for i := range nPlain {
		plain = append(plain, Sample{T: t0 - int64(nPlain-i)*15000, V: float64(i)})
	}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: plain}})
	for i, bits := range headSpecials {
		all = append(all, Sample{T: t0 + int64(i)*15000, V: math.Float64frombits(bits)})
	}
	// In order first, the odd ones after them out of order, one a request.
	for i := 0; i < len(all); i += 2 {
		mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{all[i]}}})
	}
	for i := 1; i < len(all); i += 2 {
		mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{all[i]}}})
	}
	w.add(ls, plain...)
	w.add(ls, all...)
	ms := seriesOf(s, ls)
	ms.mu.Lock()
	chunked, side := ms.floats.head.p.n(), len(ms.floats.head.side())
	ms.mu.Unlock()
	if chunked != len(plain)+len(all)/2+1 || side != len(all)/2-1 { // the last is the newest
		t.Fatalf("head holds %d compressed and %d side samples", chunked, side)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	// A range read starting and ending between samples.
	part := want{}
	part.add(ls, all[3:8]...)
	checkWant(t, selectAll(t, s, all[2].T+1, all[8].T-1), part)
	s.abandon() // as kill -9: the head is only in the WAL

	s = openT(t, dir, Options{Logger: quiet})
	// The replay encodes the samples as the commits did (replaySamples).
	ms = seriesOf(s, ls)
	ms.mu.Lock()
	chunked, side = ms.floats.head.p.n(), len(ms.floats.head.side())
	ms.mu.Unlock()
	if chunked != len(plain)+len(all)/2+1 || side != len(all)/2-1 {
		t.Fatalf("replayed head holds %d compressed and %d side samples", chunked, side)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	late := Sample{T: all[len(all)-1].T + 15000, V: staleNaN}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{late}}})
	w.add(ls, late)
	ms.mu.Lock()
	chunked, side = ms.floats.head.p.n(), len(ms.floats.head.side())
	bytes := ms.floats.head.bytes(floats)
	ms.mu.Unlock()
	if chunked != len(plain)+len(all)/2+2 || side != len(all)/2-1 {
		t.Fatalf("after a live sample the head holds %d compressed and %d side samples", chunked, side)
	}
	if st := s.Stats(); st.HeadBytes != bytes {
		t.Fatalf("head accounts %d bytes, holds %d", st.HeadBytes, bytes)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.HeadSamples != 0 || st.HeadBytes != 0 {
		t.Fatalf("after the flush the head holds %d samples, %d bytes", st.HeadSamples, st.HeadBytes)
	}
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
	s.Close()
}

// Resends into a compressed head — of samples in its chunk and of
// out-of-order ones beside it — are dropped as duplicates (counted as
// written, nothing added); another value at a stored timestamp is
// ErrDuplicateSample, down to NaN payloads and the sign of zero.
func TestHeadCompressedDuplicates(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Logger: quiet})
	defer s.Close()
	ls := labels.FromStrings("__name__", "dup")
	t0 := int64(1_700_000_000_000)
	stored := []Sample{
		{T: t0, V: 1.5},
		{T: t0 + 30000, V: staleNaN},
		{T: t0 + 60000, V: math.Copysign(0, -1)},
		{T: t0 + 90000, V: math.Inf(1)},
	}
	mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: stored}})
	ooo := []Sample{{T: t0 + 15000, V: math.Float64frombits(0x7ff8000000000001)}, {T: t0 + 45000, V: 0}}
	for _, smp := range ooo {
		mustAppend(t, s, []SeriesSamples{{Labels: ls, Samples: []Sample{smp}}})
	}
	all := append(slices.Clone(stored), ooo...)
	slices.SortFunc(all, func(a, b Sample) int { return cmpInt64(a.T, b.T) })
	other := map[int64]float64{
		t0:         1.5000000000000002,
		t0 + 15000: staleNaN, // another NaN than the stored one
		t0 + 30000: math.Float64frombits(0x7ff8000000000001),
		t0 + 45000: math.Copysign(0, -1),
		t0 + 60000: 0,
		t0 + 90000: math.Inf(-1),
	}
	st0 := s.Stats()
	for _, smp := range all {
		res, err := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{smp}}})
		if err != nil || res.SamplesWritten != 1 || res.SamplesRejected != 0 {
			t.Fatalf("resend of %v: %+v %v", smp, res, err)
		}
		res, err = s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: []Sample{{T: smp.T, V: other[smp.T]}}}})
		if err != nil || res.SamplesRejected != 1 || !errors.Is(res.Errors[0], ErrDuplicateSample) {
			t.Fatalf("conflict at %d: %+v %v", smp.T, res, err)
		}
	}
	// The whole batch resent at once, in order, takes the same path.
	res, err := s.Append(ctx, []SeriesSamples{{Labels: ls, Samples: all}})
	if err != nil || res.SamplesWritten != len(all) || res.SamplesRejected != 0 {
		t.Fatalf("resend of the batch: %+v %v", res, err)
	}
	if st := s.Stats(); st.HeadSamples != st0.HeadSamples || st.HeadBytes != st0.HeadBytes {
		t.Fatalf("resends changed the head: %d samples %d bytes, were %d %d", st.HeadSamples, st.HeadBytes, st0.HeadSamples, st0.HeadBytes)
	}
	w := want{}
	w.add(ls, all...)
	checkWant(t, selectAll(t, s, math.MinInt64, math.MaxInt64), w)
}

// The head's accounting is what the compressed heads cost: the sum over
// series after appends, out-of-order inserts and a deletion, nothing after
// a flush; and ten regular samples cost less than two thirds of the 320
// bytes an uncompressed head accounted (about 200: 128 for the chunk's
// parts, its stream of 48 or 96).
func TestHeadCompressedAccounting(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Logger: quiet})
	defer s.Close()
	const n = 200
	t0 := int64(1_700_000_000_000)
	for step := range 10 {
		batch := make([]SeriesSamples, n)
		for i := range batch {
			batch[i] = SeriesSamples{Labels: seriesLabels(i), Samples: []Sample{{T: t0 + int64(step)*15000, V: realisticValue(i, step)}}}
		}
		mustAppend(t, s, batch)
	}
	sum := func() int64 {
		var b int64
		for i := range n {
			ms := seriesOf(s, seriesLabels(i))
			ms.mu.Lock()
			b += ms.floats.head.bytes(floats)
			ms.mu.Unlock()
		}
		return b
	}
	if got, want := s.Stats().HeadBytes, sum(); got != want || got == 0 {
		t.Fatalf("head accounts %d bytes, its heads cost %d", got, want)
	}
	if per := s.Stats().HeadBytes / n; per >= 320*2/3 {
		t.Fatalf("ten samples cost %d head bytes a series", per)
	}
	for i := range n {
		mustAppend(t, s, []SeriesSamples{{Labels: seriesLabels(i), Samples: []Sample{{T: t0 + 7, V: 7}}}})
	}
	if _, err := s.DeleteSeries(ctx, t0+15000, t0+45000, labels.MustNewMatcher(labels.MatchEqual, "job", "j1")); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats().HeadBytes, sum(); got != want {
		t.Fatalf("after out-of-order samples and a deletion the head accounts %d bytes, its heads cost %d", got, want)
	}
	if err := s.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.HeadBytes != 0 || st.HeadSamples != 0 {
		t.Fatalf("after a flush the head accounts %d bytes, %d samples", st.HeadBytes, st.HeadSamples)
	}
}

// A float head's chunk starts with its first sample, and the head has no
// side part (headSide) until a sample arrives out of order; a rebuild that
// leaves nothing beside the chunk drops it again.
func TestHeadBufChunkFromFirstSample(t *testing.T) {
	var h headBuf[Sample]
	var ref []Sample
	var accounted int64
	for i := range 8 {
		s := Sample{T: int64(10+i) * 1000, V: math.Float64frombits(headSpecials[i%len(headSpecials)])}
		_, b := h.add(floats, s)
		accounted += b
		ref = append(ref, s)
		if i == 0 && b != xorHeadFixed+xorHeadInitCap {
			t.Fatalf("the first sample costs %d bytes, want the chunk's %d", b, xorHeadFixed+xorHeadInitCap)
		}
		if h.p.n() != i+1 || h.sidePart != nil {
			t.Fatalf("after %d in order: %d compressed, side part %v", i+1, h.p.n(), h.sidePart)
		}
	}
	checkHeadModel(t, "in order", &h, ref, accounted)
	old := Sample{T: 1000, V: staleNaN}
	_, b := h.add(floats, old)
	accounted += b
	ref = slices.Insert(ref, 0, old)
	if h.p.n() != 8 || len(h.side()) != 1 {
		t.Fatalf("after an older sample: %d compressed, %d side", h.p.n(), len(h.side()))
	}
	checkHeadModel(t, "out of order", &h, ref, accounted)
	n, b := h.deleteFunc(floats, func(s Sample) bool { return s.T == old.T })
	accounted += b
	ref = ref[1:]
	if n != 1 || h.p.n() != 8 || h.sidePart != nil {
		t.Fatalf("after deleting it: %d deleted, %d compressed, side part %v", n, h.p.n(), h.sidePart)
	}
	checkHeadModel(t, "rebuilt", &h, ref, accounted)
}

// xorHeadFixed counts a compressed head's headParts (with the encoder in
// it) as one 64-byte allocation, a size class of Go's allocator: the
// struct is exactly that, so the head's byte accounting is what the
// allocator hands out.
func TestHeadPartsSize(t *testing.T) {
	if got := unsafe.Sizeof(headParts[Sample]{}); got != xorHeadFixed {
		t.Fatalf("headParts is %d bytes, xorHeadFixed counts %d", got, xorHeadFixed)
	}
}
