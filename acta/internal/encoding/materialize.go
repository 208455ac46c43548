package encoding

import (
	"encoding/binary"
	"fmt"
)

// Materializers write one candidate's value streams into a candidate arena.
// Each relies on e.prof and e.nums from profileColumn for the same column.

// choice is one value encoding: a transform under plain layout, or a layout.
type choice uint8

// Choices in the reference implementation's tie-breaking order.
const (
	chRaw choice = iota
	chBitPacked
	chBoolRLE
	chFOR
	chDelta
	chDoD
	chBSS
	chConstant
	chDictionary
	chRunLength
	numChoices
)

var choiceNames = [numChoices]string{"raw", "bit packed", "boolean RLE", "frame of reference", "delta", "delta of delta", "byte-stream split", "constant", "dictionary", "run length"}

func (c choice) String() string { return choiceNames[c] }

func (c choice) layout() uint16 {
	switch c {
	case chConstant:
		return LayoutConstant
	case chDictionary:
		return LayoutDictionary
	case chRunLength:
		return LayoutRunLength
	}
	return LayoutPlain
}

// offered is the spec §12 candidate table by class.
func offered(class Class, c choice) bool {
	switch class {
	case ClassBool:
		return c == chRaw || c == chConstant || c == chBitPacked || c == chBoolRLE
	case ClassSigned, ClassUnsigned:
		return c == chRaw || c == chConstant || c == chFOR || c == chDelta || c == chDoD ||
			c == chDictionary || c == chRunLength || c == chBitPacked
	case ClassFloat, ClassFixed:
		return c == chRaw || c == chConstant || c == chDictionary || c == chRunLength || c == chBSS
	case ClassVar:
		return c == chRaw || c == chConstant || c == chDictionary || c == chRunLength
	}
	return false
}

// applies reports whether c can describe the profiled values.
func (p *profile) applies(c choice) bool {
	if p.n == 0 {
		return false
	}
	switch c {
	case chConstant:
		return p.runs == 1
	case chBitPacked:
		return p.bpOK
	case chDelta:
		return p.deltaOK
	case chDoD:
		return p.dodOK
	case chDictionary:
		return p.dictOK
	}
	return true
}

// estimate returns the transformed lengths of c's value streams (spec §9
// exactly; no codec), and how many streams there are.
func (e *Encoder) estimate(col column, c choice) (lens [3]int, n int) {
	p := &e.prof
	w := col.width
	isVar := col.class == ClassVar
	switch c {
	case chRaw:
		switch col.class {
		case ClassBool:
			return [3]int{bitmapLen(p.n)}, 1
		case ClassVar:
			return [3]int{col.vals.Offsets[p.n] - col.vals.Offsets[0], 4 * p.n}, 2
		}
		return [3]int{p.n * w}, 1
	case chConstant:
		switch col.class {
		case ClassBool:
			return [3]int{1}, 1
		case ClassVar:
			return [3]int{len(value(col, 0)), 4}, 2
		}
		return [3]int{w}, 1
	case chBitPacked:
		if col.class == ClassBool {
			if p.trues == 0 {
				return [3]int{1}, 1
			}
			return [3]int{packedLen(p.n, 1)}, 1
		}
		return [3]int{packedLen(p.n, p.bpWidth)}, 1
	case chBoolRLE:
		return [3]int{4 + bitmapLen(p.runs) + packedLen(p.runs, bitWidth(uint64(p.maxRun)))}, 1
	case chFOR:
		return [3]int{w + packedLen(p.n, p.forWidth)}, 1
	case chDelta:
		if p.n == 1 {
			return [3]int{w}, 1
		}
		return [3]int{w + packedLen(p.n-1, p.deltaW)}, 1
	case chDoD:
		return [3]int{w + 8 + packedLen(p.n-2, p.dodW)}, 1
	case chBSS:
		return [3]int{p.n * w}, 1
	case chDictionary:
		idx := packedLen(p.n, bitWidth(uint64(p.dictN-1)))
		if isVar {
			return [3]int{p.dictBytes, 4 * p.dictN, idx}, 3
		}
		return [3]int{p.dictBytes, idx}, 2
	case chRunLength:
		rl := packedLen(p.runs, bitWidth(uint64(p.maxRun)))
		if isVar {
			return [3]int{p.runBytes, 4 * p.runs, rl}, 3
		}
		return [3]int{p.runs * w, rl}, 2
	}
	return
}

