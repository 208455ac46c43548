package encoding

import (
	"fmt"
)

// Adaptive selection, spec §12: profile once, estimate every cheap
// candidate, materialize and compress raw plus the two best estimates, and
// keep a specialized encoding only if it beats raw by max(64 B, 1%) of raw's
// stored cost. Everything depends only on the values, so equal blocks give
// equal bytes.

// margin is the §12 threshold a specialized encoding must beat raw by.
func margin(rawCost int) int { return max(64, (rawCost+99)/100) }

// estCost prices a candidate's value streams as stored: descriptors,
// padding and, under zstd, a small frame overhead (the real compressed size
// is measured only for the shortlist).
func (e *Encoder) estCost(col column, c choice) int {
	lens, n := e.estimate(col, c)
	cost := 0
	for _, l := range lens[:n] {
		if e.zstd != nil {
			l += 16
		}
		cost += streamDescriptorSize + pad8(l)
	}
	return cost
}

// dictBound is what a dictionary's estimate must not exceed to matter: it
// must make the two-entry shortlist, so beat the second-best other
// specialized estimate; and, where estimates are exact (no codec), beat raw
// by the margin. Stopping the distinct-value table past this bound changes
// no outcome, only skips work.
func (e *Encoder) dictBound(col column) int {
	bound := int(^uint(0) >> 1)
	if e.opts.Policy != PolicyAdaptive || e.noDictBound {
		return bound
	}
	first, second := bound, bound
	for ch := chRaw + 1; ch < numChoices; ch++ {
		if ch == chDictionary || !offered(col.class, ch) || !e.prof.applies(ch) {
			continue
		}
		c := e.estCost(col, ch)
		if c < first {
			first, second = c, first
		} else if c < second {
			second = c
		}
	}
	bound = second
	if e.zstd == nil {
		raw := e.estCost(col, chRaw)
		bound = min(bound, raw-margin(raw))
	}
	return bound
}

func (e *Encoder) adaptive(col column) (*candidate, error) {
	e.profileColumn(col)
	vt := e.planValidity(col)

	type est struct {
		cost int
		ch   choice
	}
	var ests [numChoices]est
	k := 0
	for ch := chRaw + 1; ch < numChoices; ch++ {
		if offered(col.class, ch) && e.prof.applies(ch) {
			ests[k] = est{e.estCost(col, ch), ch}
			k++
		}
	}
	list := ests[:k]
	// Insertion sort by (cost, choice): at most ten entries, no allocation,
	// and a total order, so ties resolve the same way every time.
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && (list[j].cost < list[j-1].cost || list[j].cost == list[j-1].cost && list[j].ch < list[j-1].ch); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}

	raw := &e.cand[0]
	raw.reset(LayoutPlain)
	e.putValidity(raw, col, vt)
	putRaw(raw, col.class, col.vals)
	raw.seal()
	e.compress(raw)
	rawCost := raw.storedCost()
	best, bestCost := raw, rawCost
	for i := 0; i < len(list) && i < 2; i++ {
		ch := list[i].ch
		c := &e.cand[1+i]
		if err := e.build(c, col, vt, ch, false); err != nil {
			return nil, err
		}
		cost := c.storedCost()
		// Under zstd the same candidate is also tried with byte-aligned
		// packed widths; the smaller stored form is the candidate's price.
		if e.zstd != nil && e.packsInts(ch, col.class) {
			alt := &e.cand[3]
			if err := e.build(alt, col, vt, ch, true); err != nil {
				return nil, err
			}
			if altCost := alt.storedCost(); altCost < cost {
				e.cand[1+i], e.cand[3] = e.cand[3], e.cand[1+i]
				cost = altCost
			}
		}
		if cost+margin(rawCost) <= rawCost && cost < bestCost {
			best, bestCost = c, cost
		}
	}
	return best, nil
}

// build materializes, seals and compresses one candidate.
func (e *Encoder) build(c *candidate, col column, vt uint16, ch choice, aligned bool) error {
	c.reset(ch.layout())
	e.putValidity(c, col, vt)
	e.aligned = aligned
	err := e.materialize(c, col, ch)
	e.aligned = false
	if err != nil {
		return err
	}
	c.seal()
	e.compress(c)
	return nil
}

// planValidity picks raw bits or boolean RLE for an explicit validity
// stream; bit packing never wins (its width byte makes it raw plus one).
func (e *Encoder) planValidity(col column) uint16 {
	if col.validity == nil {
		return TransformRaw
	}
	runs, maxRun := bitmapRuns(col.validity, col.rows)
	raw := pad8(bitmapLen(col.rows))
	rle := pad8(4 + bitmapLen(runs) + packedLen(runs, bitWidth(uint64(maxRun))))
	if rle+margin(raw) <= raw {
		return TransformBoolRLE
	}
	return TransformRaw
}

