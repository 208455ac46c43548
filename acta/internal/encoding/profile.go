package encoding

import (
	"bytes"
	"encoding/binary"
	"math"
)

// The profile is the one pass over a column's dense values that every
// candidate estimate and materialization shares (spec §12: min/max, runs,
// monotonicity, delta widths, a capped distinct-value table).

// dictLimit caps the distinct-value table, which bounds its memory and keeps
// indices narrow; past it, or past half the values, a dictionary cannot win.
const dictLimit = 4096

type profile struct {
	n      int
	runs   int // number of maximal runs of equal values
	maxRun int

	// Integer classes only.
	bpOK      bool // every value is nonnegative (§9.2)
	bpWidth   int
	forWidth  int // width of max-min (§9.3); always representable
	minBits   uint64
	deltaOK   bool // every adjacent difference fits int64 (§9.4)
	deltaW    int
	dodOK     bool // n >= 2 and every difference of deltas fits int64 (§9.5)
	dodW      int
	firstDiff int64

	// Dictionary (all but bool): entries in first-appearance order.
	dictOK    bool
	dictN     int
	dictBytes int // total bytes of the entries
	runBytes  int // var only: bytes of each run's first value

	trues int // bool only
}

// keyed reports whether values of this class and width are profiled as
// uint64 keys (every fixed width up to 8 bytes).
func keyed(class Class, width int) bool {
	return class != ClassBool && class != ClassVar && width <= 8
}