// packWidth is the bit width a materialized packed stream uses: the
// minimal width, or under e.aligned that width rounded up to whole bytes.
// Any width at least the minimal one is valid (§9.2 does not require the
// minimum), and byte-aligned values let Zstandard's entropy coder see them,
// which on jittered timestamps beats the tighter packing.
func (e *Encoder) packWidth(w int) int {
	if e.aligned {
		return (w + 7) &^ 7
	}
	return w
}

// alignedMinValues is the smallest block for which the byte-aligned variant
// is tried: below it a Zstandard Huffman table costs more than the
// alignment can win back (measured: no 120- or 1024-row block chose it).
const alignedMinValues = 2048

// packsInts reports whether c has a packed integer stream whose width
// alignment could change.
func (e *Encoder) packsInts(c choice, class Class) bool {
	p := &e.prof
	if p.n < alignedMinValues {
		return false
	}
	switch c {
	case chBitPacked:
		return class != ClassBool && p.bpWidth%8 != 0
	case chFOR:
		return p.forWidth%8 != 0
	case chDelta:
		return p.n > 1 && p.deltaW%8 != 0
	case chDoD:
		return p.n > 2 && p.dodW%8 != 0
	case chDictionary:
		return bitWidth(uint64(p.dictN-1))%8 != 0
	case chRunLength:
		return bitWidth(uint64(p.maxRun))%8 != 0
	}
	return false
}

// materialize writes c's value streams (validity excluded) into cand.
func (e *Encoder) materialize(cand *candidate, col column, c choice) error {
	p := &e.prof
	v := col.vals
	w := col.width
	start := len(cand.buf)
	switch c {
	case chRaw:
		putRaw(cand, col.class, v)
	case chConstant:
		switch col.class {
		case ClassBool:
			cand.buf = appendBools(cand.buf, v.Bools[:1])
			cand.add(KindValues, TransformRaw, 1, start)
		case ClassVar:
			cand.buf = append(cand.buf, value(col, 0)...)
			cand.add(KindValues, TransformRaw, 1, start)
			start = len(cand.buf)
			cand.buf = binary.LittleEndian.AppendUint32(cand.buf, uint32(len(value(col, 0))))
			cand.add(KindLengths, TransformRaw, 1, start)
		default:
			cand.buf = append(cand.buf, v.Fixed[:w]...)
			cand.add(KindValues, TransformRaw, 1, start)
		}
	case chBitPacked:
		if col.class == ClassBool {
			width := 0
			if p.trues > 0 {
				width = 1
			}
			bw := newBitWriter(cand.buf, width)
			for _, b := range v.Bools {
				if b {
					bw.put(1)
				} else {
					bw.put(0)
				}
			}
			cand.buf = bw.finish()
		} else {
			bw := newBitWriter(cand.buf, e.packWidth(p.bpWidth))
			for _, x := range e.nums[:p.n] {
				bw.put(x)
			}
			cand.buf = bw.finish()
		}
		cand.add(KindValues, TransformBitPacked, p.n, start)
	case chBoolRLE:
		cand.buf = appendBoolRLE(cand.buf, v.Bools, p.runs, p.maxRun)
		cand.add(KindValues, TransformBoolRLE, p.n, start)
	case chFOR:
		var base [8]byte
		binary.LittleEndian.PutUint64(base[:], p.minBits)
		cand.buf = append(cand.buf, base[:w]...)
		bw := newBitWriter(cand.buf, e.packWidth(p.forWidth))
		for _, x := range e.nums[:p.n] {
			bw.put(x - p.minBits)
		}
		cand.buf = bw.finish()
		cand.add(KindValues, TransformFrameOfRef, p.n, start)
	case chDelta:
		nums := e.nums[:p.n]
		cand.buf = append(cand.buf, v.Fixed[:w]...)
		if p.n > 1 {
			bw := newBitWriter(cand.buf, e.packWidth(p.deltaW))
			for i := 1; i < len(nums); i++ {
				bw.put(zigzag(int64(nums[i] - nums[i-1])))
			}
			cand.buf = bw.finish()
		}
		cand.add(KindValues, TransformDelta, p.n, start)
	case chDoD:
		nums := e.nums[:p.n]
		cand.buf = append(cand.buf, v.Fixed[:w]...)
		cand.buf = binary.LittleEndian.AppendUint64(cand.buf, uint64(p.firstDiff))
		bw := newBitWriter(cand.buf, e.packWidth(p.dodW))
		prev := p.firstDiff
		for i := 2; i < len(nums); i++ {
			d := int64(nums[i] - nums[i-1])
			bw.put(zigzag(d - prev))
			prev = d
		}
		cand.buf = bw.finish()
		cand.add(KindValues, TransformDeltaOfDelta, p.n, start)
	case chBSS:
		cand.buf = appendSplit(cand.buf, v.Fixed, w)
		cand.add(KindValues, TransformByteStreamSplit, p.n, start)
	case chDictionary:
		for _, i := range e.dictFirst {
			cand.buf = append(cand.buf, value(col, int(i))...)
		}
		cand.add(KindDictionaryValues, TransformRaw, p.dictN, start)
		if col.class == ClassVar {
			start = len(cand.buf)
			for _, i := range e.dictFirst {
				cand.buf = binary.LittleEndian.AppendUint32(cand.buf, uint32(len(value(col, int(i)))))
			}
			cand.add(KindDictionaryLengths, TransformRaw, p.dictN, start)
		}
		start = len(cand.buf)
		bw := newBitWriter(cand.buf, e.packWidth(bitWidth(uint64(p.dictN-1))))
		for _, k := range e.idx[:p.n] {
			bw.put(uint64(k))
		}
		cand.buf = bw.finish()
		cand.add(KindIndices, TransformBitPacked, p.n, start)
	case chRunLength:
		e.materializeRuns(cand, col)
	default:
		return fmt.Errorf("encoding: no materializer for %v", c)
	}
	return nil
}