// putValidity adds the validity stream (if any) with transform t.
func (e *Encoder) putValidity(c *candidate, col column, t uint16) {
	if col.validity == nil {
		return
	}
	if t == TransformRaw {
		e.putValidityRaw(c, col)
		return
	}
	start := len(c.buf)
	runs, maxRun := bitmapRuns(col.validity, col.rows)
	c.buf = appendBitmapRLE(c.buf, col.validity, col.rows, runs, maxRun)
	c.add(KindValidity, TransformBoolRLE, col.rows, start)
}

// bitmapRuns counts the runs of equal bits among the first n bits of bm.
func bitmapRuns(bm []byte, n int) (runs, maxRun int) {
	i := 0
	for i < n {
		v := bitAt(bm, i)
		j := i + 1
		for j < n {
			// Skip whole bytes that continue the run.
			if j&7 == 0 && j+8 <= n && (v && bm[j>>3] == 0xff || !v && bm[j>>3] == 0) {
				j += 8
				continue
			}
			if bitAt(bm, j) != v {
				break
			}
			j++
		}
		runs++
		maxRun = max(maxRun, j-i)
		i = j
	}
	return runs, maxRun
}

// appendBitmapRLE appends §9.7 boolean RLE of the first n bits of bm.
func appendBitmapRLE(dst, bm []byte, n, runs, maxRun int) []byte {
	dst = appendU32(dst, uint32(runs))
	vals := len(dst)
	dst = append(dst, make([]byte, bitmapLen(runs))...)
	bw := newBitWriter(dst, bitWidth(uint64(maxRun)))
	k := 0
	i := 0
	for i < n {
		v := bitAt(bm, i)
		j := i + 1
		for j < n && bitAt(bm, j) == v {
			j++
		}
		if v {
			bw.out[vals+k>>3] |= 1 << (uint(k) & 7)
		}
		bw.put(uint64(j - i))
		k++
		i = j
	}
	return bw.finish()
}

func appendU32(dst []byte, v uint32) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// fixedChoice maps the PolicyFixed options to a choice.
func (o Options) fixedChoice() choice {
	switch o.FixedLayout {
	case LayoutConstant:
		return chConstant
	case LayoutDictionary:
		return chDictionary
	case LayoutRunLength:
		return chRunLength
	}
	switch o.Transform {
	case TransformBitPacked:
		return chBitPacked
	case TransformFrameOfRef:
		return chFOR
	case TransformDelta:
		return chDelta
	case TransformDeltaOfDelta:
		return chDoD
	case TransformByteStreamSplit:
		return chBSS
	case TransformBoolRLE:
		return chBoolRLE
	}
	return chRaw
}

var classNames = map[Class]string{ClassBool: "bool", ClassSigned: "signed", ClassUnsigned: "unsigned", ClassFloat: "float", ClassFixed: "fixed_binary", ClassVar: "variable-width"}

// fixed applies the one requested encoding, or fails: the policy measures a
// transform, so it never falls back. Validity stays raw.
func (e *Encoder) fixed(col column) (*candidate, error) {
	ch := e.opts.fixedChoice()
	if !offered(col.class, ch) {
		return nil, fmt.Errorf("encoding: fixed %v is not offered for %s columns", ch, classNames[col.class])
	}
	c := &e.cand[0]
	c.reset(ch.layout())
	e.putValidityRaw(c, col)
	if ch == chRaw {
		putRaw(c, col.class, col.vals)
		c.seal()
		return c, nil
	}
	e.profileColumn(col)
	if !e.prof.applies(ch) {
		return nil, fmt.Errorf("encoding: fixed %v cannot describe these %d values (%s)", ch, col.vals.N, e.prof.why(ch))
	}
	if err := e.materialize(c, col, ch); err != nil {
		return nil, err
	}
	c.seal()
	return c, nil
}

// why explains a candidate that does not apply.
func (p *profile) why(c choice) string {
	switch c {
	case chConstant:
		return fmt.Sprintf("%d runs, not 1", p.runs)
	case chBitPacked:
		return "a value is negative"
	case chDelta:
		return "an adjacent difference leaves int64"
	case chDoD:
		if p.n < 2 {
			return "fewer than 2 values"
		}
		return "a difference of deltas leaves int64"
	case chDictionary:
		return fmt.Sprintf("more than %d distinct values", 1<<16)
	}
	return "not applicable"
}