// loadKeys fills e.nums with one uint64 per value: sign-extended for signed
// integers, zero-extended bits otherwise.
func (e *Encoder) loadKeys(col column) []uint64 {
	n, w := col.vals.N, col.width
	if cap(e.nums) < n {
		e.nums = make([]uint64, n)
	}
	nums := e.nums[:n]
	b := col.vals.Fixed
	signed := col.class == ClassSigned
	switch w {
	case 8:
		for i := range nums {
			nums[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	case 4:
		for i := range nums {
			x := binary.LittleEndian.Uint32(b[4*i:])
			if signed {
				nums[i] = uint64(int64(int32(x)))
			} else {
				nums[i] = uint64(x)
			}
		}
	default:
		r := newIntRange(signed, w)
		for i := range nums {
			nums[i] = r.loadN(b[i*w:], w)
		}
	}
	return nums
}

// loadN reads w bytes (any w up to 8), sign-extending when r is signed and
// w is a canonical integer width.
func (r intRange) loadN(b []byte, w int) uint64 {
	if w == 1 || w == 2 || w == 4 || w == 8 {
		rr := r
		rr.width = w
		return rr.load(b)
	}
	var buf [8]byte
	copy(buf[:], b[:w])
	return binary.LittleEndian.Uint64(buf[:])
}

// profileColumn builds e.prof for col's dense values (N >= 1).
func (e *Encoder) profileColumn(col column) {
	p := &e.prof
	*p = profile{n: col.vals.N}
	switch {
	case col.class == ClassBool:
		e.profileBools(col.vals.Bools)
	case keyed(col.class, col.width):
		nums := e.loadKeys(col)
		e.profileRunsKeys(nums)
		if col.class == ClassSigned || col.class == ClassUnsigned {
			e.profileInts(nums, col.class == ClassSigned)
		}
		e.dictKeys(nums, col.width, e.dictBound(col))
	default:
		e.profileBytes(col)
	}
}

func (e *Encoder) profileBools(bs []bool) {
	p := &e.prof
	p.bpOK = true // booleans always bit pack, at width 1 (0 if all false)
	run := 0
	for i, b := range bs {
		if b {
			p.trues++
		}
		if i > 0 && b != bs[i-1] {
			p.runs++
			p.maxRun = max(p.maxRun, run)
			run = 0
		}
		run++
	}
	p.runs++
	p.maxRun = max(p.maxRun, run)
}

func (e *Encoder) profileRunsKeys(nums []uint64) {
	p := &e.prof
	run := 0
	for i, v := range nums {
		if i > 0 && v != nums[i-1] {
			p.runs++
			p.maxRun = max(p.maxRun, run)
			run = 0
		}
		run++
	}
	p.runs++
	p.maxRun = max(p.maxRun, run)
}

// profileInts records the §9.2-§9.5 widths and their validity.
func (e *Encoder) profileInts(nums []uint64, signed bool) {
	p := &e.prof
	n := len(nums)
	var zd, zdd uint64 // OR of zigzags: its width is the widest one's
	p.deltaOK, p.dodOK = true, n >= 2
	var prevD int64
	if signed {
		mn, mx := int64(nums[0]), int64(nums[0])
		for i := 1; i < n; i++ {
			v, q := int64(nums[i]), int64(nums[i-1])
			mn, mx = min(mn, v), max(mx, v)
			d := v - q
			if (v^q)&(v^d) < 0 { // signed overflow
				p.deltaOK, p.dodOK = false, false
				continue
			}
			zd |= zigzag(d)
			if i >= 2 && p.dodOK {
				dd := d - prevD
				if (d^prevD)&(d^dd) < 0 {
					p.dodOK = false
				}
				zdd |= zigzag(dd)
			}
			if i == 1 {
				p.firstDiff = d
			}
			prevD = d
		}
		p.minBits = uint64(mn)
		p.forWidth = bitWidth(uint64(mx) - uint64(mn))
		p.bpOK = mn >= 0
		p.bpWidth = bitWidth(uint64(mx))
	} else {
		mn, mx := nums[0], nums[0]
		for i := 1; i < n; i++ {
			v, q := nums[i], nums[i-1]
			mn, mx = min(mn, v), max(mx, v)
			if v >= q && v-q > math.MaxInt64 || v < q && q-v > 1<<63 {
				p.deltaOK, p.dodOK = false, false
				continue
			}
			d := int64(v - q)
			zd |= zigzag(d)
			if i >= 2 && p.dodOK {
				dd := d - prevD
				if (d^prevD)&(d^dd) < 0 {
					p.dodOK = false
				}
				zdd |= zigzag(dd)
			}
			if i == 1 {
				p.firstDiff = d
			}
			prevD = d
		}
		p.minBits = mn
		p.forWidth = bitWidth(mx - mn)
		p.bpOK = true
		p.bpWidth = bitWidth(mx)
	}
	p.deltaW = bitWidth(zd)
	p.dodW = bitWidth(zdd)
}

// dictKeys builds the capped dictionary of uint64 keys into e.dictFirst
// (first position of each entry) and e.idx (entry per value). It gives up
// as soon as even the entries seen so far make a dictionary cost more than
// bound (see dictBound): entries only grow, so that dictionary could never
// be chosen, and timestamps stop after a few hundred values instead of
// filling the table.
func (e *Encoder) dictKeys(nums []uint64, width int, bound int) {
	p := &e.prof
	limit := e.dictCap(len(nums))
	t := &e.ktab
	t.reset(limit)
	e.dictFirst = e.dictFirst[:0]
	if cap(e.idx) < len(nums) {
		e.idx = make([]uint16, 0, len(nums))
	}
	idx := e.idx[:len(nums)]
	n := len(nums)
	nextCheck := 1
	for i, v := range nums {
		k, ok := t.lookup(v, uint16(len(e.dictFirst)))
		if !ok {
			d := len(e.dictFirst)
			if d == limit {
				return
			}
			if d == nextCheck {
				// Lower bound of the dictionary's stored cost with d+1 entries.
				lb := 2*streamDescriptorSize + (d+1)*width + packedLen(n, bitWidth(uint64(d)))
				if lb > bound {
					return
				}
				nextCheck = d*2 + 1
			}
			e.dictFirst = append(e.dictFirst, int32(i))
		}
		idx[i] = k
	}
	e.idx = idx
	p.dictOK = true
	p.dictN = len(e.dictFirst)
	p.dictBytes = p.dictN * width
}

// keyTable is an open-addressing uint64 -> uint16 table reset by bumping a
// generation, so reuse costs nothing per block.
type keyTable struct {
	keys []uint64
	vals []uint16
	gens []uint32
	gen  uint32
	mask uint64
	shft uint
}

func (t *keyTable) reset(limit int) {
	size := 16
	for size < 2*limit {
		size <<= 1
	}
	if len(t.keys) < size {
		t.keys = make([]uint64, size)
		t.vals = make([]uint16, size)
		t.gens = make([]uint32, size)
		t.gen = 0
	}
	t.gen++
	if t.gen == 0 { // wrapped: stale generations could alias
		clear(t.gens)
		t.gen = 1
	}
	t.mask = uint64(size - 1)
	t.shft = uint(64 - bitWidth(uint64(size-1)))
}

// lookup returns the value of k, inserting next when k is absent (ok false).
func (t *keyTable) lookup(k uint64, next uint16) (uint16, bool) {
	h := (k * 0x9e3779b97f4a7c15) >> t.shft
	for {
		if t.gens[h] != t.gen {
			t.gens[h] = t.gen
			t.keys[h] = k
			t.vals[h] = next
			return next, false
		}
		if t.keys[h] == k {
			return t.vals[h], true
		}
		h = (h + 1) & t.mask
	}
}

// value returns dense value i's bytes for fixed-width and var classes.
func value(col column, i int) []byte {
	if col.class == ClassVar {
		return col.vals.Data[col.vals.Offsets[i]:col.vals.Offsets[i+1]]
	}
	w := col.width
	return col.vals.Fixed[i*w : i*w+w]
}

// profileBytes profiles values compared as byte strings (var and wide
// fixed_binary): runs and the capped dictionary.
func (e *Encoder) profileBytes(col column) {
	p := &e.prof
	n := col.vals.N
	run := 0
	for i := 0; i < n; i++ {
		if i > 0 && !bytes.Equal(value(col, i), value(col, i-1)) {
			p.runs++
			p.maxRun = max(p.maxRun, run)
			run = 0
		}
		if run == 0 {
			p.runBytes += len(value(col, i))
		}
		run++
	}
	p.runs++
	p.maxRun = max(p.maxRun, run)

	if e.smap == nil {
		e.smap = make(map[string]uint16, 256)
	}
	clear(e.smap)
	e.dictFirst = e.dictFirst[:0]
	e.idx = e.idx[:0]
	limit := e.dictCap(n)
	total := 0
	for i := 0; i < n; i++ {
		v := value(col, i)
		k, ok := e.smap[string(v)]
		if !ok {
			if len(e.dictFirst) == limit || total+len(v) > 1<<20 {
				return
			}
			k = uint16(len(e.dictFirst))
			e.smap[string(v)] = k
			e.dictFirst = append(e.dictFirst, int32(i))
			total += len(v)
		}
		e.idx = append(e.idx, k)
	}
	p.dictOK = true
	p.dictN = len(e.dictFirst)
	p.dictBytes = total
}

// dictCap is how many distinct values the profile tracks before giving up
// on a dictionary: adaptive stops at dictLimit or half the values (past
// that, a dictionary cannot beat frame of reference or raw); a fixed
// dictionary policy takes up to the index type's range.
func (e *Encoder) dictCap(n int) int {
	if e.opts.Policy == PolicyFixed {
		return min(n, 1<<16)
	}
	return min(dictLimit, n/2+1)
}