// materializeRuns writes layout 3: each run's value, then bit-packed run
// lengths (and run-value lengths for variable width, kind 3).
func (e *Encoder) materializeRuns(cand *candidate, col column) {
	p := &e.prof
	n := p.n
	same := func(i, j int) bool {
		if keyed(col.class, col.width) {
			return e.nums[i] == e.nums[j]
		}
		return string(value(col, i)) == string(value(col, j))
	}
	start := len(cand.buf)
	for i := 0; i < n; i++ {
		if i == 0 || !same(i, i-1) {
			cand.buf = append(cand.buf, value(col, i)...)
		}
	}
	cand.add(KindRunValues, TransformRaw, p.runs, start)
	if col.class == ClassVar {
		start = len(cand.buf)
		for i := 0; i < n; i++ {
			if i == 0 || !same(i, i-1) {
				cand.buf = binary.LittleEndian.AppendUint32(cand.buf, uint32(len(value(col, i))))
			}
		}
		cand.add(KindLengths, TransformRaw, p.runs, start)
	}
	start = len(cand.buf)
	bw := newBitWriter(cand.buf, e.packWidth(bitWidth(uint64(p.maxRun))))
	run := 1
	for i := 1; i < n; i++ {
		if same(i, i-1) {
			run++
			continue
		}
		bw.put(uint64(run))
		run = 1
	}
	bw.put(uint64(run))
	cand.buf = bw.finish()
	cand.add(KindRunLengths, TransformBitPacked, p.runs, start)
}

// appendSplit appends the byte-stream split (§9.6) of canonical values.
func appendSplit(dst, src []byte, width int) []byte {
	n := len(src) / width
	start := len(dst)
	dst = append(dst, make([]byte, len(src))...)
	out := dst[start:]
	for i := 0; i < n; i++ {
		v := src[i*width : i*width+width]
		for k, x := range v {
			out[k*n+i] = x
		}
	}
	return dst
}

// appendBoolRLE appends §9.7: uint32 run count, run value bits, bit-packed
// run lengths.
func appendBoolRLE(dst []byte, bs []bool, runs, maxRun int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(runs))
	if runs == 0 {
		return dst
	}
	var cur byte
	k := 0
	for i, b := range bs {
		if i > 0 && b == bs[i-1] {
			continue
		}
		if b {
			cur |= 1 << (uint(k) & 7)
		}
		if k&7 == 7 {
			dst = append(dst, cur)
			cur = 0
		}
		k++
	}
	if k&7 != 0 {
		dst = append(dst, cur)
	}
	bw := newBitWriter(dst, bitWidth(uint64(maxRun)))
	run := 1
	for i := 1; i < len(bs); i++ {
		if bs[i] == bs[i-1] {
			run++
			continue
		}
		bw.put(uint64(run))
		run = 1
	}
	bw.put(uint64(run))
	return bw.finish()
}
